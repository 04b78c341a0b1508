package statuspage

import (
	"sync"
	"time"
)

// A Ring keeps the last n values added; older ones are dropped. It is
// safe for concurrent use.
type Ring[T any] struct {
	mu   sync.Mutex
	buf  []T
	next int // where the next value goes
	full bool
}

// NewRing returns a ring that keeps n values (at least one).
func NewRing[T any](n int) *Ring[T] {
	return &Ring[T]{buf: make([]T, max(n, 1))}
}

// Add records v, dropping the oldest value when the ring is full.
func (r *Ring[T]) Add(v T) {
	r.mu.Lock()
	r.buf[r.next] = v
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// List returns the values kept, newest first.
func (r *Ring[T]) List() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	out := make([]T, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// Call is one tool call the hub routed, as the page and GET /status list
// it.
type Call struct {
	Time   time.Time `json:"time"`
	Tool   string    `json:"tool"`
	Source string    `json:"source"`
	// DurationMS is the time the source took, in milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Outcome is "ok", "tool_error", "protocol_error" or a hub error code
	// in lower case ("timeout", "source_unavailable", ...).
	Outcome string `json:"outcome"`
}

// Reload is one attempt to apply a changed config file.
type Reload struct {
	Time time.Time `json:"time"`
	// Changes says what the new file changed ("no change" when nothing
	// did; empty when the file was refused before it could be compared).
	Changes string `json:"changes,omitempty"`
	// Error is why the reload was refused or is incomplete; empty when it
	// applied in full.
	Error string `json:"error,omitempty"`
}

// OK reports whether the reload applied in full.
func (r Reload) OK() bool { return r.Error == "" }

// RecentCalls and RecentReloads bound what the page keeps.
const (
	RecentCalls   = 100
	RecentReloads = 20
)
