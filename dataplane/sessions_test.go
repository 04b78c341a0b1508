package dataplane

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
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
// one, and a plain id are all 404, as an unknown session.
func TestPortableSessionsRefuse(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateful, SessionKey: newKey(t)})
	other, _ := newSessionSealer(newKey(t))
	foreign, _ := other.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, Issued: time.Now().Unix()})
	old, _ := other.seal(&sealedSession{Init: &mcp.InitializeParams{ProtocolVersion: "2025-11-25"}, Issued: time.Now().Add(-25 * time.Hour).Unix()})
	for _, sid := range []string{foreign, foreign[:len(foreign)-2] + "AA", "plain-id", old} {
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
	ps, _ := newPortableSessions(http.NotFoundHandler(), key, 0)
	var got error
	// The bearer token is the user id.
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, got = ps.localID(r, tok)
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
	plain := New(viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil).HTTPHandler(&HTTPOptions{Mode: HTTPStateful})
	var inits atomic.Int32
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if initializeParams(r) != nil {
			inits.Add(1)
		}
		plain.ServeHTTP(w, r)
	})
	ps, err := newPortableSessions(counting, key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ps)
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
