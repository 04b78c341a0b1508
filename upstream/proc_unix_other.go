//go:build unix && !linux

package upstream

import (
	"os/exec"
	"syscall"
)

func setParentDeathSignal(*syscall.SysProcAttr) {}
func clearParentDeathSignal(*exec.Cmd)          {}
