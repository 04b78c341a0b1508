//go:build !unix

package reaper

import "os"

// Without process groups, a stop reaches only the leader StopGroup is
// given; its children may outlive it.

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
