//go:build !race

package wire

import "testing"

// skipAllocsUnderRace: see race_test.go. Without the race detector the
// test runs.
func skipAllocsUnderRace(*testing.T) {}
