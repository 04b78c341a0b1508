package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/wire"
)

// roundRobin sends each request to the next of servers, as a load
// balancer without sticky sessions does.
type roundRobin struct {
	servers []*url.URL
	next    atomic.Int64
	seen    []atomic.Int64
}

func (rr *roundRobin) RoundTrip(r *http.Request) (*http.Response, error) {
	i := int(rr.next.Add(1)) % len(rr.servers)
	rr.seen[i].Add(1)
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = rr.servers[i].Scheme, rr.servers[i].Host
	r.Host = rr.servers[i].Host
	return http.DefaultTransport.RoundTrip(r)
}

func newKey(t testing.TB) []byte {
	key := make([]byte, SessionKeySize)
	rand.Read(key)
	return key
}

// TestPortableSessions: a 2025-11-25 client's requests alternate between
// three replicas sharing a session key; every call is answered, on raw
// and ordinary paths, and the id the client holds is the sealed token.
func TestPortableSessions(t *testing.T) {
	key := newKey(t)
	rr := &roundRobin{seen: make([]atomic.Int64, 3)}
	for range 3 {
		f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
		srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPDual, SessionKey: key})
		u, _ := url.Parse(srv.URL)
		rr.servers = append(rr.servers, u)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: rr.servers[0].String(), HTTPClient: &http.Client{Transport: rr}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if !strings.HasPrefix(cs.ID(), sessionTokenPrefix) {
		t.Errorf("session id %q, want a sealed token", cs.ID())
	}
	for i := range 12 {
		msg := fmt.Sprintf("m%d", i)
		if got := callText(t, cs, "s__echo", msg); got != msg {
			t.Errorf("call %d = %q", i, got)
		}
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatalf("ListTools %d: %v", i, err)
		}
	}
	for i := range rr.seen {
		if rr.seen[i].Load() < 5 {
			t.Errorf("replica %d saw %d requests; the client did not go round", i, rr.seen[i].Load())
		}
	}
}

// sessionPOST posts a JSON-RPC body as a 2025-11-25 host on session sid.
func sessionPOST(tb testing.TB, url, sid, body string) *http.Response {
	tb.Helper()
	req, _ := http.NewRequestWithContext(tb.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	return resp
}

// TestPortableSessionsRefuse: a token under another key, an altered
// one, a plain id and one of the format before are all 404, as an
// unknown session.
func TestPortableSessionsRefuse(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	srvKey := newKey(t)
	srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateful, SessionKey: srvKey})
	other, _ := newSessionSealer(newKey(t))
	foreign, _ := other.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, Issued: time.Now().Unix()})
	old, _ := other.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, Issued: time.Now().Add(-25 * time.Hour).Unix()})
	// The same session under the same key, with the format before j2.
	s1, _ := newSessionSealer(srvKey)
	current, _ := s1.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, Issued: time.Now().Unix()})
	formerFormat := "j1." + strings.TrimPrefix(current, sessionTokenPrefix)
	for _, sid := range []string{foreign, foreign[:len(foreign)-2] + "AA", "plain-id", old, formerFormat} {
		resp := sessionPOST(t, srv.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body.Error.Message, "session not found") {
			t.Errorf("session id %.20q: HTTP %d %q, want 404 session not found", sid, resp.StatusCode, body.Error.Message)
		}
	}
	s, _ := newSessionSealer(newKey(t))
	if _, err := s.open(old, time.Now()); err == nil {
		t.Error("a token under another key opened")
	}
}

// TestPortableSessionsUser: a session initialized by one user is not
// taken up for another (go-sdk's check for its own sessions, kept when a
// replica takes a session up).
func TestPortableSessionsUser(t *testing.T) {
	key := newKey(t)
	s, _ := newSessionSealer(key)
	tok, _ := s.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, Issued: time.Now().Unix(), User: "alice"})
	front, _ := newSessionFront(http.NotFoundHandler(), nil, key, nil, 0, 0, new(atomic.Int64), nil)
	var got error
	// The bearer token is the user id.
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, got = front.acquire(r, tok)
	}))
	for _, user := range []string{"mallory", "alice"} {
		r, _ := http.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		r.Header.Set("Authorization", "Bearer "+user)
		got = nil
		h.ServeHTTP(httptest.NewRecorder(), r)
		refused := got != nil && strings.Contains(got.Error(), "another user")
		if refused != (user != "alice") {
			t.Errorf("user %s: taking alice's session up: %v", user, got)
		}
	}
}

