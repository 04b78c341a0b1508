package httpguard

import (
	"net/http"
	"testing"
	"time"
)

// TestDateOfOncePerSecond: the responses of one second share one Date
// value, made once; the next second gets a new one, formatted as net/http
// formats its own.
func TestDateOfOncePerSecond(t *testing.T) {
	sec := time.Date(2026, 12, 1, 23, 3, 7, 0, time.UTC)
	a := dateOf(sec.Add(100 * time.Millisecond))
	b := dateOf(sec.Add(900 * time.Millisecond))
	if len(a) != 1 || len(b) != 1 || &a[0] != &b[0] {
		t.Fatalf("two responses of one second: %q and %q, want one shared value", a, b)
	}
	if want := sec.Format(http.TimeFormat); a[0] != want {
		t.Errorf("Date %q, want %q", a[0], want)
	}
	next := dateOf(sec.Add(time.Second).In(time.FixedZone("X", 3600)))
	if want := sec.Add(time.Second).Format(http.TimeFormat); len(next) != 1 || next[0] != want || &next[0] == &a[0] {
		t.Errorf("the next second's Date %q, want a new value %q (in GMT)", next, want)
	}
}
