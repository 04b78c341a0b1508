package junction

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// TestSharedRun: calls made while a run is under way share the next run,
// each returns only after a run that began after it was made, and the
// caller that ran the first run is not kept to run the next.
func TestSharedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			r         sharedRun
			runs      atomic.Int32
			calls     atomic.Int32 // calls made so far
			seen      atomic.Int32 // calls made before the current run began
			firstDone atomic.Bool
			release   = [2]chan struct{}{make(chan struct{}), make(chan struct{})}
		)
		f := func() error {
			seen.Store(calls.Load())
			if n := runs.Add(1); n <= 2 {
				<-release[n-1]
			}
			return nil
		}
		call := func() {
			calls.Add(1)
			r.do(f)
			if seen.Load() < 1 {
				t.Error("a call returned before a run that began after it")
			}
		}
		const n = 50
		var wg sync.WaitGroup
		wg.Go(func() { call(); firstDone.Store(true) })
		synctest.Wait() // the first run is under way
		for range n {
			wg.Go(call)
		}
		synctest.Wait() // every call waits: the first for its run, the others for the next
		r.mu.Lock()
		if k := len(r.waiting); k != n {
			t.Errorf("%d calls waiting for the next run, want %d", k, n)
		}
		r.mu.Unlock()
		close(release[0])
		synctest.Wait() // the second run is under way
		if !firstDone.Load() {
			t.Error("the first caller did not return after its run: it runs the others' too")
		}
		close(release[1])
		wg.Wait()
		if got := runs.Load(); got != 2 {
			t.Errorf("%d runs for 1 call and %d made during it, want 2", got, n)
		}
		if got := seen.Load(); got != n+1 {
			t.Errorf("the second run began having seen %d calls, want %d", got, n+1)
		}
	})
}
