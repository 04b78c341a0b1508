//go:build linux

package reaper_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/reaper/reapertest"
)

// waitGroupGone fails t unless the group pgid is gone within 10s.
func waitGroupGone(t *testing.T, pgid int, what string) time.Duration {
	t.Helper()
	start := time.Now()
	if left := reapertest.WaitGone(pgid, 10*time.Second); len(left) != 0 {
		t.Fatalf("%s: processes %v of the group alive after 10s", what, left)
	}
	return time.Since(start)
}

// shell is a command writing its group's id (its own pid) to a file, then
// running script.
func shell(ctx context.Context, pidfile, script string) *exec.Cmd {
	return exec.CommandContext(ctx, "sh", "-c", reapertest.WritePID(pidfile)+"; "+script)
}

// What a command leaves running in its group is killed when it exits;
// the end of its context kills the whole group, not only the command.
func TestRunKillsGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
		timeout      time.Duration
	}{
		{"leftover after exit", "sleep 300 >/dev/null 2>&1 &", time.Minute},
		{"context ends", "sleep 300 & sleep 301", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
			defer cancel()
			cmd := shell(ctx, pidfile, tc.script)
			start := time.Now()
			err := reaper.Run(cmd)
			took := time.Since(start)
			pgid := reapertest.ReadPID(t, pidfile)
			if tc.timeout == time.Minute && err != nil {
				t.Errorf("Run = %v", err)
			}
			if tc.timeout < time.Minute && (err == nil || ctx.Err() == nil) {
				t.Errorf("Run = %v with context error %v, want a killed command after the timeout", err, ctx.Err())
			}
			if took > 10*time.Second {
				t.Errorf("Run took %v", took)
			}
			waitGroupGone(t, pgid, tc.name)
		})
	}
}

// With reapers on, the group holds one while the command runs, and
// neither is left after Run. Not parallel: it sets the process-wide
// switch.
func TestRunWithReaper(t *testing.T) {
	reapertest.Enable(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- reaper.Run(shell(ctx, pidfile, "sleep 300 & sleep 301")) }()
	pgid := reapertest.ReadPID(t, pidfile)
	rp := reapertest.WaitReaper(pgid)
	if rp == 0 {
		t.Errorf("no reaper in the command's group %v", reapertest.Members(pgid))
	}
	cancel()
	if err := <-done; err == nil {
		t.Errorf("Run of a cancelled command = nil")
	}
	waitGroupGone(t, pgid, "cancelled")
	if rp != 0 && reaper.Alive(rp) {
		t.Errorf("reaper %d alive after Run", rp)
	}
}

// The point of it all: a program SIGKILLed while Run waits leaves
// nothing of the command's group behind. The program is this test binary
// in envRunner mode.
func TestRunProgramKilled(t *testing.T) {
	t.Parallel()
	for _, reaped := range []bool{true, false} {
		t.Run(fmt.Sprintf("reaper=%v", reaped), func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pid")
			prog := exec.Command(os.Args[0], "-test.run=^$")
			prog.Env = append(os.Environ(), envRunner+"="+pidfile, envRunnerReaped+"="+strconv.FormatBool(reaped))
			if err := prog.Start(); err != nil {
				t.Fatal(err)
			}
			pgid := reapertest.ReadPID(t, pidfile)
			t.Cleanup(func() {
				if len(reapertest.Members(pgid)) > 0 { // the group exists: its id is its own
					syscall.Kill(-pgid, syscall.SIGKILL)
				}
			})
			if reaped && reapertest.WaitReaper(pgid) == 0 {
				t.Fatalf("no reaper in the command's group %v", reapertest.Members(pgid))
			}
			n := len(reapertest.Members(pgid))
			prog.Process.Kill()
			prog.Wait()
			if !reaped {
				// Without a reaper the group outlives the program: what
				// the reaper is for.
				if len(reapertest.WaitGone(pgid, 300*time.Millisecond)) == 0 {
					t.Errorf("the group went without a reaper; the test shows nothing")
				}
				return
			}
			took := waitGroupGone(t, pgid, "program killed")
			t.Logf("program SIGKILLed: its command's group (%d processes, reaper included) gone %v later", n, took.Round(time.Millisecond))
		})
	}
}

// envRunner makes the test binary a program that runs a command with Run
// (writing its group's id to the file named) until it is killed.
const (
	envRunner       = "REAPER_TEST_RUNNER"
	envRunnerReaped = "REAPER_TEST_RUNNER_REAPED"
)

func init() {
	pidfile := os.Getenv(envRunner)
	if pidfile == "" {
		return
	}
	reaper.SetEnabled(os.Getenv(envRunnerReaped) == "true")
	err := reaper.Run(shell(context.Background(), pidfile, "sleep 300 & sleep 301"))
	fmt.Fprintln(os.Stderr, "runner: command ended:", err)
	os.Exit(1)
}
