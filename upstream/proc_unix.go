//go:build unix

package upstream

import (
	"errors"
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group, so that
// stopping it reaches every process it started (npx and uvx wrappers).
func setProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the process group pgid. It reports false when
// the group no longer exists.
func signalGroup(pgid int, sig syscall.Signal) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, sig)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// sigTermOS is SIGTERM for os.Process.Signal.
var sigTermOS = syscall.SIGTERM
