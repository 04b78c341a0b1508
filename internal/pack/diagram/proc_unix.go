//go:build unix

package diagram

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the command in its own process group and makes
// cancellation kill the whole group, so a shell's children go too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
