// Package gcfloor keeps a busy program with a small heap from spending
// its time collecting garbage.
//
// Go's collector starts a cycle when the heap has grown by GOGC percent
// (100 by default) over what the last cycle left live, and never below a
// 4 MiB goal. A hub that forwards calls keeps little live (about 1 MiB)
// and allocates a little per call, so at 100,000 calls a second it
// collects some 60 times a second, and each cycle has a fixed cost (the
// program's roots, the stacks, starting and ending the cycle) that does
// not shrink with the heap.
//
// While the program allocates fast (over two windows of 200 ms or more
// in a row) and what it allocates dies young (the live heap holds
// steady: calls forwarded, not sessions opened), [Start]
// raises the heap goal to a floor (16 MiB by default) by raising GOGC,
// for heaps small enough that the floor is above what GOGC 100 gives; a
// heap whose live part is half the floor or more is left to the default.
// Once the live heap has grown by an eighth (and half a MiB) since the
// program became busy, at two cycles in a row, the floor stays down
// until it is quiet again:
// objects that stay, made while the heap is let grow, would end up
// spread over more of it, and hold more of it once the rest is given
// back. Once allocation slows down,
// GOGC goes back to 100 and the memory is given back at once
// (debug.FreeOSMemory). The cost is the floor's worth of resident memory
// while the program is busy, and nothing while it is not: no timer runs
// then.
//
// A program run with GOGC set in its environment is left alone: the
// operator has chosen.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune [Start]. The zero value is usable.
type Options struct {
	// Floor is the heap goal while busy; 16 MiB if zero.
	Floor uint64
	// Rate is the allocation rate, in bytes per second, from which the
	// program counts as busy; 4 MiB/s if zero (a cycle a second at
	// GOGC 100 on a small heap).
	Rate uint64
	// Tick is how often the rate is measured while the floor is up;
	// 250 ms if zero.
	Tick time.Duration

	now     func() time.Time   // for tests; time.Now if nil
	onCycle func(at time.Time) // for tests: called after each cycle is handled, with the clock's time then
}

// growthSlack is how much the live heap may grow over a busy spell,
// beside an eighth, and still count as steady.
const growthSlack = 512 << 10

// defaultPercent is the runtime's GOGC when the environment sets none.
const defaultPercent = 100

// minHeap is the runtime's smallest heap goal at GOGC 100 (its
// defaultHeapMinimum); the goal's floor scales with GOGC.
const minHeap = 4 << 20

// Start watches the collector's cycles and the allocation rate, and sets
// GOGC as the package doc says. It does nothing, and stop does nothing,
// if the environment sets GOGC, or if another Start is watching (GOGC is
// the process's: one watcher sets it). stop puts GOGC back to 100 and
// stops watching.
func Start(opts Options) (stop func()) {
	if os.Getenv("GOGC") != "" || !running.CompareAndSwap(false, true) {
		return func() {}
	}
	t := newTuner(opts)
	t.arm()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.stop()
			running.Store(false)
		})
	}
}

// running is set while a Start is watching.
var running atomic.Bool

// A tuner is the state of one Start.
type tuner struct {
	floor, rate uint64
	tick        time.Duration
	now         func() time.Time
	onCycle     func(at time.Time)

	mu      sync.Mutex
	stopped bool
	percent int         // the GOGC set last
	base    uint64      // the live heap at the first cycle of this busy spell; 0: quiet
	over    int         // cycles in a row that found the live heap past base (see cycle)
	grown   bool        // it was found so twice: the floor stays down until quiet
	spans   int         // windows measured busy in a row (the floor goes up at two)
	timer   *time.Timer // measures the rate while the floor is up; nil when it is down
	at      time.Time   // when allocs was read
	allocs  uint64      // bytes allocated so far, read at at
	samples [2]metrics.Sample
}

func newTuner(opts Options) *tuner {
	t := &tuner{floor: opts.Floor, rate: opts.Rate, tick: opts.Tick, now: opts.now, onCycle: opts.onCycle, percent: defaultPercent}
	if t.floor == 0 {
		t.floor = 16 << 20
	}
	if t.rate == 0 {
		t.rate = 4 << 20
	}
	if t.tick <= 0 {
		t.tick = 250 * time.Millisecond
	}
	if t.now == nil {
		t.now = time.Now
	}
	t.samples[0].Name = "/gc/heap/live:bytes"
	t.samples[1].Name = "/gc/heap/allocs:bytes"
	t.at = t.now()
	t.read()
	return t
}

