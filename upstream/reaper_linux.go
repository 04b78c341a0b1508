package upstream

import (
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// reaperSupported: Linux lets a reaper watch its group through /proc
// (groupAlive) and exclude itself from it.
const reaperSupported = true

// releaseByte, written on a reaper's pipe, tells it to exit and leave the
// group alone.
const releaseByte = 'r'

// reaper is the parent's handle on a reaper process (see EnableReaper).
type reaper struct {
	cmd *exec.Cmd
	w   *os.File // the reaper's stdin; closed without releaseByte, it sets the reaper off
}

// startReaper starts a reaper in the process group pgid, whose leader
// must not have been reaped yet (the group must exist to be joined). stop
// is the reaper's wait at each stage of stopping the group.
func startReaper(pgid int, stop time.Duration) (*reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		// This program, even if its file was replaced or removed since
		// it started.
		Path:        "/proc/self/exe",
		Args:        []string{reaperName, strconv.Itoa(pgid), stop.String()},
		Env:         []string{reaperEnv + "=" + reaperEnvValue},
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
	return &reaper{cmd: cmd, w: w}, nil
}

// pid returns the reaper's process id; 0 for a nil reaper.
func (r *reaper) pid() int {
	if r == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// release tells the reaper to exit without touching the group, and
// waits for it (it may be gone already: the SIGKILL stage of stopping the
// group reaches it too). Safe on a nil reaper.
func (r *reaper) release() {
	if r == nil {
		return
	}
	r.w.Write([]byte{releaseByte}) // EPIPE when it is gone; nothing to do then
	r.w.Close()
	stuck := time.AfterFunc(5*time.Second, func() { r.cmd.Process.Kill() })
	r.cmd.Wait()
	stuck.Stop()
}

// clearParentDeathSignal removes the parent-death signal setProcessGroup
// gives a server's leader: with a reaper, the leader is stopped in stages
// like the rest of its group, not killed at once. (The signal also fires
// when the thread that started the process exits, not only the process:
// a server started from a goroutine locked to a thread that then ends
// would be killed at once.)
func clearParentDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr != nil {
		cmd.SysProcAttr.Pdeathsig = 0
	}
}

// runReaper is the reaper's main: args are its argv (reaperName, the
// process group, the stage timeout). It waits for its stdin to deliver
// releaseByte (exit, leave the group alone) or to end (the parent died:
// stop the group). It exits with syscall.Exit, which skips what os.Exit
// runs first (a race-enabled binary sleeps a second there), since it has
// nothing to flush.
func runReaper(args []string) {
	code := reap(args)
	syscall.Exit(code)
}

func reap(args []string) int {
	if len(args) != 3 || args[0] != reaperName {
		return 2
	}
	pgid, err := strconv.Atoi(args[1])
	if err != nil || pgid <= 1 {
		return 2
	}
	stop, err := time.ParseDuration(args[2])
	if err != nil || stop <= 0 {
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
	var b [1]byte
	if n, _ := os.Stdin.Read(b[:]); n == 1 && b[0] == releaseByte {
		return 0
	}
	// The parent is gone, and with it the server's stdin: stage 1 has
	// begun. The SIGKILL stage ends the reaper as well.
	self := os.Getpid()
	gone := func(d time.Duration) bool {
		deadline := time.NewTimer(d)
		defer deadline.Stop()
		return pollGroupGone(pgid, self, deadline.C)
	}
	if stopGroup(pgid, stop, slog.New(slog.DiscardHandler), gone, nil) != nil {
		return 1
	}
	return 0
}