// TestPortableSessionsSetUpOnce: requests that arrive together with a
// session id this replica does not know make one local session, not one
// each.
func TestPortableSessionsSetUpOnce(t *testing.T) {
	key := newKey(t)
	v := viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw})
	plain := New(v, nil).HTTPHandler(&HTTPOptions{Mode: HTTPStateful})
	var inits atomic.Int32
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if initializeParams(r) != nil {
			inits.Add(1)
		}
		plain.ServeHTTP(w, r)
	})
	front, err := newSessionFront(counting, noSessions{}, key, nil, time.Minute, 0, new(atomic.Int64), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(front)
	t.Cleanup(srv.Close)
	s, _ := newSessionSealer(key)
	tok, _ := s.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25", ClientInfo: &mcp.Implementation{Name: "t", Version: "1"}}, Issued: time.Now().Unix()})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			resp := sessionPOST(t, srv.URL, tok, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`, i))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != tok {
				t.Errorf("call %d: HTTP %d, session id %.20q", i, resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
			}
		})
	}
	wg.Wait()
	if n := inits.Load(); n != 1 {
		t.Errorf("%d local sessions set up for one session id, want 1", n)
	}
}

// noSessions is a sessionTable with no session in it: the front of a
// handler whose sessions another front keeps.
type noSessions struct{}

func (noSessions) Host(string) junction.Host                        { return nil }
func (noSessions) HostState(junction.Host) (mcp.LoggingLevel, bool) { return "", false }
func (noSessions) Close(string)                                     {}

