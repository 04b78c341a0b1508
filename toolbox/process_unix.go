//go:build unix

package toolbox

import (
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup makes the plugin the leader of a new process group, so
// that signals reach everything it starts.
func ownProcessGroup(c *exec.Cmd) {
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup asks the plugin's process group to stop (SIGTERM).
func terminateGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
}

// killGroup sends SIGKILL to the process group led by pid. An already
// empty group is fine.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
