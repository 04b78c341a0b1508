package dataplane

import (
	"errors"
	"testing"
	"time"
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
		tab.setCancel(c, func(err error) { cancelled[key] = err })
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
	if !errors.Is(cancelled["1"], errConnClosed) || !errors.Is(cancelled["3"], errConnClosed) {
		t.Errorf("cancelAll: %v", cancelled)
	}
	tab.finish("3", c3, nil)
	tab.finish("1", c1b, nil)
	tab.wait(time.Minute) // returns at once: nothing in flight
	if tab.one != nil || len(tab.calls) != 0 || tab.add("5", &hostCall{}) {
		t.Errorf("after wait: one %v, %d calls, or a new call accepted", tab.one, len(tab.calls))
	}
}