// read reads the live heap and the bytes allocated so far, and returns
// the live heap and whether the program allocated at t.rate or faster
// since the last read. A rate over less than window says nothing (known
// false: busy is then whether the floor is up), and the next read
// measures from the same start: two cycles close together, one of them
// the collection FreeOSMemory runs, do not judge the program by a few
// milliseconds. Called with t.mu held (or before t is shared).
func (t *tuner) read() (live uint64, busy, known bool) {
	metrics.Read(t.samples[:])
	live, allocs := uint64Of(t.samples[0]), uint64Of(t.samples[1])
	now := t.now()
	d := now.Sub(t.at)
	if d < min(t.tick, window) {
		return live, t.percent != defaultPercent, false
	}
	busy = float64(allocs-t.allocs) >= float64(t.rate)*d.Seconds()
	t.at, t.allocs = now, allocs
	return live, busy, true
}

// window is the shortest span a rate is measured over.
const window = 200 * time.Millisecond

func uint64Of(s metrics.Sample) uint64 {
	if s.Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s.Value.Uint64()
}

// sentinel is an object nothing refers to: its finalizer runs after the
// cycle that finds it unreachable, which is the next one. It holds a
// pointer so that it is an allocation of its own: the runtime packs
// small objects without pointers together, and finalizes such a block
// only when all of it is unreachable.
type sentinel struct{ _ *byte }

// arm has the next cycle call cycle.
func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { t.cycle() })
}

// cycle runs once a cycle has ended (on the runtime's finalizer
// goroutine): busy with a steady live heap, the floor goes up and
// follows the live heap; quiet, or once the live heap has grown, it
// comes down. It arms the next.
func (t *tuner) cycle() {
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	live, busy, known := t.read()
	if known {
		if busy {
			t.spans++
		} else {
			t.spans, t.base, t.over, t.grown = 0, 0, 0, false
		}
	}
	switch {
	case !busy:
	case t.base == 0:
		t.base = live
	case live > t.base+t.base/8+growthSlack:
		// Twice in a row: one cycle may find a large object live that
		// is garbage by the next (a result on its way).
		t.over++
		t.grown = t.grown || t.over >= 2
	default:
		t.over = 0
	}
	want := defaultPercent
	if busy && !t.grown && (t.spans >= 2 || t.percent != defaultPercent) {
		// Up after two windows busy in a row: a burst shorter than that
		// (the end of startup) leaves the collector as it is.
		want = percentFor(live, t.floor)
	}
	give := t.setLocked(want)
	t.arm()
	at := t.at
	t.mu.Unlock()
	if give {
		go debug.FreeOSMemory()
	}
	if t.onCycle != nil {
		t.onCycle(at)
	}
}

// check runs every tick while the floor is up: once the program
// allocates slower than the busy rate, the floor comes down.
func (t *tuner) check() {
	t.mu.Lock()
	if t.stopped || t.timer == nil {
		t.mu.Unlock()
		return
	}
	give := false
	if _, busy, _ := t.read(); busy {
		t.timer.Reset(t.tick)
	} else {
		t.spans, t.base, t.over, t.grown = 0, 0, 0, false
		give = t.setLocked(defaultPercent)
	}
	t.mu.Unlock()
	if give {
		debug.FreeOSMemory()
	}
}

// setLocked sets GOGC to percent, and the rate's timer to run while it
// is above the default; it reports whether the floor came down, so that
// the caller gives the memory back (outside t.mu: that runs a cycle).
func (t *tuner) setLocked(percent int) (cameDown bool) {
	if percent == t.percent {
		return false
	}
	debug.SetGCPercent(percent)
	t.percent = percent
	switch {
	case percent != defaultPercent && t.timer == nil:
		t.timer = time.AfterFunc(t.tick, t.check)
	case percent == defaultPercent && t.timer != nil:
		t.timer.Stop()
		t.timer = nil
		return true
	}
	return false
}

// percentFor returns the GOGC that puts the heap goal near floor for a
// heap with live bytes live after a cycle, and never below 100: the goal
// is the larger of live × (1 + GOGC/100) and minHeap × GOGC/100.
func percentFor(live, floor uint64) int {
	if live >= floor/2 {
		return defaultPercent // GOGC 100 gives a goal at the floor or above
	}
	p := floor * defaultPercent / minHeap // where the goal's own floor reaches floor
	if live > 0 {
		p = min(p, floor*defaultPercent/live-defaultPercent) // where the live heap's growth does
	}
	return int(max(p, defaultPercent))
}

// stop ends the watching and puts GOGC back.
func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.percent != defaultPercent {
		debug.SetGCPercent(defaultPercent)
		t.percent = defaultPercent
	}
}
