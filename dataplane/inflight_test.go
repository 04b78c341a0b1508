package dataplane

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
)

// TestInflight: the table finds its calls by id whether it holds one or
// several, refuses an id in use, cancels one or all, and a finished
// call's id is free again.
func TestInflight(t *testing.T) {
	var tab inflight
	cancelled := map[string]error{}
	newCall := func(key string) *hostCall {
		c := &hostCall{}
		if !tab.add(key, c) {
			t.Fatalf("add(%s) refused", key)
		}
		tab.setCancel(c, junction.RawCancelFunc(func(err error) { cancelled[key] = err }))
		return c
	}
	c1 := newCall("1")
	c2 := newCall("2")
	c3 := newCall("3")
	for _, key := range []string{"1", "2", "3"} {
		if tab.add(key, &hostCall{}) {
			t.Errorf("add(%s) of an id in use accepted", key)
		}
	}
	if !tab.cancel("2") || !errors.Is(cancelled["2"], errHostCancelled) {
		t.Errorf("cancel(2): %v", cancelled)
	}
	if tab.cancel("4") {
		t.Error("cancel of an unknown id reported a call")
	}
	answered := false
	if !tab.finish("2", c2, func() { answered = true }) || answered {
		t.Error("finish of a cancelled call: not reported, or answered")
	}
	if tab.finish("1", c1, func() { answered = true }) || !answered {
		t.Error("finish of call 1: reported cancelled, or not answered")
	}
	c1b := newCall("1") // its id is free again
	tab.cancelAll()
	if cancelled["1"] != errHostCancelled || cancelled["3"] != errHostCancelled {
		t.Errorf("cancelAll: %v", cancelled)
	}
	tab.finish("3", c3, nil)
	tab.finish("1", c1b, nil)
	tab.wait(time.Minute) // returns at once: nothing in flight
	if tab.one != nil || len(tab.calls) != 0 || tab.add("5", &hostCall{}) {
		t.Errorf("after wait: one %v, %d calls, or a new call accepted", tab.one, len(tab.calls))
	}
}

// TestHostCallContext: the context withHostCall makes is the call itself,
// found from it and from its children, with its parent's values,
// deadline and cancellation.
func TestHostCallContext(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(t.Context(), key{}, "v"))
	hc := &hostCall{}
	ctx := withHostCall(parent, hc)
	child, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	for name, c := range map[string]context.Context{"ctx": ctx, "child": child} {
		if got := hostCallOf(c); got != hc {
			t.Errorf("hostCallOf(%s) = %p, want %p", name, got, hc)
		}
		if got := c.Value(key{}); got != "v" {
			t.Errorf("%s.Value(parent's key) = %v, want v", name, got)
		}
	}
	if hostCallOf(parent) != nil {
		t.Error("hostCallOf(parent) is not nil")
	}
	cancel()
	<-child.Done()
	if ctx.Err() != context.Canceled || child.Err() != context.Canceled {
		t.Errorf("after the parent's cancel: ctx.Err() = %v, child.Err() = %v", ctx.Err(), child.Err())
	}
}

// TestEnvelopeAllocs: reading a plain tools/call's envelope allocates
// only the tool's name, and a line that is not for the tasks extension
// is not read for it at all. It runs without the race detector (see
// skipAllocsUnderRace).
func TestEnvelopeAllocs(t *testing.T) {
	skipAllocsUnderRace(t)
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi"},"_meta":{"progressToken":1}}}`)
	meta := []byte(`{"progressToken":1}`)
	for _, tc := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"readTaskRequest", 0, func() { readTaskRequest(line) }},
		{"parseToolCall", 1, func() { parseToolCall(line) }},
		{"readMeta", 0, func() { readMeta(meta) }},
	} {
		if n := testing.AllocsPerRun(100, tc.f); n > tc.max {
			t.Errorf("%s: %v allocations per run, want at most %v", tc.name, n, tc.max)
		}
	}
}
