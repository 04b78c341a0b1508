package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
)

// TestUpstreamOAuthLogin: a hub whose upstream wants an OAuth login says
// so in /status at once (it never waits for a person); "junction auth
// login" (headless against the test authorization server) stores a
// token; the running hub picks it up at its next attempt, without a
// restart, and serves the upstream's tools.
func TestUpstreamOAuthLogin(t *testing.T) {
	srv := oauthtest.New()
	// Closed after the hub is stopped (cleanups run last first): Close
	// waits for the hub's open streams.
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	t.Setenv("JUNCTION_OAUTH_DIR", filepath.Join(dir, "oauth"))
	t.Setenv("JUNCTION_OAUTH_KEYCHAIN", "0")
	config := filepath.Join(dir, "junction.yaml")
	if err := os.WriteFile(config, []byte("servers:\n  docs:\n    url: "+srv.Resource()+"\n    auth: oauth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "oauth-e2e-token"
	hub := startServer(t, "-token", token, "-no-default-packs", "-config", config)

	waitFor(t, "docs to report the login it needs", 30*time.Second, func() bool {
		for _, s := range getStatus(t, hub.URL, token).Sources {
			if s.Name == "docs" && s.State == "failed" && strings.Contains(s.Error, `junction auth login docs`) {
				return true
			}
		}
		return false
	})
	if reg, auths, _ := srv.Counts(); reg != 0 || auths != 0 {
		t.Errorf("the hub registered %d times and authorized %d times without a login", reg, auths)
	}

	out, errOut, code := runJunction(t, []string{"JUNCTION_OAUTH_HEADLESS=1"}, "auth", "login", "-config", config, "docs")
	if code != 0 || !strings.Contains(out, "logged in to docs") {
		t.Fatalf("auth login: exit %d\n%s%s", code, out, errOut)
	}
	waitFor(t, "docs to connect with the stored token", 40*time.Second, func() bool {
		st, _ := getStatus(t, hub.URL, token).source("docs")
		return st == "connected"
	})
	out, errOut, code = runJunction(t, nil, "tools", "call", "docs__echo", "-args", `{"text":"through the hub"}`, "-url", hub.URL, "-token", token)
	if code != 0 || !strings.Contains(out, "through the hub") {
		t.Fatalf("call through the hub: exit %d\n%s%s", code, out, errOut)
	}
	// Revoked: the session ends at the next request, /status says which
	// login is needed, and a call fails naming it long before its
	// timeout (60 s): the hub does not wait for a login either.
	srv.RevokeAll()
	runJunction(t, nil, "tools", "call", "docs__echo", "-args", `{"text":"x"}`, "-url", hub.URL, "-token", token)
	waitFor(t, "docs to report the login it needs again", 30*time.Second, func() bool {
		for _, s := range getStatus(t, hub.URL, token).Sources {
			if s.Name == "docs" && s.State == "failed" && strings.Contains(s.Error, `junction auth login docs`) {
				return true
			}
		}
		return false
	})
	start := time.Now()
	out, errOut, code = runJunction(t, nil, "tools", "call", "docs__echo", "-args", `{"text":"x"}`, "-url", hub.URL, "-token", token)
	if code == 0 || !strings.Contains(out+errOut, "junction auth login docs") || time.Since(start) > 30*time.Second {
		t.Errorf("call after revocation: exit %d after %v\n%s%s", code, time.Since(start), out, errOut)
	}
	if strings.Contains(hub.Stderr(), "at-") {
		t.Errorf("an access token is in the hub's log:\n%s", hub.Stderr())
	}
}
