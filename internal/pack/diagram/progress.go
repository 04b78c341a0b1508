package diagram

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// progressInterval is the least time between two saves of a run's
// progress.
const progressInterval = 200 * time.Millisecond

// progress saves a run's record while the run goes on: at once after the
// first node, then at most every progressInterval, or ten times as long
// as the last save took if that is longer. A record holds every node's
// output, so saving it after each node made a run of n nodes write O(n²)
// bytes (a 500-node fan-out wrote gigabytes and grew the store to
// 159 MB); this way the cost of saving stays a small share of the run.
type progress struct {
	p   *Pack
	ctx context.Context

	mu  sync.Mutex // guards run's ExecutedNodes and NodeOutputs until stop
	run *Run

	dirty   chan struct{} // a node finished since the last save; capacity 1
	done    chan struct{} // closed by stop
	stopped chan struct{} // closed when the saving goroutine returns
}

func startProgress(ctx context.Context, p *Pack, run *Run) *progress {
	pr := &progress{p: p, ctx: ctx, run: run, dirty: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go pr.loop()
	return pr
}

// step records a finished node; the engine calls it.
func (pr *progress) step(nodeID string, output any) {
	pr.mu.Lock()
	pr.run.ExecutedNodes = append(pr.run.ExecutedNodes, nodeID)
	pr.run.NodeOutputs[nodeID] = output
	pr.mu.Unlock()
	select {
	case pr.dirty <- struct{}{}:
	default:
	}
}

// stop ends the saving and waits for it; the caller then owns the run
// record again, and writes the final one.
func (pr *progress) stop() {
	close(pr.done)
	<-pr.stopped
}

func (pr *progress) loop() {
	defer close(pr.stopped)
	for {
		select {
		case <-pr.dirty:
		case <-pr.done:
			return
		}
		began := time.Now()
		pr.mu.Lock()
		snap := *pr.run
		snap.ExecutedNodes = slices.Clone(pr.run.ExecutedNodes)
		snap.NodeOutputs = maps.Clone(pr.run.NodeOutputs)
		pr.mu.Unlock()
		if err := pr.p.store.PutRun(pr.ctx, &snap); err != nil {
			pr.p.logger.Warn("saving run progress", "run", snap.SessionID, "error", err)
		}
		t := time.NewTimer(max(progressInterval, 10*time.Since(began)))
		select {
		case <-t.C:
		case <-pr.done:
			t.Stop()
			return
		}
	}
}
