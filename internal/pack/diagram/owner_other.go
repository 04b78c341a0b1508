//go:build !unix

package diagram

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ownerLock without flock: the lock file exists while its process runs
// and is removed on a clean shutdown, so a crash leaves runs "running"
// until the file is removed by hand.
type ownerLock struct {
	id   string
	path string
}

func acquireOwner(dir, id string) (*ownerLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	path := filepath.Join(dir, id+".lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return nil, fmt.Errorf("owner lock: %w", err)
	}
	return &ownerLock{id: id, path: path}, nil
}

func (l *ownerLock) release() error { return os.Remove(l.path) }

func (l *ownerLock) Alive(_ context.Context, id string) (bool, error) {
	return ownerAlive(filepath.Dir(l.path), id), nil
}

// ID is the lock's owner id.
func (l *ownerLock) ID() string { return l.id }

// ownerAlive is Alive for the locks in dir.
func ownerAlive(dir, id string) bool {
	_, err := os.Stat(filepath.Join(dir, id+".lock"))
	return !errors.Is(err, os.ErrNotExist)
}

var _ Owners = (*ownerLock)(nil)
