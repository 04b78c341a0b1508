package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 16 * mib, 400},       // the goal's own floor decides: 4 MiB × 4
		{1 * mib, 16 * mib, 400}, // 1 MiB × 5 is below the floor; 4 MiB × 4 reaches it
		{2 * mib, 16 * mib, 400},
		{4 * mib, 16 * mib, 300}, // 4 MiB × (1 + 3) = 16 MiB
		{6 * mib, 16 * mib, 166},
		{8 * mib, 16 * mib, 100}, // GOGC 100 reaches the floor by itself
		{100 * mib, 16 * mib, 100},
		{1 * mib, 64 * mib, 1600},
	} {
		if got := percentFor(c.live, c.floor); got != c.want {
			t.Errorf("percentFor(%d MiB live, %d MiB floor) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

// gogc is the GOGC the runtime runs with now.
func gogc(t *testing.T) uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatal("no /gc/gogc:percent metric")
	}
	return s[0].Value.Uint64()
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// watching returns a tuner on clock with a 64 MiB floor, watching (and
// stopped when the test ends), whose rate the test measures itself at
// ticks (check), and the times it handled cycles at.
func watching(t *testing.T, clock *fakeClock) (*tuner, <-chan time.Time) {
	// The tuner starts from the runtime's default, as Start does when the
	// environment sets no GOGC; whatever the test runs with comes back after.
	old := debug.SetGCPercent(defaultPercent)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	tn := newTuner(Options{Floor: 64 << 20, Tick: time.Hour, now: clock.Now})
	handled := make(chan time.Time, 64)
	tn.onCycle = func(at time.Time) {
		select {
		case handled <- at:
		default: // never hold up the finalizer goroutine
		}
	}
	tn.arm()
	t.Cleanup(tn.stop)
	return tn, handled
}

// cycleAfter moves the clock on by d, runs a cycle, and waits until the
// tuner has handled one at the clock's new time: the first one handled
// at a new time measures the rate and decides. The runtime runs other
// cycles too (for the test's allocations), and the tuner handles each on
// the finalizer goroutine, whenever that gets to it. So:
//   - a cycle runs before the clock moves, so that whatever cycle is
//     handled at the new time reads a live heap marked after the test's
//     last allocation, not one of before it (which once made a heap
//     growing 4 MiB a second look steady);
//   - a cycle handled at the old time may still be arming the next when
//     the one after the clock moved starts, and that one then finds the
//     new sentinel alive: the cycles go on until one is handled at the
//     new time.
func cycleAfter(t *testing.T, clock *fakeClock, d time.Duration, handled <-chan time.Time) {
	t.Helper()
	runtime.GC()
	clock.Add(d)
	now := clock.Now()
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		again := time.After(50 * time.Millisecond)
	wait:
		for {
			select {
			case at := <-handled:
				if at.Equal(now) {
					return
				}
			case <-again:
				break wait
			case <-deadline:
				t.Fatal("no cycle was handled at the new time in 10 s of cycles")
			}
		}
	}
}

// finalized returns once a finalizer queued after two cycles from now
// has run, and so every finalizer queued before it.
func finalized(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { close(done) })
	runtime.GC()
	runtime.GC()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no finalizer ran 10 s after two cycles")
	}
}

// sink keeps what the tests allocate from being optimized away.
var sink []byte

// allocate allocates n bytes of garbage.
func allocate(n int) {
	sink = make([]byte, n)
	sink = nil
}

