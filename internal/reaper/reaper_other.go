//go:build !linux

package reaper

import (
	"errors"
	"os"
	"syscall"
)

// supported: outside Linux there are no reapers (see the package doc).
const supported = false

// A Reaper is the program's handle on a reaper process, which exists on
// Linux only; here every *Reaper is nil.
type Reaper struct{}

// Start returns a nil *Reaper: there are no reapers on this system.
func Start(int, Stages) (*Reaper, error) { return nil, nil }

// PID returns 0.
func (*Reaper) PID() int { return 0 }

// Release does nothing.
func (*Reaper) Release() {}

func run([]string) { os.Exit(2) }

// GroupMembers needs /proc; it fails with errors.ErrUnsupported here.
func GroupMembers(int) ([]int, error) { return nil, errors.ErrUnsupported }

// Alive reports whether pid is a process that signal 0 reaches. Without
// /proc a zombie is not told from a live process, and where signals are
// not supported (Windows) no process is reported alive.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
