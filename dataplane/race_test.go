//go:build race

package dataplane

// raceEnabled: the race detector is on. It changes allocation counts
// (sync.Pool drops what is put back at random), so the tests that count
// allocations do not run with it.
const raceEnabled = true
