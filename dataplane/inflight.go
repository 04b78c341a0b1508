package dataplane

import (
	"context"
	"sync"
	"time"
)

// inflight is the table of one host connection's raw calls (a stdio
// connection, or one HTTP session), by the host's request id as sent.
// It is how a host's notifications/cancelled finds its call, how a reused
// id is noticed (such a request goes the ordinary way, whose answer is
// go-sdk's), and what a connection that ends waits for.
type inflight struct {
	wg      sync.WaitGroup // calls in the table; Add only under mu while !closing
	mu      sync.Mutex     // guards the fields below
	calls   map[string]*hostCall
	closing bool // no new calls
}

// hostCall is one raw call in flight.
type hostCall struct {
	cancel    context.CancelFunc
	cancelled bool // the host cancelled it; guarded by inflight.mu
}

// add enters the call with the host's id key and returns it, or nil if
// the id is in use or the table is closing.
func (t *inflight) add(key string, cancel context.CancelFunc) *hostCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.calls[key]; dup || t.closing {
		return nil
	}
	if t.calls == nil {
		t.calls = make(map[string]*hostCall)
	}
	c := &hostCall{cancel: cancel}
	t.calls[key] = c
	t.wg.Add(1)
	return c
}

// finish takes c out of the table and, unless the host cancelled it (as
// JSON-RPC asks, a cancelled request gets no answer), calls answer (if
// not nil); only then does wait stop waiting for c. It reports whether
// the host cancelled c.
func (t *inflight) finish(key string, c *hostCall, answer func()) (cancelled bool) {
	defer t.wg.Done()
	t.mu.Lock()
	if t.calls[key] == c {
		delete(t.calls, key)
	}
	cancelled = c.cancelled
	t.mu.Unlock()
	if !cancelled && answer != nil {
		answer()
	}
	return cancelled
}

// cancel cancels the call with the host's id key and reports whether
// there was one (false: the id is go-sdk's to handle).
func (t *inflight) cancel(key string) bool {
	t.mu.Lock()
	c := t.calls[key]
	if c != nil {
		c.cancelled = true
	}
	t.mu.Unlock()
	if c != nil {
		c.cancel()
	}
	return c != nil
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
