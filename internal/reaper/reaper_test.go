//go:build linux

package reaper

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary is the reaper the tests start (/proc/self/exe), and,
// with envSleeper set, a sleeper that ignores SIGTERM, and says so on
// stdout once it does.
const envSleeper = "REAPER_TEST_SLEEPER"

// sleeperReady is the sleeper's line once it ignores SIGTERM.
const sleeperReady = "ignoring SIGTERM\n"

func TestMain(m *testing.M) {
	RunIfReaper()
	if os.Getenv(envSleeper) != "" {
		signal.Ignore(syscall.SIGTERM)
		os.Stdout.WriteString(sleeperReady)
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// members returns the live processes of the group pgid.
func members(pgid int) []int {
	pids, _ := GroupMembers(pgid)
	return pids
}

// A group for a reaper to watch: a leader and one member, which exit
// when the test's end of their stdin closes (groupEOF), on SIGTERM
// (groupTERM), or only on SIGKILL (groupStubborn: the member ignores
// SIGTERM).
const (
	groupEOF = iota
	groupTERM
	groupStubborn
)

// startGroup starts a group of the kind given. Closing stdin is the
// parent's death as the group sees it. The processes are killed and
// reaped at cleanup.
func startGroup(t *testing.T, kind int) (leader, member *exec.Cmd, stdin io.Closer) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmds := [2]*exec.Cmd{exec.Command("sleep", "300"), exec.Command("sleep", "301")}
	var ready io.Reader // the sleeper's stdout
	switch kind {
	case groupEOF:
		cmds = [2]*exec.Cmd{exec.Command("cat"), exec.Command("cat")}
	case groupStubborn:
		cmds[1] = exec.Command(os.Args[0])
		cmds[1].Env = append(os.Environ(), envSleeper+"=1")
		if ready, err = cmds[1].StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cmds {
		c.Stdin = r
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if i > 0 {
			c.SysProcAttr.Pgid = cmds[0].Process.Pid
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c.Process.Kill()
			c.Wait()
		})
	}
	t.Cleanup(func() { w.Close() })
	if ready != nil {
		// A SIGTERM sent before the sleeper ignores it would stop it, and
		// the group would not need the SIGKILL the test is about.
		if line, err := bufio.NewReader(ready).ReadString('\n'); line != sleeperReady {
			t.Fatalf("the sleeper said %q (%v), want %q", line, err, sleeperReady)
		}
	}
	return cmds[0], cmds[1], w
}

// waitReaper waits up to 20s for the reaper to exit and returns how.
func waitReaper(t *testing.T, r *Reaper) *os.ProcessState {
	t.Helper()
	stuck := time.AfterFunc(20*time.Second, func() { r.cmd.Process.Kill() })
	defer stuck.Stop()
	r.cmd.Wait()
	if !stuck.Stop() {
		t.Fatal("the reaper did not exit within 20s")
	}
	return r.cmd.ProcessState
}

// When its parent goes (here: the pipe closes, as when the parent is
// killed), the reaper stops the group in stages: a group that exits on
// stdin EOF or on SIGTERM is gone without SIGKILL (the reaper exits
// normally); one that ignores SIGTERM is killed, the reaper with it. A
// zero grace sends SIGTERM at once, as for a plugin, whose stdin tells it
// nothing.
func TestReaperStopsGroupWhenParentGoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		kind   int
		stages Stages // long where the group must exit within a stage
		within time.Duration
	}{
		{"exits on EOF", groupEOF, Stages{Grace: 10 * time.Second, Term: 10 * time.Second}, 5 * time.Second},
		{"exits on SIGTERM", groupTERM, Stages{Grace: time.Second, Term: 10 * time.Second}, 5 * time.Second},
		{"exits on SIGTERM at once", groupTERM, Stages{Term: 10 * time.Second}, time.Second},
		{"ignores SIGTERM", groupStubborn, Stages{Grace: 100 * time.Millisecond, Term: 100 * time.Millisecond}, 5 * time.Second},
		{"killed at once", groupStubborn, Stages{}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			leader, member, stdin := startGroup(t, tc.kind)
			pgid := leader.Process.Pid
			r, err := start(pgid, tc.stages)
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			start := time.Now()
			r.w.Close()   // the parent is gone, and with it
			stdin.Close() // the group's stdin
			st := waitReaper(t, r)
			ws := st.Sys().(syscall.WaitStatus)
			killed := tc.kind == groupStubborn
			if killed && (!ws.Signaled() || ws.Signal() != syscall.SIGKILL) {
				t.Errorf("reaper of a group that ignores SIGTERM ended with %v, want killed by its own SIGKILL stage", st)
			}
			if !killed && (ws.Signaled() || ws.ExitStatus() != 0) {
				t.Errorf("reaper ended with %v, want exit status 0 (the group exited before SIGKILL)", st)
			}
			deadline := time.NewTimer(20 * time.Second)
			defer deadline.Stop()
			if !WaitGone(pgid, 0, deadline.C) {
				t.Fatalf("processes %v of the group alive 20s after its parent went", members(pgid))
			}
			took := time.Since(start)
			if took > tc.within {
				t.Errorf("group gone %v after its parent went, want within %v", took, tc.within)
			}
			t.Logf("%s: group stopped %v after its parent went (stages %+v)", tc.name, took.Round(time.Millisecond), tc.stages)
			for _, c := range []*exec.Cmd{leader, member} {
				c.Wait()
				if tc.kind != groupEOF && c.ProcessState.Success() {
					t.Errorf("process %d exited normally; want it stopped by a signal", c.Process.Pid)
				}
			}
		})
	}
}

