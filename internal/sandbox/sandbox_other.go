//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// Command returns a plain command for Level Off; Levels On and Strict
// fail (wrapping [ErrUnsupported]): there is no sandbox on this system.
func Command(p Policy, path string, args []string, dir string) (*exec.Cmd, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Level != Off {
		return nil, fmt.Errorf("%w on %s: set the server's sandbox to off to run it unconfined", ErrUnsupported, runtime.GOOS)
	}
	exe, err := exec.LookPath(path)
	if err != nil {
		return nil, err
	}
	env := p.Env
	if env == nil {
		env = []string{}
	}
	return &exec.Cmd{Path: exe, Args: append([]string{path}, args...), Env: env, Dir: dir}, nil
}

// Check reports that this system offers no sandbox.
func Check() Support {
	return Support{OS: runtime.GOOS, Root: os.Geteuid() == 0}
}

func runInit()  { syscall.Exit(2) }
func runExec()  { syscall.Exit(2) }
func runProbe() { syscall.Exit(2) }

// Compute is Linux's: elsewhere a process cannot confine itself so.
func Compute() error {
	return fmt.Errorf("%w on %s", ErrUnsupported, runtime.GOOS)
}
