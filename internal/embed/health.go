package embed

import (
	"log/slog"
	"sync"
	"time"
)

// Back-off and logging of endpoint failures.
const (
	// backoffBase is the pause after one failure, doubling with each
	// consecutive failure up to backoffMax: while it lasts, searches do
	// not wait on an endpoint that just failed (their query vectors come
	// from the cache or not at all) and the indexing waits.
	backoffBase = time.Second
	backoffMax  = time.Minute
	// logEvery is the least time between two log lines about failures.
	logEvery = time.Minute
)

// health tracks the endpoint's consecutive failures: the back-off, and
// log lines rate-limited to one per burst of failures and then at most
// one a minute, each with the count of failures since the last.
type health struct {
	clock clock
	log   *slog.Logger

	mu          sync.Mutex
	consecutive int       // failures since the last success
	retryAt     time.Time // no request before this, while consecutive > 0
	logged      bool      // a failure line was written, and no recovery line since
	lastLog     time.Time // when the last failure line was written
	unlogged    int       // failures since the last failure line
	burst       int       // failures since the last recovery line
}

func (h *health) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.clock.Now()
	h.consecutive++
	h.burst++
	h.unlogged++
	d := backoffBase << min(h.consecutive-1, 10)
	h.retryAt = now.Add(min(d, backoffMax))
	if h.logged && now.Sub(h.lastLog) < logEvery {
		return
	}
	h.log.Warn("embeddings endpoint failed; tool search ranks lexically until it recovers",
		"err", err, "failures", h.unlogged, "retry_in", min(d, backoffMax))
	h.logged, h.lastLog, h.unlogged = true, now, 0
}

func (h *health) ok() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.consecutive == 0 {
		return
	}
	h.consecutive = 0
	h.retryAt = time.Time{}
	if h.logged {
		h.log.Info("embeddings endpoint recovered", "failures", h.burst)
		h.logged, h.burst, h.unlogged = false, 0, 0
	}
}

// retryIn is how long to wait before the next request; 0 or less: now.
func (h *health) retryIn() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.consecutive == 0 {
		return 0
	}
	return h.retryAt.Sub(h.clock.Now())
}