// A released reaper exits and leaves the group alone.
func TestReaperRelease(t *testing.T) {
	t.Parallel()
	leader, _, _ := startGroup(t, groupTERM)
	pgid := leader.Process.Pid
	r, err := start(pgid, Stages{Grace: 100 * time.Millisecond, Term: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	r.Release()
	if st := r.cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
		t.Errorf("released reaper ended with %v, want exit status 0", st)
	}
	if n := len(members(pgid)); n != 2 {
		t.Errorf("group has %d live processes after the release, want its 2", n)
	}
}

// A reaper killed with its group (the quick way to end a group and its
// reaper) is released without complaint, and the group is gone.
func TestReaperKilledWithGroup(t *testing.T) {
	t.Parallel()
	leader, member, _ := startGroup(t, groupStubborn)
	pgid := leader.Process.Pid
	r, err := start(pgid, Stages{Term: time.Minute})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	leader.Wait()
	member.Wait()
	r.Release()
	if ws := r.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("reaper ended with %v, want killed with its group", r.cmd.ProcessState)
	}
	if left := members(pgid); len(left) != 0 {
		t.Errorf("processes %v of the group alive", left)
	}
}

// A reaper started by hand in a group it is not in refuses to act, so a
// stray environment variable cannot make a program signal a group; so
// do bad arguments.
func TestReaperRefuses(t *testing.T) {
	t.Parallel()
	leader, _, _ := startGroup(t, groupTERM)
	pgid := strconv.Itoa(leader.Process.Pid)
	for _, args := range [][]string{
		{Name, pgid, "100ms", "100ms"},   // not in the group
		{Name, pgid, "100ms"},            // the old form
		{"junction", pgid, "0s", "0s"},   // not named a reaper
		{Name, "1", "0s", "0s"},          // init's group
		{Name, pgid, "-1s", "0s"},        // negative stage
		{Name, pgid, "0s", "forever"},    // no duration
		{Name, "pgid", "100ms", "100ms"}, // no group
	} {
		cmd := exec.Command("/proc/self/exe", args[1:]...)
		cmd.Args[0] = args[0]
		cmd.Env = []string{envName + "=" + envValue}
		cmd.Stdin = strings.NewReader("") // EOF at once: would set a real reaper off
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("reaper %q = %v, want exit status 2", args, err)
		}
	}
	if n := len(members(leader.Process.Pid)); n != 2 {
		t.Errorf("group has %d live processes, want its 2", n)
	}
}

// Start starts no reaper until reapers are turned on.
func TestStartNeedsEnable(t *testing.T) {
	t.Parallel()
	leader, _, _ := startGroup(t, groupTERM)
	if r, err := Start(leader.Process.Pid, Stages{}); r != nil || err != nil {
		r.Release()
		t.Errorf("Start with reapers off = %v, %v; want nil, nil", r, err)
	}
}

// StopGroup reaches SIGKILL only for a group that ignores SIGTERM, and
// logs the stages it reaches.
func TestStopGroup(t *testing.T) {
	t.Parallel()
	for _, kind := range []int{groupEOF, groupTERM, groupStubborn} {
		t.Run(strconv.Itoa(kind), func(t *testing.T) {
			t.Parallel()
			leader, member, stdin := startGroup(t, kind)
			pgid := leader.Process.Pid
			stdin.Close()
			// The test is their parent: reap them as they exit, so that
			// they are not zombies of a live process.
			done := make(chan struct{})
			go func() {
				leader.Wait()
				member.Wait()
				close(done)
			}()
			var log strings.Builder
			logger := newLogger(&log)
			gone := func(d time.Duration) bool {
				deadline := time.NewTimer(d)
				defer deadline.Stop()
				return WaitGone(pgid, 0, deadline.C)
			}
			grace := 200 * time.Millisecond
			if kind == groupEOF {
				grace = 10 * time.Second // cat exits on EOF within it
			}
			if err := StopGroup(pgid, Stages{Grace: grace, Term: 200 * time.Millisecond}, logger, gone, nil); err != nil {
				t.Errorf("StopGroup = %v", err)
			}
			<-done
			term, kill := strings.Contains(log.String(), "sending SIGTERM"), strings.Contains(log.String(), "killing its process group")
			if want := kind != groupEOF; term != want {
				t.Errorf("SIGTERM logged: %v, want %v; log:\n%s", term, want, log.String())
			}
			if want := kind == groupStubborn; kill != want {
				t.Errorf("SIGKILL logged: %v, want %v; log:\n%s", kill, want, log.String())
			}
		})
	}
}

// BenchmarkStart measures what a reaper adds to a short-lived group:
// start a process in a group of its own, then end the group with one
// SIGKILL (which ends its reaper too) and reap it, without a reaper and
// with one.
func BenchmarkStart(b *testing.B) {
	for _, reaped := range []bool{false, true} {
		b.Run(map[bool]string{false: "none", true: "reaper"}[reaped], func(b *testing.B) {
			for b.Loop() {
				c := exec.Command("true")
				c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
				var r *Reaper
				if reaped {
					var err error
					if r, err = start(c.Process.Pid, Stages{}); err != nil {
						b.Fatal(err)
					}
				}
				c.Wait()
				syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				r.Release()
			}
		})
	}
}
