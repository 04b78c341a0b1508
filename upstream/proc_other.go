//go:build !unix

package upstream

import "os/exec"

// Without process groups, stopping a stdio server reaches only the process
// itself; its children may outlive it.
func setProcessGroup(*exec.Cmd)        {}
func clearParentDeathSignal(*exec.Cmd) {}
