package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestCLIShowsTheServersRefusal: "tools list -token T", where T is an
// access token whose scopes open no profile of an OAuth hub, prints the
// hub's reason (its WWW-Authenticate error_description), not only "the
// server refused the token". The issuer is a JWKS served here; the token
// is signed with its key.
func TestCLIShowsTheServersRefusal(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	}))
	t.Cleanup(idp.Close)
	port := freePort(t)
	audience := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	cfg := writeFile(t, t.TempDir(), "hub.yaml", `packs: [core]
profiles:
  small: {tools: [junction_version]}
http:
  auth:
    mode: oauth
    issuer: `+idp.URL+`
    audience: `+audience+`
    jwks_url: `+idp.URL+`/jwks
    scopes:
      profiles: {"mcp:small": small}
`)
	hub := startServer(t, "-http", fmt.Sprintf("127.0.0.1:%d", port), "-config", cfg)

	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Signed(signer).Claims(map[string]any{"iss": idp.URL, "aud": audience, "sub": "agent",
		"exp": time.Now().Add(5 * time.Minute).Unix(), "scope": "mcp:other"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runJunction(t, nil, "tools", "list", "-url", hub.URL, "-token", token, "-timeout", "20s")
	if code != 1 || !strings.Contains(errOut, "the server refused the token") || !strings.Contains(errOut, "the token's scopes open no profile") {
		t.Errorf("tools list with a token that opens no profile: exit %d, stderr:\n%s\nwant exit 1 and the hub's reason, \"the token's scopes open no profile\"", code, errOut)
	}
}

// TestCLIStaticTokenHubAsksForToken: "tools list -url" without a token,
// against a hub that takes a static token (no OAuth metadata anywhere),
// says to pass -token, not to run "junction auth login" (which would fail
// with the same 401).
func TestCLIStaticTokenHubAsksForToken(t *testing.T) {
	hub := startServer(t, "-token", "s3cret")
	_, errOut, code := runJunction(t, nil, "tools", "list", "-url", hub.URL, "-timeout", "20s")
	if code != 1 || !strings.Contains(errOut, "the server wants a token") || !strings.Contains(errOut, "-token") || strings.Contains(errOut, "auth login") {
		t.Errorf("tools list without a token: exit %d, stderr:\n%s\nwant exit 1, \"the server wants a token\" and -token, and no \"auth login\"", code, errOut)
	}
	// With the token it works: the hint did not break the happy path.
	out, errOut, code := runJunction(t, nil, "tools", "list", "-url", hub.URL, "-token", "s3cret", "-timeout", "20s")
	if code != 0 || !strings.Contains(out, "junction_version") {
		t.Errorf("tools list with the token: exit %d\n%s%s", code, out, errOut)
	}
}

// TestServeBusyPort: serve -http on a port something else listens on
// stops before it builds the hub or prints a token, and says how to
// choose another address.
func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()
	_, errOut, code := runJunction(t, nil, "serve", "-http", addr)
	if code == 0 || !strings.Contains(errOut, "-http "+addr+": the address is in use") || !strings.Contains(errOut, "-http 127.0.0.1:0") {
		t.Errorf("serve on a busy port: exit %d, stderr:\n%s\nwant the address named as in use, and -http 127.0.0.1:0 suggested", code, errOut)
	}
	for _, early := range []string{"no token given", "hub ready", "hub stopped"} {
		if strings.Contains(errOut, early) {
			t.Errorf("serve on a busy port got as far as %q:\n%s", early, errOut)
		}
	}
}

// TestConfigCheckConfigFlagAndPath: "config check" takes -config FILE as
// well as FILE, and warns (exit 0) about a stdio server whose command is
// not on PATH, naming the server and the command.
func TestConfigCheckConfigFlagAndPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "present-mcp"), []byte("#!/bin/sh\n"), 0o755)
	cfg := writeFile(t, dir, "junction.json", `{"mcpServers": {
  "here": {"command": "present-mcp"},
  "gone": {"command": "absent-mcp-server", "args": ["--stdio"]}
}}`)
	env := []string{"PATH=" + bin}
	for _, args := range [][]string{{"config", "check", cfg}, {"config", "check", "-config", cfg}} {
		out, errOut, code := runJunction(t, env, args...)
		if code != 0 || !strings.Contains(out, cfg+": ok") {
			t.Errorf("junction %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
			continue
		}
		if !strings.Contains(out, `server "gone": command "absent-mcp-server" is not on PATH`) {
			t.Errorf("junction %s: no warning about absent-mcp-server:\n%s", strings.Join(args, " "), out)
		}
		if strings.Contains(out, "present-mcp\" is not on PATH") {
			t.Errorf("junction %s: a warning about a command that is on PATH:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestStatusDefaultURL: "junction status" with no -url and no config asks
// the hub at 127.0.0.1:7331, the README's first command's address; without
// the token it says where to find it. Skipped when something else holds
// the port.
func TestStatusDefaultURL(t *testing.T) {
	const addr = "127.0.0.1:7331"
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("skipping: %s is busy (%v)", addr, err)
	}
	ln.Close()
	startServer(t, "-http", addr, "-token", "s3cret")
	out, errOut, code := runJunction(t, []string{"JUNCTION_TOKEN=s3cret"}, "status")
	if code != 0 || !strings.Contains(out, "SOURCE") || !strings.Contains(out, "core") {
		t.Errorf("status with no -url: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = runJunction(t, nil, "status")
	if code != 1 || !strings.Contains(errOut, "give it with -token or JUNCTION_TOKEN") || !strings.Contains(errOut, "no token given") {
		t.Errorf("status with no token: exit %d, stderr:\n%s\nwant where to find the token", code, errOut)
	}
}