// BenchmarkSessionToken is the cost a portable session adds: sealing a
// token at initialize, and opening one on a replica that has no session
// for it yet. It reports the token's size.
func BenchmarkSessionToken(b *testing.B) {
	s, _ := newSessionSealer(newKey(b))
	st := &sealedSession{Init: &mcp.InitializeParams{
		ProtocolVersion: "2025-11-25",
		ClientInfo:      &mcp.Implementation{Name: "claude-code", Version: "2.1.0"},
		Capabilities:    &mcp.ClientCapabilities{Roots: mcp.RootCapabilities{ListChanged: true}, Sampling: &mcp.SamplingCapabilities{}, Elicitation: &mcp.ElicitationCapabilities{}},
	}, Issued: time.Now().Unix()}
	tok, _ := s.seal(st)
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			s.seal(st)
		}
		b.ReportMetric(float64(len(tok)), "token-bytes")
	})
	b.Run("open", func(b *testing.B) {
		now := time.Now()
		for b.Loop() {
			if _, err := s.open(tok, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSessionAdopt is the cost, once per session and replica, of
// setting up a go-sdk session from a token (an initialize and an
// initialized through the handler), and then of each request on it.
func BenchmarkSessionAdopt(b *testing.B) {
	key := newKey(b)
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	srv := startHTTPFast(b, f, HTTPOptions{Mode: HTTPStateful, SessionKey: key})
	s, _ := newSessionSealer(key)
	post := func(sid, body string) int {
		resp := sessionPOST(b, srv.URL, sid, body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`
	b.Run("first-request", func(b *testing.B) {
		for b.Loop() {
			tok, _ := s.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25", ClientInfo: &mcp.Implementation{Name: "b", Version: "1"}}, Issued: time.Now().Unix()})
			if code := post(tok, call); code != http.StatusOK {
				b.Fatalf("HTTP %d", code)
			}
		}
	})
	b.Run("next-request", func(b *testing.B) {
		tok, _ := s.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25", ClientInfo: &mcp.Implementation{Name: "b", Version: "1"}}, Issued: time.Now().Unix()})
		post(tok, call)
		for b.Loop() {
			if code := post(tok, call); code != http.StatusOK {
				b.Fatalf("HTTP %d", code)
			}
		}
	})
}

// count returns how many sessions f keeps, parked or not.
func (f *sessionFront) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.entries)
}

// liveSessions returns the Hosts of the plane's live connections: in
// these tests, its HTTP sessions.
func liveSessions(p *Plane) []junction.Host {
	var out []junction.Host
	p.stdioHosts.Range(func(k, _ any) bool {
		out = append(out, k.(*stdioHost))
		return true
	})
	return out
}

// TestSessionParks: a quiet session is parked (its connection closed)
// and made anew, under the same id and with the log level it had set,
// when its host comes back, for a list and for a call;
// requests that come together wake it once; a parked session can be
// deleted. What a woken session is like is looked at while one of its
// calls is held in flight, so that it cannot park again meanwhile.
func TestSessionParks(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	f := &rawFake{tools: []string{"echo", "hold"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		if name == "hold" {
			started <- struct{}{}
			<-release
		}
		return echoRaw(ctx, name, params)
	}}
	v := viewOf(t, f)
	plane := New(v, nil)
	h := plane.HTTPHandler(&HTTPOptions{Mode: HTTPStateful, SessionPark: 20 * time.Millisecond})
	inits := &h.(*sessionFront).table.(*planeSessions).opened // sessions made
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sid := rawSession(t, srv.URL)
	resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("setLevel: %s", resp.Status)
	}
	parked := func() bool { return plane.ParkedSessions() == 1 && len(liveSessions(plane)) == 0 }
	post := func(body, want string) {
		t.Helper()
		resp := rawPost(t, srv.URL, sid, body)
		b, _ := io.ReadAll(resp.Body)
		// The host never sees the new go-sdk session's id.
		if got := resp.Header.Get("Mcp-Session-Id"); resp.StatusCode != http.StatusOK || (got != "" && got != sid) || !strings.Contains(string(b), want) {
			t.Errorf("%s after parking: %s, session %q\n%s", body, resp.Status, got, b)
		}
	}

	// go-sdk's path, then the raw path.
	waitFor(t, "the session to park", parked)
	post(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, `"name":"s__echo"`)
	waitFor(t, "the session to park", parked)
	post(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"back"}}}`, `"text":"back"`)

	// Woken by a call held in flight: one go-sdk session, not under the
	// host's id, with the host's log level.
	waitFor(t, "the session to park", parked)
	done := make(chan struct{})
	go func() {
		defer close(done)
		post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s__hold","arguments":{"msg":"held"}}}`, `"text":"held"`)
	}()
	<-started
	if live := liveSessions(plane); len(live) != 1 || plane.ParkedSessions() != 0 {
		t.Errorf("with a call in flight: %d go-sdk sessions, %d parked; want 1, 0", len(live), plane.ParkedSessions())
	} else {
		if live[0].ID() == sid {
			t.Error("the go-sdk session has the host's id; it was not made anew")
		}
		if level, _ := v.HostState(live[0]); level != "debug" {
			t.Errorf("log level %q after waking, want debug", level)
		}
		// The host declared no roots; made anew, it still has none.
		if p := live[0].InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 != nil {
			t.Errorf("capabilities after waking: %+v; want the host's, without roots", p)
		}
	}
	close(release)
	<-done

	// Requests that come together to a parked session wake it once.
	waitFor(t, "the session to park", parked)
	before := inits.Load()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			resp := rawPost(t, srv.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`, 10+i))
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("call %d together: %s", i, resp.Status)
			}
		})
	}
	wg.Wait()
	if n := inits.Load() - before; n != 1 {
		t.Errorf("8 requests together made %d go-sdk sessions, want 1", n)
	}
	if f.slow.Load() != 0 {
		t.Errorf("%d calls went to go-sdk, not the raw path", f.slow.Load())
	}

	waitFor(t, "the session to park", parked)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, srv.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	if dresp.StatusCode != http.StatusNoContent || plane.ParkedSessions() != 0 || len(liveSessions(plane)) != 0 {
		t.Errorf("DELETE of a parked session: %s, %d parked, %d live; want 204, 0, 0", dresp.Status, plane.ParkedSessions(), len(liveSessions(plane)))
	}
	resp = rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("after DELETE: %s, want 404", resp.Status)
	}
}

// TestSessionNotParked: a session with a request in flight (here its GET
// stream) or holding a resource subscription is not parked (until it
// unsubscribes); sessions that
// get no POST for the session timeout end, parked or not, with a GET
// stream open or not (as go-sdk's own timeout ends them).
func TestSessionNotParked(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, uris: []string{"test://r"}, raw: echoRaw}
	v := viewOf(t, f)
	plane := New(v, nil)
	h := plane.HTTPHandler(&HTTPOptions{Mode: HTTPStateful, SessionPark: 20 * time.Millisecond, SessionTimeout: 3 * time.Second})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	front := h.(*sessionFront)

	streaming := rawSession(t, srv.URL)
	get, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	get.Header.Set("Mcp-Session-Id", streaming)
	get.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	get.Header.Set("Accept", "text/event-stream")
	gresp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer gresp.Body.Close()
	if gresp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", gresp.Status)
	}

	subscribed := rawSession(t, srv.URL)
	resp := rawPost(t, srv.URL, subscribed, `{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://r"}}`)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"result"`) {
		t.Fatalf("subscribe: %s %s", resp.Status, b)
	}

	quiet := rawSession(t, srv.URL)
	// (A session counts as parked a moment before its go-sdk session is
	// closed.)
	waitFor(t, "the quiet session to park", func() bool { return plane.ParkedSessions() == 1 && len(liveSessions(plane)) == 2 })
	for _, ss := range liveSessions(plane) {
		if ss.ID() != streaming && ss.ID() != subscribed {
			t.Errorf("live go-sdk session %q: only the streaming and the subscribed ones should be", ss.ID())
		}
	}
	if n := len(liveSessions(plane)); n != 2 {
		t.Errorf("%d live go-sdk sessions, want 2", n)
	}
	// Without its subscription, the session parks too.
	resp = rawPost(t, srv.URL, subscribed, `{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"test://r"}}`)
	io.Copy(io.Discard, resp.Body)
	waitFor(t, "the unsubscribed session to park", func() bool { return plane.ParkedSessions() == 2 })

	waitFor(t, "quiet sessions to end", func() bool {
		return front.count() == 0 && plane.ParkedSessions() == 0 && len(liveSessions(plane)) == 0
	})
	if plane.ParkedSessions() != 0 || len(liveSessions(plane)) != 0 {
		t.Errorf("after the timeout: %d parked, %d live; want none", plane.ParkedSessions(), len(liveSessions(plane)))
	}
	for _, sid := range []string{quiet, subscribed, streaming} {
		resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("session %s after the timeout: %s, want 404", sid, resp.Status)
		}
	}
}

// bearerUser names each request's user after its bearer token, as a
// front that authenticates does (junction.WithUser).
func bearerUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(junction.WithUser(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))))
	})
}

