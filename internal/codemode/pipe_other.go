//go:build !linux

package codemode

import "os"

// pipe is os.Pipe here (see pipe_linux.go).
func pipe() (r, w *os.File, err error) { return os.Pipe() }
