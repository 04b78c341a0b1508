package upstream

import (
	"encoding/json"
)

// Counting what an upstream sends about its calls. go-sdk delivers a
// response as soon as it is read but queues notifications for its
// handlers, so a call's result can overtake the progress sent before it:
// the server's reader counts each progress notification as it is read,
// in the call's own record (call.progressRead), and the call's result
// waits until as many have been handled (drainProgress).
//
// Log messages (notifications/message) name no call, so a host sees the
// logs an upstream sent before a result ahead of it this way: each log
// message read gets the next number (Server.logsRead); a call's result
// waits until as many have been handled as the number of the last one
// read on its own response stream (Streamable HTTP sends a call's log
// messages there: call.ownLogs) or on a stream of no call in particular
// (stdio, the GET stream, the legacy SSE transport: Server.logsFree),
// whichever is later (drainLogs). A call is not held up by another call's
// log messages, however many that one streams.
//
// What is read for a token of no call in flight (a call that has ended,
// whose upstream went on a moment after a cancellation, say) is not
// kept: nothing would take it.

// observe counts a notification as it is read on a stream of no call in
// particular (see serverConnOptions.Observe).
func (s *Server) observe(method string, params json.RawMessage) {
	s.observeStream("", method, params)
}

// observeStream counts a notification as it is read on the response
// stream of the call with progress token stream, or, with stream "", on
// a stream of no call (see wire.ContentTransport.Observe).
func (s *Server) observeStream(stream, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		s.countProgress(params)
	case "notifications/message":
		s.countLog(stream)
	}
}

// countLog records one notifications/message read from the upstream on
// stream (see observeStream).
func (s *Server) countLog(stream string) {
	n := s.logsRead.Add(1)
	if stream == "" {
		s.logsFree.Store(n)
		return
	}
	s.mu.Lock()
	c := s.callLocked(stream)
	s.mu.Unlock()
	if c != nil {
		c.ownLogs.Store(n)
	}
}

// countProgress records one notifications/progress read from the
// upstream, for the call its token names.
func (s *Server) countProgress(params json.RawMessage) {
	var v struct {
		Token any `json:"progressToken"`
	}
	if json.Unmarshal(params, &v) != nil {
		return
	}
	tok, ok := v.Token.(string)
	if !ok {
		return
	}
	s.mu.Lock()
	c := s.callLocked(tok)
	s.mu.Unlock()
	if c != nil {
		c.progressRead.Add(1)
	}
}

// logsBefore returns how many log messages must have been handled before
// the result of c goes to its host.
func (s *Server) logsBefore(c *call) int64 {
	return max(c.ownLogs.Load(), s.logsFree.Load())
}
