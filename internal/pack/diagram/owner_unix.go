//go:build unix

package diagram

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// An ownerLock is held by a process for as long as it may run diagrams:
// an exclusive flock on <dir>/<id>.lock. The kernel drops it when the
// process dies, so another process can tell that runs owned by id were
// interrupted.
type ownerLock struct {
	id   string
	path string
	f    *os.File
}

func acquireOwner(dir, id string) (*ownerLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	path := filepath.Join(dir, id+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("owner lock %s: %w", path, err)
	}
	return &ownerLock{id: id, path: path, f: f}, nil
}

// release drops the lock and removes its file.
func (l *ownerLock) release() error {
	os.Remove(l.path)
	return l.f.Close()
}

// Alive reports whether the process that took the lock for id still
// holds it.
func (l *ownerLock) Alive(_ context.Context, id string) (bool, error) {
	return ownerAlive(filepath.Dir(l.path), id), nil
}

// ID is the lock's owner id.
func (l *ownerLock) ID() string { return l.id }

// ownerAlive is Alive for the locks in dir.
func ownerAlive(dir, id string) bool {
	if id == "" || filepath.Base(id) != id {
		return false
	}
	path := filepath.Join(dir, id+".lock")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil {
		return true // cannot tell; do not declare a live run dead
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	os.Remove(path)
	return false
}

var _ Owners = (*ownerLock)(nil)
