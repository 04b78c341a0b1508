//go:build !unix

package upstream

import (
	"os"
	"os/exec"
)

// Without process groups, stopping a stdio server reaches only the process
// itself; its children may outlive it.
func setProcessGroup(*exec.Cmd) {}

type groupSignal int

const (
	sigTerm groupSignal = 15
	sigKill groupSignal = 9
)

func signalGroup(int, groupSignal) bool { return false }
func groupAlive(int, int) bool          { return false }

// sigTermOS: without SIGTERM, ask for an interrupt (an error on Windows,
// where the SIGKILL stage then kills the process).
var sigTermOS = os.Interrupt
