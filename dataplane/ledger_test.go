package dataplane

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// replicaOf is one replica of a hub serving echo, sharing key and
// ledger (nil: its own, in memory) with the others.
func replicaOf(t *testing.T, key []byte, ledger SessionLedger, timeout time.Duration) http.Handler {
	t.Helper()
	v := viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw})
	return New(v, nil).HTTPHandler(&HTTPOptions{Mode: HTTPStateful, SessionKey: key, SessionLedger: ledger, SessionTimeout: timeout, SessionPark: -1})
}

// serve sends a request to h as a 2025-11-25 host on session sid (a
// DELETE when body is ""), and returns the response.
func serve(t *testing.T, h http.Handler, sid, body string) *http.Response {
	t.Helper()
	var r *http.Request
	if body == "" {
		r = httptest.NewRequestWithContext(t.Context(), http.MethodDelete, "/mcp", nil)
	} else {
		r = rawRequest(t, "/mcp", sid, body)
	}
	r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sid != "" {
		r.Header.Set("Mcp-Session-Id", sid)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// initSession initializes a session on h and returns its id.
func initSession(t *testing.T, h http.Handler) string {
	t.Helper()
	resp := serve(t, h, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(sid, sessionTokenPrefix) {
		t.Fatalf("initialize: HTTP %d, session %.20q", resp.StatusCode, sid)
	}
	serve(t, h, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// wantStatus checks that a tools/call on session sid through h gets
// HTTP want.
func wantStatus(t *testing.T, h http.Handler, name, sid string, want int) {
	t.Helper()
	resp := serve(t, h, sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Errorf("%s: HTTP %d, want %d\n%s", name, resp.StatusCode, want, body)
	}
}

// TestPortableSessionDeleted: after a host deletes its portable session
// (204), the id gets 404 wherever it goes: on the replica that served
// the DELETE, on one that held the session too, on one that never saw
// it, and on a single replica with a key and no ledger given. A second
// DELETE is 404.
func TestPortableSessionDeleted(t *testing.T) {
	key := newKey(t)
	t.Run("replicas", func(t *testing.T) {
		ledger := NewMemoryLedger(0) // as a store shares one
		a, b, c := replicaOf(t, key, ledger, 0), replicaOf(t, key, ledger, 0), replicaOf(t, key, ledger, 0)
		sid := initSession(t, a)
		wantStatus(t, b, "taken up on b", sid, http.StatusOK)
		if resp := serve(t, a, sid, ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: HTTP %d, want 204", resp.StatusCode)
		}
		wantStatus(t, a, "on the replica that deleted it", sid, http.StatusNotFound)
		wantStatus(t, b, "on a replica that held it", sid, http.StatusNotFound)
		wantStatus(t, c, "on a replica that never saw it", sid, http.StatusNotFound)
		if resp := serve(t, b, sid, ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("second DELETE: HTTP %d, want 404", resp.StatusCode)
		}
		// A DELETE on a replica that does not hold the session ends it
		// without setting it up there.
		sid = initSession(t, a)
		if resp := serve(t, c, sid, ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE on a replica that does not hold it: HTTP %d, want 204", resp.StatusCode)
		}
		wantStatus(t, a, "on the replica that held it, deleted through another", sid, http.StatusNotFound)
	})
	t.Run("one replica", func(t *testing.T) {
		h := replicaOf(t, key, nil, 0)
		sid := initSession(t, h)
		if resp := serve(t, h, sid, ""); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: HTTP %d, want 204", resp.StatusCode)
		}
		wantStatus(t, h, "after DELETE", sid, http.StatusNotFound)
	})
}

// heldLookup is a ledger whose next Lookup, once armed, tells looked
// and waits for release before it answers.
type heldLookup struct {
	SessionLedger
	armed           atomic.Bool
	looked, release chan struct{}
}

func (l *heldLookup) Lookup(ctx context.Context, id string, expires time.Time) (SessionRecord, error) {
	rec, err := l.SessionLedger.Lookup(ctx, id, expires)
	if l.armed.CompareAndSwap(true, false) {
		close(l.looked)
		<-l.release
	}
	return rec, err
}

// TestPortableSessionDeletedWhileTakenUp: a session deleted on one
// replica while another is taking it up (the ledger said it was good, a
// moment before) is not taken up.
func TestPortableSessionDeletedWhileTakenUp(t *testing.T) {
	key := newKey(t)
	ledger := &heldLookup{SessionLedger: NewMemoryLedger(0), looked: make(chan struct{}), release: make(chan struct{})}
	a, b := replicaOf(t, key, ledger, 0), replicaOf(t, key, ledger, 0)
	sid := initSession(t, a)
	ledger.armed.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantStatus(t, b, "taken up while deleted", sid, http.StatusNotFound)
	}()
	<-ledger.looked
	if resp := serve(t, a, sid, ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: HTTP %d, want 204", resp.StatusCode)
	}
	close(ledger.release)
	<-done
	wantStatus(t, b, "after", sid, http.StatusNotFound)
}

// TestPortableSessionTimeout: a portable session quiet for longer than
// the session timeout (and the grace for the ledger's delay) is not
// taken up again, on the replica that ended it nor on another; one that
// another replica kept busy is taken up.
func TestPortableSessionTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 4 * time.Second // taken up until 6s of quiet
		key := newKey(t)
		ledger := NewMemoryLedger(0)
		a, b := replicaOf(t, key, ledger, timeout), replicaOf(t, key, ledger, timeout)

		quiet := initSession(t, a)
		busy := initSession(t, a)
		wantStatus(t, b, "busy, taken up on b", busy, http.StatusOK)
		// busy is used on a every second for 10s; b ends it for quiet
		// after 4s.
		for range 10 {
			time.Sleep(time.Second)
			wantStatus(t, a, "busy, on a", busy, http.StatusOK)
		}
		wantStatus(t, b, "busy on a, taken up again on b", busy, http.StatusOK)
		wantStatus(t, a, "quiet for 10s, on the replica that served it", quiet, http.StatusNotFound)
		wantStatus(t, b, "quiet for 10s, on another replica", quiet, http.StatusNotFound)

		// One replica, its own ledger.
		h := replicaOf(t, key, nil, timeout)
		sid := initSession(t, h)
		time.Sleep(3 * time.Second)
		wantStatus(t, h, "quiet for 3s", sid, http.StatusOK)
		time.Sleep(7 * time.Second)
		wantStatus(t, h, "quiet for 7s", sid, http.StatusNotFound)
	})
}

