//go:build race

package dataplane

import "testing"

// skipAllocsUnderRace skips a test that counts allocations: the race
// detector changes the counts (sync.Pool drops what is put back at
// random). Such a test is named *Allocs, so that scripts/test's pass
// without the race detector runs it.
func skipAllocsUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("allocation counts differ under the race detector; scripts/test runs this without it: go test -count=1 -run 'Allocs$' ./dataplane/ ./wire/")
}
