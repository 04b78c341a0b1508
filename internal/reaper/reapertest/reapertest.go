// Package reapertest helps tests check what a SIGKILLed program leaves
// behind: the live members of a process group, read from /proc, and the
// group's reaper (see package reaper). Linux only, like reapers.
//
//	func TestMain(m *testing.M) {
//		reaper.RunIfReaper() // the reapers the tests start run this binary
//		os.Exit(m.Run())
//	}
//
//	func TestKilled(t *testing.T) {
//		reapertest.Enable(t)
//		... start a group, find its reaper with reapertest.Of(pgid) ...
//		if left := reapertest.WaitGone(pgid, 10*time.Second); len(left) > 0 { ... }
//	}
package reapertest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
)

// Enable turns reapers on for the groups started until t's cleanup, which
// restores the previous setting. The test binary must call
// reaper.RunIfReaper first thing (in TestMain or init). The setting is
// process-wide: a test that enables it must not run in parallel with tests
// that need it off.
func Enable(t testing.TB) {
	t.Helper()
	was := reaper.SetEnabled(true)
	if !reaper.Enabled() {
		t.Skip("no reapers on this system")
	}
	t.Cleanup(func() { reaper.SetEnabled(was) })
}

// Members returns the live (not zombie) processes of the group pgid.
func Members(pgid int) []int {
	pids, _ := reaper.GroupMembers(pgid)
	return pids
}

// Of returns the pid of the reaper in the group pgid, or 0.
func Of(pgid int) int {
	for _, pid := range Members(pgid) {
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if name, _, _ := bytes.Cut(argv, []byte{0}); string(name) == reaper.Name {
			return pid
		}
	}
	return 0
}

// WaitGone polls until the group pgid has no live process, for up to
// within, and returns the processes left (none once it is gone).
func WaitGone(pgid int, within time.Duration) []int {
	deadline := time.Now().Add(within)
	left := Members(pgid)
	for len(left) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		left = Members(pgid)
	}
	return left
}

// WritePID is a shell command that writes the shell's pid to file, at
// once (a rename): started in a group of its own, the shell is the
// group's leader, so the pid is the group's id. [ReadPID] reads it.
func WritePID(file string) string {
	return "echo $$ > " + file + ".tmp && mv " + file + ".tmp " + file
}

// ReadPID waits up to 20s for file to hold a pid and returns it.
func ReadPID(t testing.TB, file string) int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if pid, aerr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && aerr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after 20s", file)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitReaper polls for up to 10s for a reaper in the group pgid and
// returns its pid, or 0.
func WaitReaper(pgid int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if rp := Of(pgid); rp != 0 || time.Now().After(deadline) {
			return rp
		}
		time.Sleep(10 * time.Millisecond)
	}
}
