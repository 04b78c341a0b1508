//go:build unix

package upstream

import (
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
