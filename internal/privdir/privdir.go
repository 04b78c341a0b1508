// Package privdir makes a junction process's own temporary directories:
// the ones a sandboxed server's box needs (the mount point of its tmpfs,
// its egress proxy's socket) and a toolbox plugin's socket directory.
// Such a directory lives as long as the process uses it, and a process
// killed outright (SIGKILL, the OOM killer) never removes it: on Linux
// the next junction process to make one removes what processes that
// ended left, telling them by the process id in the name and a lock the
// maker held until it removed the directory or ended.
package privdir

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
)

// A Dir is a directory of this process's own that Make made, for what
// lives as long as the process uses it. Remove removes it.
type Dir struct {
	Path string
	held *os.File // the directory, open and locked while it is in use (Linux; nil elsewhere)
}

// Make makes a Dir in the temporary directory (TMPDIR, else /tmp),
// named junction-KIND-PID-RANDOM, PID this process's id. On Linux the
// process holds a lock on it until Remove, which the kernel lets go when
// the process ends however it ends: what a junction killed outright
// could not remove, the next junction to make such a directory removes
// first (removeStale, once per process; logger, nil for none, gets what
// it removed).
func Make(kind string, logger *slog.Logger) (*Dir, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sweep.Do(func() { removeStale(os.TempDir(), logger) })
	path, err := os.MkdirTemp("", prefix+kind+"-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, err
	}
	held, err := hold(path)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &Dir{Path: path, held: held}, nil
}

// Remove removes the directory and what it holds, and lets its lock go.
// It is safe on nil.
func (d *Dir) Remove() error {
	if d == nil {
		return nil
	}
	err := os.RemoveAll(d.Path)
	if d.held != nil {
		d.held.Close()
	}
	return err
}

// prefix begins the name of every directory Make makes.
const prefix = "junction-"

// sweep removes, once per process, what processes that ended left
// (removeStale), before the process's first directory.
var sweep sync.Once
