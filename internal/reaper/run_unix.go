//go:build unix

package reaper

import (
	"fmt"
	"os/exec"
	"syscall"
)

// Run starts cmd, which must come from exec.CommandContext, in a process
// group of its own and waits for it. It is for commands that run to an
// end (a diagram's command node, a deploy command), not for servers:
//
//   - when cmd's context ends, the whole group is killed (SIGKILL), not
//     only cmd's process;
//   - when cmd's process has exited, whatever it left running in its
//     group is killed;
//   - with reapers on, a reaper in the group kills the group if this
//     program dies first (Stages{}: SIGTERM, then SIGKILL at once). If
//     the reaper cannot be started, the group is killed and Run fails.
//
// Processes that leave the group on purpose (setsid) are not reached.
// Outside unix only cmd's own process is.
func Run(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	// Before Wait reaps the leader, so that the group exists to be
	// joined; until it is released, the reaper pins the group's id, so
	// the kill after Wait cannot reach another group.
	r, rerr := Start(pgid, Stages{})
	if rerr != nil {
		signalGroup(pgid, syscall.SIGKILL)
	}
	err := cmd.Wait()
	signalGroup(pgid, syscall.SIGKILL) // what the command left, and the reaper
	r.Release()
	if rerr != nil {
		return fmt.Errorf("no reaper for the command's process group (it was killed): %w", rerr)
	}
	return err
}
