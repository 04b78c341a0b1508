//go:build unix

package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pgtest"
)

// TestPortableSessionsEnd runs two "junction serve -http" replicas
// sharing a real PostgreSQL (so session ids are portable tokens) with a
// 3s session timeout, and checks that a session ends for good, on both:
//   - after its host's DELETE (204), the id gets 404 on the replica that
//     served it, on the other (which held it too, and is told), and on
//     the other for a session it never saw;
//   - a session left quiet past the timeout gets 404 when used again, on
//     either replica, while one kept busy on one replica is still taken
//     up by the other.
func TestPortableSessionsEnd(t *testing.T) {
	pg := pgtest.Start(t)
	const token = "session-end-test-token"
	path := filepath.Join(t.TempDir(), "junction.yaml")
	writeAtomic(t, path, scaleoutConfig(pg.URL, ""))
	a := startServer(t, "-config", path, "-token", token, "-session-timeout", "3s")
	b := startServer(t, "-config", path, "-token", token, "-session-timeout", "3s")

	open := func(t *testing.T, p *serveProc) string {
		t.Helper()
		r := httpDo(t, http.MethodPost, p.URL, token, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
		if r.status != http.StatusOK || !strings.HasPrefix(r.session, "j2.") {
			t.Fatalf("initialize: HTTP %d, session %.20q: %s", r.status, r.session, r.body)
		}
		if r := httpDo(t, http.MethodPost, p.URL, token, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
			"Mcp-Session-Id", r.session, "Mcp-Protocol-Version", "2025-11-25"); r.status != http.StatusAccepted {
			t.Fatalf("notifications/initialized: HTTP %d: %s", r.status, r.body)
		}
		return r.session
	}
	call := func(t *testing.T, p *serveProc, sid string) httpResult {
		t.Helper()
		return httpDo(t, http.MethodPost, p.URL, token, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"junction_version"}}`),
			"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
	}
	want := func(t *testing.T, what string, p *serveProc, sid string, status int) {
		t.Helper()
		if r := call(t, p, sid); r.status != status {
			t.Errorf("%s: HTTP %d, want %d: %s", what, r.status, status, r.body)
		}
	}
	del := func(t *testing.T, p *serveProc, sid string) {
		t.Helper()
		if r := httpDo(t, http.MethodDelete, p.URL, token, nil, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"); r.status != http.StatusNoContent {
			t.Fatalf("DELETE: HTTP %d, want 204: %s", r.status, r.body)
		}
	}

	t.Run("delete", func(t *testing.T) {
		sid := open(t, a)
		want(t, "taken up by the other replica", b, sid, http.StatusOK)
		del(t, a, sid)
		want(t, "after DELETE, on the replica that served it", a, sid, http.StatusNotFound)
		// b held the session: it is told through the store, at once but
		// not before the 204 (the replica asked later looks it up).
		waitFor(t, "the other replica to refuse the deleted session", 5*time.Second, func() bool {
			return call(t, b, sid).status == http.StatusNotFound
		})
		unseen := open(t, a)
		del(t, a, unseen)
		want(t, "after DELETE, on a replica that never saw it", b, unseen, http.StatusNotFound)
		deletedThroughB := open(t, a)
		del(t, b, deletedThroughB)
		waitFor(t, "the replica that held it to refuse a session deleted through the other", 5*time.Second, func() bool {
			return call(t, a, deletedThroughB).status == http.StatusNotFound
		})
	})
	t.Run("timeout", func(t *testing.T) {
		// The session timeout: quiet is left alone for 8s, busy is used on a
		// every second meanwhile.
		quiet, busy := open(t, a), open(t, a)
		want(t, "busy, taken up by the other replica", b, busy, http.StatusOK)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
			<-tick.C
			want(t, "busy, on its replica", a, busy, http.StatusOK)
		}
		want(t, "busy on one replica, taken up again by the other", b, busy, http.StatusOK)
		want(t, "quiet for 8s (timeout 3s), on the replica that served it", a, quiet, http.StatusNotFound)
		want(t, "quiet for 8s (timeout 3s), on the other replica", b, quiet, http.StatusNotFound)
	})
	if t.Failed() {
		t.Logf("replica a:\n%s\nreplica b:\n%s", a.Stderr(), b.Stderr())
	}
}