// TestSessionUser: a session is bound to the user who initialized it,
// named by go-sdk's auth middleware or by junction.WithUser: another user's
// requests for it (a call, a DELETE, a GET stream), live or parked, are
// refused with 403 and change nothing; its own user's are served.
func TestSessionUser(t *testing.T) {
	// The bearer token is the user id.
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	for name, wrap := range map[string]func(http.Handler) http.Handler{"go-sdk": auth.RequireBearerToken(verify, nil), "WithUser": bearerUser} {
		t.Run(name, func(t *testing.T) {
			f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
			plane := New(viewOf(t, f), nil)
			srv := httptest.NewServer(wrap(plane.HTTPHandler(&HTTPOptions{Mode: HTTPStateful, SessionPark: 100 * time.Millisecond})))
			t.Cleanup(srv.Close)
			do := func(method, user, sid, body string) *http.Response {
				req := rawRequest(t, srv.URL, sid, body)
				req.Method = method
				return doAs(t, req, user)
			}
			resp := do(http.MethodPost, "alice", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			sid := resp.Header.Get("Mcp-Session-Id")
			if resp.StatusCode != http.StatusOK || sid == "" {
				t.Fatalf("initialize: %s, session %q", resp.Status, sid)
			}
			do(http.MethodPost, "alice", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`
			for _, state := range []string{"live", "parked"} {
				if state == "parked" {
					waitFor(t, "the session to park", func() bool { return plane.ParkedSessions() == 1 })
				}
				if resp := do(http.MethodPost, "mallory", sid, call); resp.StatusCode != http.StatusForbidden {
					t.Errorf("another user's call on a %s session: %s, want 403", state, resp.Status)
				}
				if resp := do(http.MethodDelete, "mallory", sid, ""); resp.StatusCode != http.StatusForbidden {
					t.Errorf("another user's DELETE of a %s session: %s, want 403", state, resp.Status)
				}
				if resp := do(http.MethodGet, "mallory", sid, ""); resp.StatusCode != http.StatusForbidden {
					t.Errorf("another user's GET stream of a %s session: %s, want 403", state, resp.Status)
				}
				if resp := do(http.MethodPost, "", sid, call); resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("a call with no user on a %s session: %s, want 403 (or go-sdk's 401)", state, resp.Status)
				}
				if state == "parked" && plane.ParkedSessions() != 1 {
					t.Errorf("another user's requests woke the parked session")
				}
				if resp := do(http.MethodPost, "alice", sid, call); resp.StatusCode != http.StatusOK {
					t.Errorf("its own user's call on a %s session: %s, want 200", state, resp.Status)
				}
			}
		})
	}
}

// TestPeekBodyLong: a body too long to be an initialize is not decoded,
// and is left whole for the handler to read (and refuse past its bound).
func TestPeekBodyLong(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"` + strings.Repeat("a", maxPeek) + `"}}`
	for _, length := range []int64{int64(len(body)), -1} { // with a Content-Length, and chunked
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.ContentLength = length
		if initializeParams(r) != nil {
			t.Errorf("length %d: a %d-byte body was decoded", length, len(body))
		}
		got, err := io.ReadAll(r.Body)
		if err != nil || string(got) != body {
			t.Errorf("length %d: body read back %d bytes (%v), want all %d", length, len(got), err, len(body))
		}
	}
}

// doAs sends req with user as its bearer token, and returns the
// response, its body read and closed.
func doAs(t *testing.T, req *http.Request, user string) *http.Response {
	t.Helper()
	req.Header.Set("Authorization", "Bearer "+user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestSSESessionUser: a legacy SSE session is bound to the user who opened
// its stream: another user's POST to it gets 403 and reaches nothing; its
// own user's is taken (202), and its answer comes on the stream.
func TestSSESessionUser(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	plane := New(viewOf(t, f), nil)
	sse := plane.SSEHandler(DefaultMaxRequestBytes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		sse.ServeHTTP(w, r.WithContext(junction.WithUser(r.Context(), user)))
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/sse", nil)
	req.Header.Set("Authorization", "Bearer alice")
	endpoint, events, _ := openLegacy(t, req)
	post := func(user, body string) int {
		return doAs(t, rawRequest(t, srv.URL+endpoint, "", body), user).StatusCode
	}
	if code := post("mallory", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}`); code != http.StatusForbidden {
		t.Errorf("another user's POST to the session: %d, want 403", code)
	}
	if code := post("alice", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"a","version":"1"}}}`); code != http.StatusAccepted {
		t.Errorf("its own user's POST: %d, want 202", code)
	}
	// The stream carries alice's answer (id 2), and nothing for mallory's.
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			if !strings.Contains(data, `"id":2`) {
				t.Errorf("first message on the stream: %s, want the answer to id 2", data)
			}
			break
		}
	}
}

func TestEventFields(t *testing.T) {
	for _, c := range []struct{ event, name, data string }{
		{"data: {}\n\n", "message", "{}"},
		{"event: endpoint\ndata:/x\n\n", "endpoint", "/x"},
		{": comment\nid: 7\ndata: a\r\ndata:  b\ndata\n\n", "message", "a\n b\n"},
	} {
		name, data := wire.EventFields([]byte(c.event))
		if name != c.name || string(data) != c.data {
			t.Errorf("wire.EventFields(%q) = %q, %q; want %q, %q", c.event, name, data, c.name, c.data)
		}
	}
}

// TestSealedSessionKeepsRoots: a portable session's token keeps whether
// its host declared roots, so that the session made from it on another
// replica says the same (go-sdk's ClientCapabilities type writes roots
// whether or not the host declared them).
func TestSealedSessionKeepsRoots(t *testing.T) {
	s, err := newSessionSealer(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		params    string
		roots     bool
		listening bool
	}{
		{`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`, false, false},
		{`{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}`, true, false},
		{`{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{}},"clientInfo":{"name":"t","version":"1"}}`, true, true},
	} {
		p, ok := decodeInitialize([]byte(tc.params))
		if !ok {
			t.Fatalf("decodeInitialize(%s) failed", tc.params)
		}
		tok, err := s.seal(&sealedSession{Init: p, Issued: time.Now().Unix()})
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.open(tok, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		// What a woken session is made from, read as go-sdk reads it.
		b, err := junction.MarshalInitializeParams(st.Init)
		if err != nil {
			t.Fatal(err)
		}
		back, _ := decodeInitialize(b)
		if got := back.Capabilities.RootsV2 != nil; got != tc.roots {
			t.Errorf("%s through a token: roots %v (%s); want %v", tc.params, got, b, tc.roots)
		} else if tc.roots && back.Capabilities.RootsV2.ListChanged != tc.listening {
			t.Errorf("%s through a token: listChanged %v; want %v", tc.params, back.Capabilities.RootsV2.ListChanged, tc.listening)
		}
	}
}

// parkTable is a sessionTable whose every session is live, initialized
// and holds no subscription: what the front parks.
type parkTable struct{}

func (parkTable) Host(string) junction.Host                        { return initedHost{} }
func (parkTable) HostState(junction.Host) (mcp.LoggingLevel, bool) { return "", false }
func (parkTable) Close(string)                                     {}

// initedHost is a Host that has initialized; nothing else of it is used.
type initedHost struct{ junction.Host }

func (initedHost) InitializeParams() *mcp.InitializeParams {
	return &mcp.InitializeParams{ProtocolVersion: "2025-11-25", ClientInfo: &mcp.Implementation{Name: "h", Version: "1"}}
}

// TestParkingGivesMemoryBack: once sweeps have parked giveBackAfter
// sessions or more, one hands the memory they held back to the system
// (freeOSMemory), at most once per park delay; sessions parked within a
// park delay of the last give-back are given back by the first sweep
// after it, even one that parks none.
func TestParkingGivesMemoryBack(t *testing.T) {
	calls := 0
	old := freeOSMemory
	freeOSMemory = func() { calls++ }
	t.Cleanup(func() { freeOSMemory = old })
	var parked atomic.Int64
	front, err := newSessionFront(http.NotFoundHandler(), parkTable{}, nil, nil, 0, time.Hour, &parked, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		front.mu.Lock()
		if front.sweeping != nil {
			front.sweeping.Stop()
		}
		front.mu.Unlock()
	})
	// quiet adds n sessions quiet for longer than the park delay.
	quiet := func(n int) {
		front.mu.Lock()
		defer front.mu.Unlock()
		for range n {
			k := fmt.Sprint(len(front.entries))
			e := &frontSession{id: "s" + k, local: "l" + k}
			e.used.Store(time.Now().Add(-2 * time.Hour).UnixNano())
			front.putLocked(e)
		}
	}
	for i, step := range []struct {
		sessions  int
		longAgo   bool // the last give-back was more than a park delay ago
		wantCalls int
	}{
		{giveBackAfter - 1, false, 0}, // too few yet
		{1, false, 1},                 // enough, over two sweeps
		{giveBackAfter, false, 1},     // within the park delay of the last
		{0, true, 2},                  // those, a park delay later
		{0, true, 2},                  // none parked since
		{giveBackAfter, true, 3},
	} {
		if step.longAgo {
			front.mu.Lock()
			front.freed = time.Now().Add(-2 * time.Hour)
			front.mu.Unlock()
		}
		before := parked.Load()
		quiet(step.sessions)
		front.sweep()
		if got := parked.Load() - before; got != int64(step.sessions) {
			t.Fatalf("step %d: the sweep parked %d sessions, want %d", i, got, step.sessions)
		}
		if calls != step.wantCalls {
			t.Errorf("step %d: memory given back %d times, want %d", i, calls, step.wantCalls)
		}
	}
}
