//go:build linux

package e2e

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// getCode returns the status of a GET of u (with the bearer token, if
// any) with no Accept header, as curl sends.
func getCode(t *testing.T, u, token string) int {
	t.Helper()
	hc := httpClient(token)
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAdminListener: -admin's address rules through the binary, and the
// config file's http.admin: a stdio hub whose page, /status, /metrics,
// /healthz and /readyz are on the admin address, and whose /mcp is not.
func TestAdminListener(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-admin", "0.0.0.0:0", "-insecure-no-auth"}, "-insecure-no-auth is only allowed on a loopback address"},
		{[]string{"serve", "-admin", "nonsense"}, `-admin "nonsense"`},
		{[]string{"serve", "-admin", "127.0.0.1:70000"}, "port must be a number from 0 to 65535"},
	} {
		_, stderr, code := runJunction(t, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("junction %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}

	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), "packs: [core]\nhttp:\n  admin: 127.0.0.1:0\n  tokens: [e2e-admin-token]\n")
	const prefix = "junction: status page on "
	stderr := newLineWatcher(prefix)
	host := connectStdioWatched(t, newClient(nil), stderr, "-config", cfg)
	var base string
	select {
	case line := <-stderr.found:
		base = strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, prefix)), "/")
	case <-time.After(startTimeout):
		t.Fatalf("no %q line on stderr:\n%s", prefix, stderr.String())
	}
	if _, err := host.CallTool(t.Context(), &mcp.CallToolParams{Name: "junction_version"}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/status": 401, "/metrics": 401, "/": 401} {
		if code := getCode(t, base+path, ""); code != want {
			t.Errorf("GET %s without the token = %d, want %d", path, code, want)
		}
	}
	for path, want := range map[string]int{"/status": 200, "/metrics": 200, "/": 200, "/mcp": 404} {
		if code := getCode(t, base+path, "e2e-admin-token"); code != want {
			t.Errorf("GET %s with the token = %d, want %d", path, code, want)
		}
	}
	hc := httpClient("e2e-admin-token")
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		RecentCalls []struct{ Tool, Outcome string } `json:"recent_calls"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.RecentCalls) != 1 || st.RecentCalls[0].Tool != "junction_version" || st.RecentCalls[0].Outcome != "ok" {
		t.Errorf("/status recent_calls = %+v (%v), want the host's one call over stdio", st.RecentCalls, err)
	}
	resp, err = hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`junction_mcp_requests_total{front="stdio",method="tools/call"} 1`, "junction_build_info{"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics on -admin lacks %s", want)
		}
	}
}
