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
// It also counts log messages (notifications/message), which name no call:
// a call's result waits until every log message read so far has been
// handled, so a host sees the logs an upstream sent before the result.
type progressCounter struct {
	mu   sync.Mutex
	n    map[string]int
	logs atomic.Int64 // notifications/message read
}

// observe counts a notification as it is read (see
// dataplane.ServerConnOptions.Observe).
func (p *progressCounter) observe(method string, params json.RawMessage) {
	switch method {
	case "notifications/progress":
		p.count(params)
	case "notifications/message":
		p.countLog()
	}
}

// countLog records one notifications/message read from the upstream.
func (p *progressCounter) countLog() { p.logs.Add(1) }

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
	if p.n == nil {
		p.n = make(map[string]int)
	}
	p.n[tok]++
	p.mu.Unlock()
}

// take returns how many notifications for token were read, and forgets
// the token.
func (p *progressCounter) take(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.n[token]
	delete(p.n, token)
	return n
}
