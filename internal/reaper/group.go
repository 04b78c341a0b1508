package reaper

import (
	"errors"
	"log/slog"
	"os"
	"time"
)

// StopGroup stops the process group pgid in stages s: it waits for the
// group to exit, then sends SIGTERM and waits, then SIGKILL and waits.
// gone(d) waits up to d for the group to be gone. leader, if not nil, is
// signalled as well, for systems without process groups. The stages that
// send a signal are logged to logger (nil: not logged). Both a program
// stopping its group and a reaper whose program died run it.
func StopGroup(pgid int, s Stages, logger *slog.Logger, gone func(time.Duration) bool, leader *os.Process) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Stage 1: the group has its grace (a stdio server's stdin is closed).
	if gone(s.Grace) {
		return nil
	}
	// Stage 2: SIGTERM to the whole group.
	logger.Debug("still running after its grace period; sending SIGTERM to its process group", "waited", s.Grace)
	if !signalGroup(pgid, sigTerm) && leader != nil {
		leader.Signal(sigTermOS) // no process group: the leader only
	}
	if gone(s.Term) {
		return nil
	}
	// Stage 3: SIGKILL.
	logger.Warn("ignored SIGTERM; killing its process group", "waited", s.Term)
	signalGroup(pgid, sigKill)
	if leader != nil {
		leader.Kill() // the leader, where there are no process groups
	}
	// SIGKILL cannot be ignored; give a loaded machine time to finish the
	// job rather than report a failure.
	if gone(max(s.Term, 5*time.Second)) {
		return nil
	}
	return errors.New("process group did not exit after SIGKILL")
}

// WaitGone polls until no live process but except (a reaper, say) is left
// in the process group pgid (true), or until deadline fires (false).
// Outside Linux, except is not looked for: a group with a process in it
// is alive.
func WaitGone(pgid, except int, deadline <-chan time.Time) bool {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for groupAlive(pgid, except) {
		select {
		case <-tick.C:
		case <-deadline:
			return false
		}
	}
	return true
}
