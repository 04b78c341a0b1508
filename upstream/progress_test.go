package upstream

import (
	"encoding/json"
	"testing"
)

// What is read for a call after it ended (an upstream that goes on a
// moment after a cancellation) is not kept: nothing would take it, and a
// long-lived connection would pile it up.
func TestProgressCounterForgetsEndedCalls(t *testing.T) {
	var p progressCounter
	progress := json.RawMessage(`{"progressToken":"junction-1","progress":1}`)
	p.begin("junction-1")
	p.observeStream("junction-1", "notifications/progress", progress)
	p.observeStream("junction-1", "notifications/message", nil)
	if got := p.logsBefore("junction-1"); got != 1 {
		t.Errorf("logsBefore = %d, want 1 (the call's own log message)", got)
	}
	if n := p.take("junction-1"); n != 1 {
		t.Errorf("take = %d progress notifications, want 1", n)
	}
	p.observeStream("junction-1", "notifications/progress", progress)
	p.observeStream("junction-1", "notifications/message", nil)
	p.observe("notifications/progress", progress)
	if len(p.n) != 0 || len(p.ownLogs) != 0 || len(p.live) != 0 {
		t.Errorf("after the call ended: progress counts %v, log numbers %v, live %v; want none", p.n, p.ownLogs, p.live)
	}
	if got := p.logs.Load(); got != 2 {
		t.Errorf("log messages read = %d, want 2 (the late one counts as read)", got)
	}
}