// TestMemoryLedgerBound: the ledger drops expired records, then live
// sessions' records least recently used, then the tombstones that expire
// soonest; a session whose tombstone was dropped stays ended.
func TestMemoryLedgerBound(t *testing.T) {
	ctx := t.Context()
	l := NewMemoryLedger(8).(*memoryLedger)
	now := time.Unix(1_000_000, 0)
	l.now = func() time.Time { return now }
	day := SessionTokenMaxAge
	// 2 expired, 3 live, 4 ended: 9 > 8.
	for i := range 2 {
		l.Touch(ctx, []SessionUse{{ID: fmt.Sprint("expired", i), At: now.Add(-day), Expires: now.Add(-time.Second)}})
	}
	for i := range 3 {
		l.Touch(ctx, []SessionUse{{ID: fmt.Sprint("live", i), At: now.Add(time.Duration(i) * time.Second), Expires: now.Add(day)}})
	}
	for i := range 3 {
		l.End(ctx, fmt.Sprint("ended", i), now.Add(time.Duration(i+1)*time.Hour))
	}
	if len(l.recs) != 8 {
		t.Fatalf("%d records, want 8", len(l.recs))
	}
	l.End(ctx, "ended3", now.Add(4*time.Hour))
	if _, ok := l.recs["expired0"]; ok || len(l.recs) != 7 {
		t.Errorf("after the 9th record: %d records (expired0 kept: %v), want the 7 not expired", len(l.recs), ok)
	}
	// 9 again: down to 7, dropping the live sessions least recently used.
	l.End(ctx, "ended4", now.Add(5*time.Hour))
	l.End(ctx, "ended5", now.Add(6*time.Hour))
	for i, kept := range []bool{false, false, true} {
		if _, ok := l.recs[fmt.Sprint("live", i)]; ok != kept {
			t.Errorf("live%d kept: %v, want %v", i, ok, kept)
		}
	}
	// Then the last live one, and the tombstones expiring soonest; the
	// sessions expiring no later than those stay ended.
	for i := 6; i < 10; i++ {
		l.End(ctx, fmt.Sprint("ended", i), now.Add(time.Duration(i+1)*time.Hour))
	}
	if len(l.recs) != 7 {
		t.Fatalf("%d records, want 7", len(l.recs))
	}
	for _, id := range []string{"live2", "ended0", "ended1", "ended2"} {
		if _, ok := l.recs[id]; ok {
			t.Errorf("%s kept", id)
		}
	}
	for _, c := range []struct {
		id      string
		expires time.Duration
		ended   bool
	}{
		{"ended0", time.Hour, true},        // dropped, under the horizon
		{"ended2", 3 * time.Hour, true},    // dropped, at the horizon
		{"ended3", 4 * time.Hour, true},    // kept
		{"live0", day, false},              // dropped, past the horizon
		{"unknown", time.Hour, true},       // never recorded, under the horizon
		{"unknown", 10 * time.Hour, false}, // never recorded, past it
	} {
		rec, _ := l.Lookup(ctx, c.id, now.Add(c.expires))
		if rec.Ended != c.ended {
			t.Errorf("Lookup(%s, expiring in %s).Ended = %v, want %v", c.id, c.expires, rec.Ended, c.ended)
		}
	}
	if already, _ := l.End(ctx, "ended0", now.Add(time.Hour)); !already {
		t.Error("End of a session whose tombstone was dropped: not ended already")
	}
	// Watch is told of each new end, once.
	var told []string
	stop := l.Watch(func(id string) { told = append(told, id) })
	l.End(ctx, "new", now.Add(day))
	l.End(ctx, "new", now.Add(day))
	stop()
	l.End(ctx, "after", now.Add(day))
	if fmt.Sprint(told) != "[new]" {
		t.Errorf("Watch saw %v, want [new]", told)
	}
}
