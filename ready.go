package junction

import (
	"context"
	"time"
)

// Readiness. Sources that connect in the background ([Readier]: upstream
// servers, plugins) start with an empty catalog. A host that lists tools
// once, right after initialize (many do), would see none of theirs, and a
// call sent at once would meet an unknown tool. So the hub counts the
// Readier sources that are not ready yet, and
//
//   - a host's tools/list, prompts/list, resources/list and
//     resources/templates/list ([View.ListPage]) wait until none is
//     left, bounded by [Options.StartupBudget] counted from [New] (see
//     [Hub.WaitStartup]);
//   - so does a call of the view's own tools (search_tools, describe_tools,
//     call_tool, run_script: [View.CallOwnTool]), which answer from the
//     catalog as a list does;
//   - a tools/call for a name the hub does not know waits while any is
//     left, bounded by the budget counted from the call (see [View.Begin]).
//
// Once the budget has run out, lists no longer wait; the hub logs which
// sources were still connecting.

// watchReady counts st as connecting until its source is ready, then
// reads its catalog and refreshes. Called with h.mu held.
func (h *Hub) watchReady(st *sourceState) {
	r, ok := st.src.(Readier)
	if !ok {
		return
	}
	ready := r.Ready()
	select {
	case <-ready:
		return
	default:
	}
	st.waiting = true
	h.pending++
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-ready:
		case <-h.done:
			return
		}
		ctx, cancel := context.WithTimeout(h.life, 30*time.Second)
		h.loadCatalog(ctx, st)
		cancel()
		// The views serve the source's tools before anyone waiting for
		// it is woken.
		if err := h.rebuild(); err != nil {
			h.logger.Warn("refresh failed", "error", err)
		}
		h.mu.Lock()
		h.settle(st)
		h.mu.Unlock()
	}()
}

// settle stops counting st as connecting; called with h.mu held.
func (h *Hub) settle(st *sourceState) {
	if st.waiting {
		st.waiting = false
		h.pending--
		h.signal()
	}
}

// signal wakes everything waiting for the table or for sources to get
// ready; called with h.mu held.
func (h *Hub) signal() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// WaitStartup waits until every [Readier] source is ready, the startup
// budget ([Options.StartupBudget], counted from [New]) has run out, or
// ctx is done. Views call it before answering a host's lists; a server
// that must not serve before the hub is complete can call it too.
func (h *Hub) WaitStartup(ctx context.Context) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		h.mu.Lock()
		pending, changed := h.pending, h.changed
		left := time.Until(h.deadline)
		if pending > 0 && left <= 0 {
			h.logBudgetOnce()
		}
		h.mu.Unlock()
		if pending == 0 || left <= 0 {
			return
		}
		if timer == nil {
			timer = time.NewTimer(left)
		}
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
			return
		case <-h.done:
			return
		}
	}
}

// Started reports whether startup is over: every [Readier] source has
// been ready at least once, or the startup budget has run out. A
// readiness probe (/readyz) answers with it.
func (h *Hub) Started() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending == 0 {
		return true
	}
	if time.Now().Before(h.deadline) {
		return false
	}
	h.logBudgetOnce()
	return true
}

// Connecting returns the names of the [Readier] sources that are not
// ready yet.
func (h *Hub) Connecting() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var names []string
	for _, s := range h.sources {
		if s.waiting {
			names = append(names, s.name)
		}
	}
	return names
}

// logBudgetOnce logs, once, that the startup budget ran out with sources
// still connecting; called with h.mu held.
func (h *Hub) logBudgetOnce() {
	if h.budgetLogged {
		return
	}
	h.budgetLogged = true
	var names []string
	for _, s := range h.sources {
		if s.waiting {
			names = append(names, s.name)
		}
	}
	h.logger.Warn("startup budget ran out; serving without the sources still connecting (their tools appear when they connect)",
		"budget", h.opts.StartupBudget, "connecting", names)
}
