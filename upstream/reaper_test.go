//go:build linux

package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The reapers the tests start run this test binary again (/proc/self/exe);
// this switch makes it one before any test runs.
func init() {
	if os.Getenv(reaperEnv) == reaperEnvValue {
		runReaper(os.Args)
	}
}

// liveGroup returns the live processes of the group pgid.
func liveGroup(pgid int) []int {
	pids, _ := groupMembers(pgid)
	return pids
}

// reaperOf returns the pid of the reaper in the group pgid, or 0.
func reaperOf(pgid int) int {
	for _, pid := range liveGroup(pgid) {
		argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if name, _, _ := bytes.Cut(argv, []byte{0}); string(name) == reaperName {
			return pid
		}
	}
	return 0
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
	switch kind {
	case groupEOF:
		cmds = [2]*exec.Cmd{exec.Command("cat"), exec.Command("cat")}
	case groupStubborn:
		cmds[1] = exec.Command(os.Args[0])
		cmds[1].Env = append(os.Environ(), "UPSTREAM_FAKE=sleeper")
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
	return cmds[0], cmds[1], w
}

// waitReaper waits up to 20s for the reaper to exit and returns how.
func waitReaper(t *testing.T, r *reaper) *os.ProcessState {
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
// normally); one that ignores SIGTERM is killed, the reaper with it.
func TestReaperStopsGroupWhenParentGoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind int
		stop time.Duration // long where the group must exit within a stage
	}{
		{"exits on EOF", groupEOF, 10 * time.Second},
		{"exits on SIGTERM", groupTERM, time.Second},
		{"ignores SIGTERM", groupStubborn, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			leader, member, stdin := startGroup(t, tc.kind)
			pgid := leader.Process.Pid
			r, err := startReaper(pgid, tc.stop)
			if err != nil {
				t.Fatalf("startReaper: %v", err)
			}
			waitFor(t, "the reaper to join the group", func() bool { return reaperOf(pgid) == r.pid() })
			start := time.Now()
			r.w.Close()   // the parent is gone, and with it
			stdin.Close() // the group's stdin
			st := waitReaper(t, r)
			ws := st.Sys().(syscall.WaitStatus)
			if tc.kind == groupStubborn && (!ws.Signaled() || ws.Signal() != syscall.SIGKILL) {
				t.Errorf("reaper of a group that ignores SIGTERM ended with %v, want killed by its own SIGKILL stage", st)
			}
			if tc.kind != groupStubborn && (ws.Signaled() || ws.ExitStatus() != 0) {
				t.Errorf("reaper ended with %v, want exit status 0 (the group exited before SIGKILL)", st)
			}
			waitFor(t, "the group to be gone", func() bool { return len(liveGroup(pgid)) == 0 })
			t.Logf("%s: group stopped %v after its parent went (stage timeout %v)", tc.name, time.Since(start).Round(time.Millisecond), tc.stop)
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
	r, err := startReaper(pgid, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("startReaper: %v", err)
	}
	r.release()
	if st := r.cmd.ProcessState; st == nil || !st.Exited() || st.ExitCode() != 0 {
		t.Errorf("released reaper ended with %v, want exit status 0", st)
	}
	if n := len(liveGroup(pgid)); n != 2 {
		t.Errorf("group has %d live processes after the release, want its 2", n)
	}
}

// A reaper started by hand in a group it is not in refuses to act, so a
// stray environment variable cannot make a program signal a group.
func TestReaperOutsideGroupRefuses(t *testing.T) {
	t.Parallel()
	leader, _, _ := startGroup(t, groupTERM)
	cmd := exec.Command("/proc/self/exe", strconv.Itoa(leader.Process.Pid), "100ms")
	cmd.Args[0] = reaperName
	cmd.Env = []string{reaperEnv + "=" + reaperEnvValue}
	cmd.Stdin = strings.NewReader("") // EOF at once: would set a real reaper off
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("reaper outside its group = %v, want exit status 2", err)
	}
	if n := len(liveGroup(leader.Process.Pid)); n != 2 {
		t.Errorf("group has %d live processes, want its 2", n)
	}
}

// With reapers enabled, every stdio server gets one in its group; Close
// stops the group as before (a server that exits on stdin EOF needs no
// SIGTERM: the reaper does not count as a member still running) and then
// releases the reaper. Not parallel: it sets the process-wide switch, and
// no parallel test runs beside a sequential one.
func TestReaperBesideStdioServer(t *testing.T) {
	reapersEnabled.Store(true)
	t.Cleanup(func() { reapersEnabled.Store(false) }) // after the parallel subtests
	for _, stubborn := range []bool{false, true} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			var pidfile string
			if stubborn {
				pidfile = filepath.Join(t.TempDir(), "pids")
				env["FAKE_CHILD_PIDFILE"] = pidfile
				env["FAKE_STUBBORN"] = "1"
			}
			cfg := fakeConfig(t, "server", env)
			cfg.StopTimeout = 5 * time.Second
			if stubborn {
				cfg.StopTimeout = 200 * time.Millisecond
			}
			r, logs := newRegistry(t, nil)
			s := addReady(t, r, "g", cfg)
			pgid := s.Snapshot().PID
			var rp int
			waitFor(t, "a reaper in the server's group", func() bool { rp = reaperOf(pgid); return rp != 0 })
			members := liveGroup(pgid)
			if stubborn {
				readPids(t, pidfile)
			}
			start := time.Now()
			if err := s.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
			t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
			if left := liveGroup(pgid); len(left) != 0 {
				t.Errorf("processes %v of the group (reaper %d) alive after Close", left, rp)
			}
			if pidAlive(rp) {
				t.Errorf("reaper %d alive after Close", rp)
			}
			sentTERM := strings.Contains(logs.String(), "sending SIGTERM")
			if !stubborn && sentTERM {
				t.Errorf("Close sent SIGTERM to a server that exits on stdin EOF (group %v): the reaper was counted as a member", members)
			}
			if stubborn && !strings.Contains(logs.String(), "killing its process group") {
				t.Errorf("Close of a stubborn group did not reach SIGKILL")
			}
		})
	}
}
