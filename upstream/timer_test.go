package upstream

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bareServer returns a Server with a fake current session and no
// supervisor, for testing call bookkeeping alone.
func bareServer(t *testing.T) (*Server, *session) {
	s := &Server{
		name:      "bare",
		logger:    slog.New(slog.DiscardHandler),
		recent:    make(map[junction.Host]*recentHost),
		acked:     make(map[*mcp.ClientSession]map[string]bool),
		ackSignal: make(chan struct{}),
		changed:   make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(t.Context())
	t.Cleanup(s.cancel)
	sess := &session{done: make(chan struct{})}
	s.sess = sess
	return s, sess
}

// The no-progress timer restarts on progress and stops while junction
// waits for the host.
func TestNoProgressTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, sess := bareServer(t)
		c, ctx, end, err := s.begin(t.Context(), sess, nil, time.Second, "tool")
		if err != nil {
			t.Fatal(err)
		}
		defer end()
		time.Sleep(900 * time.Millisecond)
		c.reset() // progress
		time.Sleep(900 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatalf("call ended %v after progress, want it running", context.Cause(ctx))
		}
		release := c.hold() // waiting for the host to answer
		time.Sleep(time.Hour)
		if ctx.Err() != nil {
			t.Fatal("call timed out while waiting for the host")
		}
		release()
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if !errors.Is(context.Cause(ctx), errNoProgress) {
			t.Errorf("cause after a second without progress = %v, want errNoProgress", context.Cause(ctx))
		}
	})
}

// One watchdog times out every call of a server, each at its own time: a
// call due before those already waiting (registered later with a shorter
// timeout), a call whose progress moves it past the others, and calls
// that end before they are due.
func TestNoProgressWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, sess := bareServer(t)
		begin := func(timeout time.Duration) (*call, context.Context, func()) {
			c, ctx, end, err := s.begin(t.Context(), sess, nil, timeout, "tool")
			if err != nil {
				t.Fatal(err)
			}
			return c, ctx, end
		}
		start := time.Now()
		_, slow, endSlow := begin(10 * time.Second)
		defer endSlow()
		_, fast, endFast := begin(time.Second)
		defer endFast()
		kept, keptCtx, endKept := begin(2 * time.Second)
		defer endKept()
		_, _, endDone := begin(500 * time.Millisecond)
		endDone() // ends before it is due
		ended := func(ctx context.Context) time.Duration {
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), errNoProgress) {
				t.Errorf("cause = %v, want errNoProgress", context.Cause(ctx))
			}
			return time.Since(start)
		}
		if d := ended(fast); d != time.Second {
			t.Errorf("the 1 s call ended after %v", d)
		}
		kept.reset() // progress at 1 s: due at 3 s
		if d := ended(keptCtx); d != 3*time.Second {
			t.Errorf("the 2 s call with progress at 1 s ended after %v, want 3s", d)
		}
		if d := ended(slow); d != 10*time.Second {
			t.Errorf("the 10 s call ended after %v", d)
		}
	})
}

// A request the upstream sends outside any call can only go to a host if
// exactly one host session has calls in flight.
func TestRouteRequest(t *testing.T) {
	t.Parallel()
	s, sess := bareServer(t)
	if _, err := s.routeRequest(t.Context(), "sampling/createMessage"); err == nil {
		t.Error("routeRequest with no calls in flight succeeded")
	}
	h1, h2 := junction.SessionHost(&mcp.ServerSession{}), junction.SessionHost(&mcp.ServerSession{})
	c1, _, end1, _ := s.begin(t.Context(), sess, h1, 0, "a")
	_, _, end2, _ := s.begin(t.Context(), sess, h1, 0, "b")
	if c, err := s.routeRequest(t.Context(), "m"); err != nil || c.host != h1 {
		t.Errorf("routeRequest with two calls of one host = %v, %v; want that host", c, err)
	}
	_, _, end3, _ := s.begin(t.Context(), sess, h2, 0, "c")
	_, err := s.routeRequest(t.Context(), "m")
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Errorf("routeRequest with two hosts = %v, want a JSON-RPC error", err)
	}
	// A request made with a call's own context goes to that call's host.
	if c, err := s.routeRequest(context.WithValue(t.Context(), callKey{}, c1), "m"); err != nil || c != c1 {
		t.Errorf("routeRequest with a call context = %v, %v", c, err)
	}
	end1()
	end2()
	end3()
	// Finished calls still receive log messages for a moment.
	if hosts := s.logHosts(); len(hosts) != 2 {
		t.Errorf("logHosts after the calls ended = %d hosts, want 2", len(hosts))
	}
	// A closing session takes no new calls.
	s.sess = nil
	if _, _, _, err := s.begin(t.Context(), sess, nil, 0, "d"); err == nil {
		t.Error("begin on a closing session succeeded")
	}
}

// A host whose calls have ended is forgotten once its grace is over,
// whether or not another call comes: an ended host session (and all it
// holds) is not kept alive by its last call.
func TestRecentHostsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, sess := bareServer(t)
		recent := func() int {
			synctest.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.recent)
		}
		for range 3 { // calls end at 0, 0.5 and 1 s; their hosts stay until 2, 2.5 and 3 s
			_, _, end, err := s.begin(t.Context(), sess, junction.SessionHost(&mcp.ServerSession{}), 0, "tool")
			if err != nil {
				t.Fatal(err)
			}
			end()
			time.Sleep(recentHostGrace / 4)
		}
		if n := recent(); n != 3 {
			t.Errorf("%d recent hosts at 1.5 s, want 3", n)
		}
		time.Sleep(recentHostGrace * 3 / 8) // 2.25 s
		if n := recent(); n != 2 {
			t.Errorf("%d recent hosts at 2.25 s, want 2", n)
		}
		time.Sleep(recentHostGrace) // 4.25 s
		if n := recent(); n != 0 {
			t.Errorf("%d recent hosts after every grace ran out, want none", n)
		}
	})
}

// TestRecentHostKeptByItsNextCall: a host's next call on the server
// moves its grace on (the entry its last call left is updated in place),
// and a host forgotten is not held by that shortcut either.
func TestRecentHostKeptByItsNextCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, sess := bareServer(t)
		host, other := junction.SessionHost(&mcp.ServerSession{}), junction.SessionHost(&mcp.ServerSession{})
		call := func(h junction.Host) {
			_, _, end, err := s.begin(t.Context(), sess, h, 0, "tool")
			if err != nil {
				t.Fatal(err)
			}
			end()
		}
		has := func(h junction.Host) bool {
			synctest.Wait()
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.recent[h] != nil
		}
		call(host)                      // until 2 s
		time.Sleep(recentHostGrace / 2) // 1 s
		call(other)
		call(host)                          // until 3 s, from another host's call in between
		time.Sleep(recentHostGrace * 3 / 4) // 2.5 s
		if !has(host) || !has(other) {
			t.Errorf("at 2.5 s: host recent %v, other %v; want both (until 3 s)", has(host), has(other))
		}
		call(host)                          // until 4.5 s, its entry updated in place
		time.Sleep(recentHostGrace * 3 / 4) // 4 s
		if !has(host) {
			t.Error("at 4 s the host is forgotten; its last call ended at 2.5 s")
		}
		time.Sleep(recentHostGrace) // 6 s
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.recent) != 0 || s.last != nil || s.lastHost != nil {
			t.Errorf("after every grace ran out: %d recent hosts, last %v; want none", len(s.recent), s.lastHost)
		}
	})
}
