package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamURLSecretsHidden: upstream URLs whose query carries a key
// (api_key=${QKEY}, expanded from the environment) are shown everywhere
// with the value hidden: serve's log, GET /status, the status page,
// "junction status" and "junction config check". The upstream that
// answers still gets the real key.
func TestUpstreamURLSecretsHidden(t *testing.T) {
	t.Parallel()
	const (
		liveKey = "live-Q-s3cret-4711"
		goneKey = "gone-Q-s3cret-0815"
		token   = "redact-token"
	)
	// An upstream that wants its key in the query.
	server := mcp.NewServer(&mcp.Implementation{Name: "keyed", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api_key") != liveKey {
			http.Error(w, "unauthorized: wrong api_key", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		for ss := range server.Sessions() {
			ss.Close()
		}
		live.Close()
	})
	// And one that cannot be reached: its URL ends up in the error.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneAddr := ln.Addr().String()
	ln.Close()

	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`servers:
  live:
    url: %s/mcp?api_key=${QKEY}&region=eu
  gone:
    url: http://%s/mcp?api_key=${GONE_KEY}
`, live.URL, goneAddr))
	env := []string{"QKEY=" + liveKey, "GONE_KEY=" + goneKey}
	secrets := []string{liveKey, goneKey}
	noSecret := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows the key %q:\n%s", what, s, text)
			}
		}
	}

	p := startServerEnv(t, env, "-no-default-packs", "-config", cfg, "-token", token)
	waitFor(t, "live connected and gone failed with an error", 30*time.Second, func() bool {
		st := getStatus(t, p.URL, token)
		liveState, _ := st.source("live")
		goneState, _ := st.source("gone")
		return liveState == "connected" && goneState == "failed"
	})
	base := strings.TrimSuffix(p.URL, "/mcp")

	status := httpDo(t, http.MethodGet, base+"/status", token, nil)
	noSecret("GET /status", status.body)
	if !strings.Contains(status.body, goneAddr+"/mcp?api_key=xxxxx") {
		t.Errorf("GET /status does not show the failed upstream's URL with api_key=xxxxx:\n%s", status.body)
	}
	page := httpDo(t, http.MethodGet, base+"/", token, nil, "Accept", "text/html")
	noSecret("the status page", page.body)
	if page.status != http.StatusOK || !strings.Contains(page.body, "api_key=xxxxx") {
		t.Errorf("the status page: HTTP %d, want 200 and the error with api_key=xxxxx:\n%s", page.status, page.body)
	}
	out, errOut, code := runJunction(t, []string{"JUNCTION_TOKEN=" + token}, "status", "-url", base)
	noSecret("junction status", out+errOut)
	if code != 3 || !strings.Contains(out, "api_key=xxxxx") {
		t.Errorf("junction status: exit %d (want 3: gone failed), want the error with api_key=xxxxx:\n%s%s", code, out, errOut)
	}
	out, errOut, code = runJunction(t, env, "config", "check", "-o", "json", cfg)
	noSecret("junction config check", out+errOut)
	if code != 0 || !strings.Contains(out, `api_key=xxxxx\u0026region=xxxxx`) {
		t.Errorf("junction config check: exit %d, want the live URL with its query names kept:\n%s%s", code, out, errOut)
	}
	noSecret("serve's log", p.Stderr())
	if !strings.Contains(p.Stderr(), "api_key=xxxxx") {
		t.Errorf("serve's log does not show the failed upstream's URL with api_key=xxxxx:\n%s", p.Stderr())
	}
}
