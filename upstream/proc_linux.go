package upstream

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal asks Linux to kill the group leader if junction
// itself dies without stopping it.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

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
