package upstream

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// progressCounter counts the progress notifications read from an
// upstream, by progress token, before go-sdk hands them to handlers. go-sdk
// delivers a response as soon as it is read but queues notifications, so a
// call's result can overtake the progress sent before it; a call waits
// until as many notifications as were read have been handled.
//
// It also counts log messages (notifications/message), which name no call,
// so that a host sees the logs an upstream sent before a result ahead of
// it. Each log message read gets the next number; a call's result waits
// until as many have been handled as the number of the last one read on
// its own response stream (Streamable HTTP sends a call's log messages
// there) or on a stream of no call in particular (stdio, the GET stream,
// the legacy SSE transport), whichever is later. A call is not held up by
// another call's log messages, however many that one streams.
type progressCounter struct {
	mu      sync.Mutex
	n       map[string]int
	logs    atomic.Int64     // notifications/message read
	free    atomic.Int64     // the number of the last one read on a stream of no call
	ownLogs map[string]int64 // by progress token: the number of the last one read on that call's stream
	// live holds the progress tokens of the calls in flight (see begin):
	// what is read for a token not in it (a call that has ended, whose
	// upstream went on a moment after a cancellation, say) is not kept, as
	// nothing would take it. nil: every token is kept.
	live map[string]bool
}

// begin starts counting for the call with progress token token.
func (p *progressCounter) begin(token string) {
	p.mu.Lock()
	if p.live == nil {
		p.live = make(map[string]bool)
	}
	p.live[token] = true
	p.mu.Unlock()
}

// keeps reports whether what is read for token is kept; called with p.mu
// held.
func (p *progressCounter) keeps(token string) bool {
	return p.live == nil || p.live[token]
}

// observe counts a notification as it is read on a stream of no call in
// particular (see serverConnOptions.Observe).
func (p *progressCounter) observe(method string, params json.RawMessage) {
	p.observeStream("", method, params)
}

// observeStream counts a notification as it is read on the response
// stream of the call with progress token stream, or, with stream "", on
// a stream of no call (see wire.ContentTransport.Observe).
func (p *progressCounter) observeStream(stream, method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		p.count(params)
	case "notifications/message":
		p.countLog(stream)
	}
}

// countLog records one notifications/message read from the upstream on
// stream (see observeStream).
func (p *progressCounter) countLog(stream string) {
	n := p.logs.Add(1)
	if stream == "" {
		p.free.Store(n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.keeps(stream) {
		return
	}
	if p.ownLogs == nil {
		p.ownLogs = make(map[string]int64)
	}
	p.ownLogs[stream] = n
}

// logsBefore returns how many log messages must have been handled before
// the result of the call with progress token token goes to its host, and
// forgets the call's own.
func (p *progressCounter) logsBefore(token string) int64 {
	p.mu.Lock()
	own := p.ownLogs[token]
	delete(p.ownLogs, token)
	p.mu.Unlock()
	return max(own, p.free.Load())
}

func (p *progressCounter) count(params json.RawMessage) {
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.keeps(tok) {
		return
	}
	if p.n == nil {
		p.n = make(map[string]int)
	}
	p.n[tok]++
}

// take returns how many progress notifications for token were read, and
// forgets the token (its log messages' number too). A call that has ended
// takes its token once more, so that nothing read for it later is kept.
func (p *progressCounter) take(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.n[token]
	delete(p.n, token)
	delete(p.ownLogs, token)
	delete(p.live, token)
	return n
}
