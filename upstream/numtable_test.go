package upstream

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestNumTable runs a numTable beside a map through calls that start in
// order and end out of order, some of them long after many later ones
// (whose slots are then taken), and checks every read against the map.
func TestNumTable(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, seed))
		var tab numTable[int]
		want := make(map[uint64]*int)
		var next uint64
		peak := 0
		for step := range 20000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(want) == 0:
				next++
				v := int(next)
				tab.put(next, &v)
				want[next] = &v
			case r < 9:
				// Mostly the oldest calls end; some numbers stay long.
				var n uint64
				for k := range want {
					if n == 0 || k < n {
						n = k
					}
				}
				if rng.IntN(20) == 0 {
					n = next // the newest instead, leaving the oldest waiting
				}
				if got := tab.take(n); got != want[n] {
					t.Fatalf("seed %d step %d: take(%d) = %v, want %v", seed, step, n, got, want[n])
				}
				delete(want, n)
			default:
				n := uint64(rng.IntN(int(next) + 2))
				if got := tab.get(n); got != want[n] {
					t.Fatalf("seed %d step %d: get(%d) = %v, want %v", seed, step, n, got, want[n])
				}
			}
			peak = max(peak, len(want))
			if tab.len() != len(want) {
				t.Fatalf("seed %d step %d: len = %d, want %d", seed, step, tab.len(), len(want))
			}
		}
		got := maps.Collect(tab.all())
		if !maps.Equal(got, want) {
			t.Fatalf("seed %d: all() yields %d records, want %d", seed, len(got), len(want))
		}
		if len(tab.slots) > max(16, 4*peak) {
			// Growth follows the calls in flight at once, not their numbers.
			t.Errorf("seed %d: %d slots for at most %d records at once", seed, len(tab.slots), peak)
		}
	}
}

// TestNumTableSpill keeps one call waiting while thousands of later ones
// come and go through its slot, then takes everything out with all.
func TestNumTableSpill(t *testing.T) {
	var tab numTable[int]
	first := 1
	tab.put(1, &first)
	for n := uint64(2); n < 5000; n++ {
		v := int(n)
		tab.put(n, &v)
		if tab.get(n) != &v || tab.take(n) != &v || tab.get(n) != nil {
			t.Fatalf("call %d: not kept and taken", n)
		}
	}
	if len(tab.slots) != 16 {
		t.Errorf("%d slots for at most two calls at once, want 16", len(tab.slots))
	}
	for n, v := range tab.all() {
		if n != 1 || v != &first {
			t.Errorf("all() yields %d, want only 1", n)
		}
		tab.take(n)
	}
	if tab.len() != 0 || tab.get(1) != nil {
		t.Errorf("after taking all: len %d, get(1) %v", tab.len(), tab.get(1))
	}
}
