//go:build unix

package reaper

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to the process group pgid. It reports false when
// the group no longer exists.
func signalGroup(pgid int, sig syscall.Signal) bool {
	if pgid <= 0 {
		return false
	}
	err := syscall.Kill(-pgid, sig)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// sigTermOS is SIGTERM for os.Process.Signal.
var sigTermOS = syscall.SIGTERM