// The floor goes up at a cycle while the program allocates fast, stays
// up while it does, and comes down once it allocates slowly, at a tick
// or at a cycle; stop puts GOGC back.
func TestFloorFollowsRate(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	tn, handled := watching(t, clock)
	// A small object without pointers, allocated next and kept: a
	// sentinel that shared its block would never be finalized.
	keep := new([8]byte)
	defer runtime.KeepAlive(keep)
	percent := func() int {
		tn.mu.Lock()
		defer tn.mu.Unlock()
		return tn.percent
	}
	cycle := func(d time.Duration) { cycleAfter(t, clock, d, handled) }
	// busy is two seconds of 16 MiB a second, a cycle after each: the
	// floor goes up.
	busy := func() {
		for range 2 {
			allocate(16 << 20)
			cycle(time.Second)
		}
	}
	// 16 MiB in one second: busy, but one window is not enough.
	allocate(16 << 20)
	cycle(time.Second)
	if p := percent(); p != defaultPercent {
		t.Fatalf("GOGC %d after one busy second, want %d until a second one", p, defaultPercent)
	}
	// Another: the floor goes up.
	allocate(16 << 20)
	cycle(time.Second)
	up := percent()
	if up <= defaultPercent {
		t.Fatalf("GOGC %d after 16 MiB in a second, want above %d (a small heap, a 64 MiB floor)", up, defaultPercent)
	}
	if got := gogc(t); got != uint64(up) {
		t.Errorf("runtime GOGC %d, want %d", got, up)
	}
	// Still busy at the next tick.
	allocate(16 << 20)
	clock.Add(time.Second)
	tn.check()
	if p := percent(); p != up {
		t.Errorf("GOGC %d at a busy tick, want %d kept", p, up)
	}
	// Quiet at a tick: the floor comes down, and the memory goes back.
	clock.Add(time.Hour)
	tn.check()
	if p := percent(); p != defaultPercent {
		t.Errorf("GOGC %d at a quiet tick, want %d", p, defaultPercent)
	}
	if got := gogc(t); got != defaultPercent {
		t.Errorf("runtime GOGC %d after a quiet tick, want %d", got, defaultPercent)
	}
	// Up again, then quiet at a cycle.
	busy()
	if p := percent(); p <= defaultPercent {
		t.Errorf("GOGC %d busy again, want above %d", p, defaultPercent)
	}
	cycle(time.Hour)
	if p := percent(); p != defaultPercent {
		t.Errorf("GOGC %d at a quiet cycle, want %d", p, defaultPercent)
	}
	// Up, then stop: GOGC goes back, and no cycle is handled after.
	busy()
	if p := percent(); p <= defaultPercent {
		t.Errorf("GOGC %d busy once more, want above %d", p, defaultPercent)
	}
	tn.stop()
	if got := gogc(t); got != defaultPercent {
		t.Errorf("runtime GOGC %d after stop, want %d", got, defaultPercent)
	}
	// A cycle handled while stop ran may still be sending: finalizers
	// run one after another, so once a later one has run it has sent.
	finalized(t)
	for len(handled) > 0 {
		<-handled
	}
	finalized(t)
	select {
	case <-handled:
		t.Error("a cycle was handled after stop")
	default:
	}
}

// A live heap that grows over a busy spell (objects that stay, made
// fast) brings the floor down and keeps it down, however fast the
// program allocates, until it is quiet.
func TestGrowingHeapKeepsDefault(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	tn, handled := watching(t, clock)
	var kept [][]byte
	for i := range 4 {
		kept = append(kept, make([]byte, 4<<20)) // stays: the live heap grows by 4 MiB a second
		cycleAfter(t, clock, time.Second, handled)
		tn.mu.Lock()
		p := tn.percent
		tn.mu.Unlock()
		// The first busy second sees the heap as it is; the next two find
		// it grown by half or more, and the floor is down from then on.
		if i > 1 && p != defaultPercent {
			t.Fatalf("GOGC %d after %d s of a live heap growing 4 MiB a second, want %d", p, i+1, defaultPercent)
		}
	}
	runtime.KeepAlive(kept)
	// A quiet cycle (with the floor down no timer runs), then busy with
	// garbage only: the floor goes up again.
	cycleAfter(t, clock, time.Hour, handled)
	for range 2 {
		allocate(16 << 20)
		cycleAfter(t, clock, time.Second, handled)
	}
	tn.mu.Lock()
	p := tn.percent
	tn.mu.Unlock()
	if p == defaultPercent {
		t.Errorf("GOGC %d busy again after a quiet spell, want the floor up", p)
	}
}

// One Start watches at a time: GOGC is the process's.
func TestOneWatcher(t *testing.T) {
	t.Setenv("GOGC", "") // as when the environment sets none
	old := debug.SetGCPercent(defaultPercent)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	stop := Start(Options{})
	defer stop()
	if !running.Load() {
		t.Fatal("Start is not watching")
	}
	second := Start(Options{})
	second() // a no-op: the first goes on
	if !running.Load() {
		t.Error("the second Start's stop ended the first's watch")
	}
	stop()
	if running.Load() {
		t.Error("still watching after stop")
	}
}

// With GOGC in the environment, Start leaves the runtime alone.
func TestEnvironmentChooses(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := gogc(t)
	stop := Start(Options{Rate: 1})
	defer stop()
	if running.Load() {
		t.Fatal("Start watches with GOGC set in the environment")
	}
	finalized(t) // any cycle Start watched would have been handled
	if got := gogc(t); got != before {
		t.Errorf("runtime GOGC %d with GOGC set in the environment, want it left at %d", got, before)
	}
}
