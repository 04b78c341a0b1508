//go:build unix

package cli

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in its own session, so it survives the terminal that
// started it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
