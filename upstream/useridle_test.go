package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// bearerUser is a Config.UserAuth credential: the user's name as a
// bearer token.
type bearerUser string

func (u bearerUser) WrapTransport(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+string(u))
		return next.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fakeTimers stands in for time.AfterFunc in the idle timers of users'
// sessions (ownSessions.afterFunc): the test fires them.
type fakeTimers struct {
	mu  sync.Mutex
	all []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	f       func()
	stopped bool // stopped or fired
}

func (ft *fakeTimers) after(d time.Duration, f func()) func() bool {
	t := &fakeTimer{d: d, f: f}
	ft.mu.Lock()
	ft.all = append(ft.all, t)
	ft.mu.Unlock()
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// live returns the timers set and neither stopped nor fired.
func (ft *fakeTimers) live() []*fakeTimer {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var out []*fakeTimer
	for _, t := range ft.all {
		if !t.stopped {
			out = append(out, t)
		}
	}
	return out
}

// fire runs t's func, as the timer would, even if it was stopped (a
// timer may fire just as it is stopped).
func (ft *fakeTimers) fire(t *fakeTimer) {
	ft.mu.Lock()
	t.stopped = true
	ft.mu.Unlock()
	t.f()
}

// userServer starts a Streamable HTTP MCP server with the tools echo and
// block (which waits for release), and a Server for it with per-user
// credentials.
func userServer(t *testing.T) (up *Server, started chan struct{}, release chan struct{}) {
	t.Helper()
	started, release = make(chan struct{}, 1), make(chan struct{})
	srv := newGoServer(t)
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close) // after the registry's Close (cleanups run last first)
	r, _ := newRegistry(t, nil)
	up = addReady(t, r, "per-user", Config{Transport: TransportStreamableHTTP, URL: ts.URL,
		UserAuth: func(user string) interface {
			WrapTransport(http.RoundTripper) http.RoundTripper
		} {
			return bearerUser(user)
		}})
	return up, started, release
}

func callAs(t *testing.T, up *Server, user, tool string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(junction.WithUser(t.Context(), user), 20*time.Second)
	defer cancel()
	res, err := up.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(`{"who":"` + user + `"}`)}})
	if err != nil {
		t.Fatalf("%s calls %s: %v", user, tool, err)
	}
	return resultText(t, res)
}

// callInBackground makes user's call of tool in a goroutine of its own,
// and sends its text (or its error's) on the channel it returns.
func callInBackground(t *testing.T, up *Server, user, tool string) <-chan string {
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(junction.WithUser(context.Background(), user), 20*time.Second)
		defer cancel()
		res, err := up.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool, Arguments: json.RawMessage(`{}`)}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- resultText(t, res)
	}()
	return done
}

// ownOf returns user's own session's server, or nil.
func ownOf(up *Server, user string) *Server {
	up.mu.Lock()
	defer up.mu.Unlock()
	if o := up.own.m[userKey(user)]; o != nil {
		return o.srv
	}
	return nil
}

