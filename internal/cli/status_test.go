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
