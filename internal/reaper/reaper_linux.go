package reaper

import (
	"bytes"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/junction-mcp/junction/internal/memtrim"
)

// supported: Linux lets a reaper watch its group through /proc
// (groupAlive) and leave itself out of it.
const supported = true

// releaseByte, written on a reaper's pipe, tells it to exit and leave the
// group alone.
const releaseByte = 'r'

// A Reaper is the program's handle on a reaper process (see the package
// doc). A nil *Reaper is valid: its methods do nothing.
type Reaper struct {
	cmd *exec.Cmd
	w   *os.File // the reaper's stdin; closed without releaseByte, it sets the reaper off
}

// Start starts a reaper in the process group pgid, which stops the group
// in stages s if this program ends without releasing it. It returns a nil
// *Reaper and no error when reapers are off (see [Enable]). The group's
// leader must not have been reaped yet: the group must exist to be
// joined.
func Start(pgid int, s Stages) (*Reaper, error) {
	if !enabled.Load() {
		return nil, nil
	}
	return start(pgid, s)
}

func start(pgid int, s Stages) (*Reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		// This program, even if its file was replaced or removed since
		// it started.
		Path:        "/proc/self/exe",
		Args:        []string{Name, strconv.Itoa(pgid), s.Grace.String(), s.Term.String()},
		Env:         []string{envName + "=" + envValue},
		Dir:         "/", // pins no directory
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pgid: pgid},
	}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &Reaper{cmd: cmd, w: w}, nil
}

// PID returns the reaper's process id; 0 for a nil *Reaper.
func (r *Reaper) PID() int {
	if r == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Release tells the reaper to exit without touching the group, and waits
// for it. The reaper may be gone already: a SIGKILL to its group reaches
// it too, which is how a program that kills the group anyway ends its
// reaper at once. After Release the group's id is no longer pinned.
func (r *Reaper) Release() {
	if r == nil {
		return
	}
	r.w.Write([]byte{releaseByte}) // EPIPE when it is gone; nothing to do then
	r.w.Close()
	stuck := time.AfterFunc(5*time.Second, func() { r.cmd.Process.Kill() })
	r.cmd.Wait()
	stuck.Stop()
}

// run is the reaper's main: args are its argv (Name, the process group,
// the two stage timeouts). It exits with syscall.Exit, which skips what
// os.Exit runs first (a race-enabled binary sleeps a second there), since
// it has nothing to flush.
func run(args []string) {
	syscall.Exit(reap(args))
}

// reap waits for its stdin to deliver releaseByte (exit, leave the group
// alone) or to end (the program died: stop the group).
func reap(args []string) int {
	if len(args) != 4 || args[0] != Name {
		return 2
	}
	pgid, err := strconv.Atoi(args[1])
	if err != nil || pgid <= 1 {
		return 2
	}
	var s Stages
	if s.Grace, err = time.ParseDuration(args[2]); err != nil || s.Grace < 0 {
		return 2
	}
	if s.Term, err = time.ParseDuration(args[3]); err != nil || s.Term < 0 {
		return 2
	}
	// Only a member stops the group: while the reaper is in it, the group
	// exists, so its id cannot have been given to another group by the
	// time the reaper signals it.
	if syscall.Getpgrp() != pgid {
		return 2
	}
	// The group's SIGTERM stage reaches the reaper too; so may a
	// terminal's signals.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	// From here on the reaper waits, with none of the program's startup
	// code in use: it keeps only its own memory (about 3 MiB, against
	// the program's 15 or more).
	memtrim.Release()
	var b [1]byte
	if n, _ := os.Stdin.Read(b[:]); n == 1 && b[0] == releaseByte {
		return 0
	}
	// The program is gone (and with it a stdio server's stdin: the grace
	// stage has begun). The SIGKILL stage ends the reaper as well.
	self := os.Getpid()
	gone := func(d time.Duration) bool {
		deadline := time.NewTimer(d)
		defer deadline.Stop()
		return WaitGone(pgid, self, deadline.C)
	}
	if StopGroup(pgid, s, nil, gone, nil) != nil {
		return 1
	}
	return 0
}

// GroupMembers returns the live (not zombie) processes of the group pgid,
// read from /proc.
func GroupMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if state, pgrp, ok := parseStat(b); ok && pgrp == pgid && state != 'Z' && state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// Alive reports whether pid is a live process. Zombies count as dead:
// orphans become zombies of PID 1, which in a container may never reap
// them.
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	state, _, ok := parseStat(b)
	return ok && state != 'Z' && state != 'X'
}

// groupAlive reports whether a live (not zombie) process other than
// except is in the group pgid. Orphaned members become zombies of PID 1,
// which in a container may never reap them, so kill(-pgid, 0) alone would
// wait for ever.
func groupAlive(pgid, except int) bool {
	if !signalGroup(pgid, 0) {
		return false
	}
	pids, err := GroupMembers(pgid)
	if err != nil {
		return true
	}
	for _, pid := range pids {
		if pid != except {
			return true
		}
	}
	return false
}

// parseStat returns the state and process group of a /proc/<pid>/stat
// line: "pid (comm) state ppid pgrp ...". comm may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (state byte, pgrp int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pgrp, true
}
