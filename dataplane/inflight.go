package dataplane

import (
	"context"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/wire"
)

// inflight is the table of one host connection's raw calls (a stdio
// connection, or one HTTP session), by the host's request id as sent.
// It is how a host's notifications/cancelled finds its call, how a reused
// id is noticed (over stdio the plane refuses such a request; over HTTP
// it goes the ordinary way, whose answer is go-sdk's), and what a
// connection that ends waits for.
type inflight struct {
	wg sync.WaitGroup // calls in the table; Add only under mu while !closing
	mu sync.Mutex     // guards the fields below
	// A host that makes one call at a time (most, and every idle HTTP
	// session) needs no map: the call is kept in one and oneKey; calls
	// holds the others.
	one     *hostCall
	oneKey  string
	calls   map[string]*hostCall
	closing bool // no new calls
}

// holds reports whether c is in the table under key: it has not been
// answered.
func (t *inflight) holds(key string, c *hostCall) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lookup(key) == c
}

// lookup returns the call with the host's id key, or nil. Requires t.mu.
func (t *inflight) lookup(key string) *hostCall {
	if t.one != nil && t.oneKey == key {
		return t.one
	}
	return t.calls[key]
}

// hostCall is one raw call in flight. It is the call's context, and
// carries its [wire.Link], which is how a server connection learns the
// batches the call's writes belong to.
type hostCall struct {
	// The call's context, once withHostCall has made it: its parent, of
	// which hostCall is the child that carries it (one allocation for
	// both).
	context.Context

	cancel    junction.RawCancel // nil until set; guarded by inflight.mu
	cancelled bool               // the host cancelled it; guarded by inflight.mu

	link wire.Link
	// req is where link.Request points once the call's params are made
	// (forwardParams; one allocation for both).
	req wire.HostRequest
	// stream is where link.Stream points for a call whose answer may be
	// forwarded while it arrives (one allocation for both).
	stream wire.StreamTo
	// params holds the params forwardParams makes for the source when
	// they fit, as most calls' do (one allocation for both). A stdioCall
	// with it is 616 bytes, in the runtime's size class of 640.
	params [128]byte
}

type hostCallKey struct{}

// withHostCall returns ctx carrying hc: hc itself, as a child of ctx.
// It is called once for hc, before hc is shared.
func withHostCall(ctx context.Context, hc *hostCall) context.Context {
	hc.Context = ctx
	return hc
}

// Value implements context.Context: hc carries itself and its link.
func (hc *hostCall) Value(key any) any {
	if _, ok := key.(hostCallKey); ok {
		return hc
	}
	if v := hc.link.Value(key); v != nil {
		return v
	}
	return hc.Context.Value(key)
}

// hostCallOf returns the hostCall ctx carries, or nil.
func hostCallOf(ctx context.Context) *hostCall {
	hc, _ := ctx.Value(hostCallKey{}).(*hostCall)
	return hc
}

// isClosing reports whether the table takes no new calls (cancelAll).
func (t *inflight) isClosing() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closing
}

// add enters c with the host's id key and reports whether it could: not
// if the id is in use or the table is closing.
func (t *inflight) add(key string, c *hostCall) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lookup(key) != nil || t.closing {
		return false
	}
	switch {
	case t.one == nil:
		t.one, t.oneKey = c, key
	case t.calls == nil:
		t.calls = map[string]*hostCall{key: c}
	default:
		t.calls[key] = c
	}
	t.wg.Add(1)
	return true
}

// finish takes c out of the table and, unless the host cancelled it (as
// JSON-RPC asks, a cancelled request gets no answer), calls answer (if
// not nil); only then does wait stop waiting for c. It reports whether
// the host cancelled c.
func (t *inflight) finish(key string, c *hostCall, answer func()) (cancelled bool) {
	defer t.wg.Done()
	t.mu.Lock()
	if t.one == c && t.oneKey == key {
		t.one, t.oneKey = nil, ""
	} else if t.calls[key] == c {
		delete(t.calls, key)
	}
	cancelled = c.cancelled
	t.mu.Unlock()
	if !cancelled && answer != nil {
		answer()
	}
	return cancelled
}

// setCancel gives c what cancels it; a call cancelled before that is
// cancelled at once.
func (t *inflight) setCancel(c *hostCall, cancel junction.RawCancel) {
	t.mu.Lock()
	c.cancel = cancel
	cancelled := c.cancelled
	t.mu.Unlock()
	if cancelled {
		cancel.CancelRaw(errHostCancelled)
	}
}

// cancel cancels the call with the host's id key and reports whether
// there was one (false: the id is go-sdk's to handle).
func (t *inflight) cancel(key string) bool {
	t.mu.Lock()
	c := t.lookup(key)
	var cancel junction.RawCancel
	if c != nil {
		c.cancelled = true
		cancel = c.cancel
	}
	t.mu.Unlock()
	if cancel != nil {
		cancel.CancelRaw(errHostCancelled)
	}
	return c != nil
}

// errHostCancelled is the cause of a call the host cancelled, or whose
// host's session ended. It is the bare context.Canceled that go-sdk's
// server gives a handler whose call was cancelled or whose session
// closed, so that an upstream is told the same reason on every path.
var errHostCancelled = context.Canceled

// cancelAll cancels every call in the table (the connection is closing,
// or the session ended).
func (t *inflight) cancelAll() {
	t.mu.Lock()
	var cancels []junction.RawCancel
	mark := func(c *hostCall) {
		c.cancelled = true // no answer now; and one still starting is cancelled by setCancel
		if c.cancel != nil {
			cancels = append(cancels, c.cancel)
		}
	}
	if t.one != nil {
		mark(t.one)
	}
	for _, c := range t.calls {
		mark(c)
	}
	t.mu.Unlock()
	for _, cancel := range cancels {
		cancel.CancelRaw(errHostCancelled)
	}
}

// wait refuses new calls and waits up to d for those in the table.
func (t *inflight) wait(d time.Duration) {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}
