//go:build !unix

package upstream

import "os/exec"

// Without process groups, stopping a stdio server reaches only the process
// itself; its children may outlive it.
func setProcessGroup(*exec.Cmd) {}

type signal int

const (
	sigTerm signal = 15
	sigKill signal = 9
)

func signalGroup(int, signal) bool { return false }
func groupAlive(int) bool          { return false }
