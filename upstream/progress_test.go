package upstream

import (
	"encoding/json"
	"testing"
)

// What is read for a call is counted in its record while it is in
// flight, and what is read for it after it ended (an upstream that goes
// on a moment after a cancellation) is not kept anywhere: nothing would
// take it, and a long-lived connection would pile it up.
func TestProgressCountedWhileInFlight(t *testing.T) {
	s, _ := bareServer(t)
	c := &call{seq: 1}
	s.calls.put(c.seq, c)
	progress := json.RawMessage(`{"progressToken":"junction-1","progress":1}`)
	s.observeStream("junction-1", "notifications/progress", progress)
	s.observeStream("junction-1", "notifications/message", nil)
	s.observe("notifications/progress", json.RawMessage(`{"progressToken":"junction-9","progress":1}`))
	if got := s.logsBefore(c); got != 1 {
		t.Errorf("logsBefore = %d, want 1 (the call's own log message)", got)
	}
	if n := c.progressRead.Load(); n != 1 {
		t.Errorf("progress read = %d, want 1 (not another call's)", n)
	}
	s.calls.take(c.seq) // the call ends (Server.end)
	s.observeStream("junction-1", "notifications/progress", progress)
	s.observeStream("junction-1", "notifications/message", nil)
	if n, own := c.progressRead.Load(), c.ownLogs.Load(); n != 1 || own != 1 {
		t.Errorf("after the call ended: progress read %d, own log number %d; want 1 and 1, as they were", n, own)
	}
	if got := s.logsRead.Load(); got != 2 {
		t.Errorf("log messages read = %d, want 2 (the late one counts as read)", got)
	}
}
