package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/upstream"
)

// TestStatusExitsOnFailedSource: junction status prints the table, with
// when the last error happened, and exits 3 naming the failed sources;
// with none failed it exits 0; -json does the same.
func TestStatusExitsOnFailedSource(t *testing.T) {
	t.Parallel()
	at := time.Now().Add(-42 * time.Second)
	st := daemon.Status{Version: "dev", Sources: []daemon.SourceStatus{
		{Name: "good", Kind: "upstream", State: "connected", Tools: 3},
		{Name: "bad", Kind: "upstream", State: "failed", Error: "server exited: exit status 3", ErrorAt: &at},
	}}
	serve := func(st daemon.Status) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(st)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	url := serve(st)
	out, errOut, code := run(t, nil, "status", "-url", url)
	if code != 3 || !strings.Contains(errOut, "1 source(s) failed: bad") || !strings.Contains(out, "42s ago: server exited: exit status 3") {
		t.Errorf("status with a failed source: exit %d, stdout %q, stderr %q; want exit 3, the table with the error's age, and the failed source named", code, out, errOut)
	}
	for _, flags := range [][]string{{"-json"}, {"-o", "json"}, {"-output", "json"}} {
		out, _, code := run(t, nil, append([]string{"status", "-url", url}, flags...)...)
		var got daemon.Status
		if err := json.Unmarshal([]byte(out), &got); code != 3 || err != nil || len(got.Sources) != 2 {
			t.Errorf("status %v with a failed source: exit %d, %v, stdout %q; want exit 3 and the status as JSON", flags, code, err, out)
		}
	}
	st.Sources = st.Sources[:1]
	if out, errOut, code := run(t, nil, "status", "-url", serve(st)); code != 0 || !strings.Contains(out, "good") {
		t.Errorf("status with every source up: exit %d, stdout %q, stderr %q; want 0", code, out, errOut)
	}
	for n, want := range map[int]string{1: "junction dev: 1 tool served", 3: "junction dev: 3 tools served"} {
		st.Tools = n
		if out, _, _ := run(t, nil, "status", "-url", serve(st)); !strings.Contains(out, want) {
			t.Errorf("status with %d tools: stdout %q; want %q", n, out, want)
		}
	}
}

// TestStatusDefaultNoHub: with no -url and no config, status asks
// 127.0.0.1:7331, and when nothing answers there says so and how to start
// a hub or point at another. Skipped when something listens on the port.
func TestStatusDefaultNoHub(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:7331")
	if err != nil {
		t.Skipf("skipping: 127.0.0.1:7331 is busy (%v)", err)
	}
	ln.Close()
	_, errOut, code := run(t, nil, "status")
	if code != 1 || !strings.Contains(errOut, "no hub answers at http://127.0.0.1:7331") || !strings.Contains(errOut, "-url") {
		t.Errorf("status with nothing on the default address: exit %d, stderr %q", code, errOut)
	}
}

// TestStatusSandbox: a SANDBOX column when a source runs sandboxed, and
// each source's sandbox events under its row, oldest first, with their
// age; control characters in an event are not printed raw.
func TestStatusSandbox(t *testing.T) {
	t.Parallel()
	now := time.Now()
	st := daemon.Status{Version: "dev", Sources: []daemon.SourceStatus{
		{Name: "core", Kind: "pack", State: "ready", Tools: 9},
		{Name: "files", Kind: "upstream", State: "connected", Tools: 3, Sandbox: "strict", SandboxEvents: []upstream.SandboxEvent{
			{At: now.Add(-90 * time.Second), Text: "proxy: denied CONNECT evil.example:443"},
			{At: now.Add(-5 * time.Second), Text: "limit: memory\x1b[2J"},
		}},
		{Name: "web", Kind: "upstream", State: "connected", Tools: 1, Sandbox: "off"},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	out, errOut, code := run(t, nil, "status", "-url", srv.URL)
	lines := strings.Split(out, "\n")
	if code != 0 || len(lines) < 7 {
		t.Fatalf("status: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}
	col := strings.Index(lines[1], "SANDBOX")
	if !strings.HasPrefix(lines[1], "SOURCE") || col < 0 {
		t.Fatalf("status: no SANDBOX column:\n%s", out)
	}
	for i, want := range []struct{ prefix, level string }{{"core", "-"}, {"files", "strict"}, {"", ""}, {"", ""}, {"web", "off"}} {
		l := lines[2+i]
		if want.prefix == "" {
			continue
		}
		if !strings.HasPrefix(l, want.prefix+" ") || !strings.HasPrefix(l[col:], want.level+" ") {
			t.Errorf("status line %q: want source %s with sandbox %s under the column\n%s", l, want.prefix, want.level, out)
		}
	}
	if !strings.HasPrefix(lines[4], "  sandbox ") || !strings.Contains(lines[4], "(1m3") || !strings.HasSuffix(lines[4], "s ago): proxy: denied CONNECT evil.example:443") ||
		!strings.HasPrefix(lines[5], "  sandbox ") || !strings.HasSuffix(lines[5], "s ago): limit: memory [2J") {
		t.Errorf("status: want the events under files, oldest first:\n%s", out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("status printed an escape character: %q", out)
	}
	// JSON carries the level and the events as the hub sent them.
	out, _, _ = run(t, nil, "status", "-url", srv.URL, "-o", "json")
	var got daemon.Status
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Sources[1].Sandbox != "strict" || len(got.Sources[1].SandboxEvents) != 2 {
		t.Errorf("status -o json: %v, %+v", err, got)
	}

	// Without a sandboxed source there is no SANDBOX column.
	st.Sources = st.Sources[:1]
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv2.Close)
	if out, _, _ := run(t, nil, "status", "-url", srv2.URL); strings.Contains(out, "SANDBOX") {
		t.Errorf("status without sandboxed sources shows a SANDBOX column:\n%s", out)
	}
}
