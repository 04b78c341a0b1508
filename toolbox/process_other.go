//go:build !unix

package toolbox

import (
	"os"
	"os/exec"
)

// Without unix process groups, only the plugin process itself is stopped:
// helpers it started may outlive it. See docs/plugins.md.

func ownProcessGroup(*exec.Cmd) {}

// terminateGroup has no gentle signal to send here: it kills.
func terminateGroup(p *os.Process) { _ = p.Kill() }

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