// TestUserSessionClosedWhenIdle: a user's own session is closed once it
// has been idle for userIdleTimeout (the timer is the test's), not while
// a call of theirs is in flight nor while they hold a resource
// subscription; a timer stopped by a new request does nothing if it
// fires anyway; another user's session is left alone; the user's next
// call opens a new session, which works.
func TestUserSessionClosedWhenIdle(t *testing.T) {
	t.Parallel()
	up, started, release := userServer(t)
	timers := &fakeTimers{}
	up.mu.Lock()
	up.own.afterFunc = timers.after
	up.mu.Unlock()
	liveTimers := func(n int) []*fakeTimer {
		t.Helper()
		var live []*fakeTimer
		waitFor(t, "idle timers set", func() bool { live = timers.live(); return len(live) == n })
		return live
	}

	if got := callAs(t, up, "alice", "echo"); got != `{"who":"alice"}` {
		t.Fatalf("alice's echo: %q", got)
	}
	aliceTimer := liveTimers(1)[0]
	if aliceTimer.d != userIdleTimeout {
		t.Errorf("idle timer of %v, want userIdleTimeout (%v)", aliceTimer.d, userIdleTimeout)
	}
	aliceFirst := ownOf(up, "alice")
	callAs(t, up, "bob", "echo")
	bobTimer := liveTimers(2)[1]
	if n := up.Snapshot().Own; n != 2 {
		t.Fatalf("own sessions: %d, want 2", n)
	}

	// A call in flight: alice's timer is stopped, and fired late it does
	// nothing.
	done := callInBackground(t, up, "alice", "block")
	<-started
	if live := timers.live(); len(live) != 1 || live[0] != bobTimer {
		t.Fatalf("while alice's call is in flight, %d timers are set, want bob's only", len(live))
	}
	timers.fire(aliceTimer)
	if ownOf(up, "alice") != aliceFirst {
		t.Fatal("alice's session was closed while her call was in flight")
	}
	close(release)
	if got := <-done; got != "released" {
		t.Fatalf("alice's blocking call: %q", got)
	}
	aliceTimer = liveTimers(2)[1]

	// Idle for the timeout: closed; bob's is not; alice's next call
	// opens a new session.
	timers.fire(aliceTimer)
	if ownOf(up, "alice") != nil || ownOf(up, "bob") == nil {
		t.Fatalf("after alice's idle timer: alice's session %v, bob's %v; want none, and bob's", ownOf(up, "alice"), ownOf(up, "bob"))
	}
	if got := callAs(t, up, "alice", "echo"); got != `{"who":"alice"}` {
		t.Fatalf("alice's echo on a new session: %q", got)
	}
	if s := ownOf(up, "alice"); s == nil || s == aliceFirst {
		t.Fatalf("alice's session after the idle one closed: %v, want a new one", s)
	}
	aliceTimer = liveTimers(2)[1]

	// A subscription keeps the session: no timer until it is gone.
	ctx := junction.WithUser(t.Context(), "alice")
	if err := up.Subscribe(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	if live := timers.live(); len(live) != 1 || live[0] != bobTimer {
		t.Fatalf("with alice's subscription, %d timers are set, want bob's only", len(live))
	}
	timers.fire(aliceTimer) // late: nothing
	if ownOf(up, "alice") == nil {
		t.Fatal("alice's session was closed while she holds a subscription")
	}
	if err := up.Unsubscribe(ctx, "test://a"); err != nil {
		t.Fatal(err)
	}
	timers.fire(liveTimers(2)[1])
	timers.fire(bobTimer)
	awaitOwn(t, up, 0)
}

// TestUserSessionIdleTimer: with the real timer (shortened), an idle
// user's session closes by itself, and their next call works.
func TestUserSessionIdleTimer(t *testing.T) {
	t.Parallel()
	up, _, _ := userServer(t)
	up.mu.Lock()
	up.own.userIdle = 20 * time.Millisecond
	up.mu.Unlock()
	for range 2 {
		if got := callAs(t, up, "carol", "echo"); got != `{"who":"carol"}` {
			t.Fatalf("carol's echo: %q", got)
		}
		awaitOwn(t, up, 0)
	}
}

// TestDropUserLetsCallsFinish: DropUser (a user's token given or taken
// back) while a call of theirs is in flight retires their session: the
// call ends there, with its answer; their next call meanwhile goes on a
// new session; and the retired one closes once its call is over.
func TestDropUserLetsCallsFinish(t *testing.T) {
	t.Parallel()
	up, started, release := userServer(t)
	if got := callAs(t, up, "alice", "echo"); got != `{"who":"alice"}` {
		t.Fatalf("alice's echo: %q", got)
	}
	first := ownOf(up, "alice")
	done := callInBackground(t, up, "alice", "block")
	<-started

	up.DropUser("alice")
	if ownOf(up, "alice") != nil {
		t.Fatal("alice's session is still taken for new requests after DropUser")
	}
	if got := callAs(t, up, "alice", "echo"); got != `{"who":"alice"}` {
		t.Fatalf("alice's echo while her old session drains: %q", got)
	}
	second := ownOf(up, "alice")
	if second == nil || second == first {
		t.Fatalf("alice's call after DropUser went on %p, want a new session (the old was %p)", second, first)
	}
	up.mu.Lock()
	retired := len(up.own.retired)
	up.mu.Unlock()
	if retired != 1 {
		t.Fatalf("%d retired sessions while alice's call is in flight, want 1", retired)
	}

	close(release)
	if got := <-done; got != "released" {
		t.Fatalf("alice's call in flight when her session was dropped: %q, want its answer", got)
	}
	waitFor(t, "the retired session closed", func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		return len(up.own.retired) == 0
	})
	if ownOf(up, "alice") != second {
		t.Error("alice's new session went with the retired one")
	}

	// Dropped while idle: closed at once.
	up.DropUser("alice")
	if ownOf(up, "alice") != nil {
		t.Error("alice's idle session is still there after DropUser")
	}
}
