// Package filelock serializes read-modify-write cycles on a file between
// processes, with an exclusive lock on a lock file beside it:
//
//	unlock, err := filelock.Lock(path+".lock", 10*time.Second)
//	if err != nil {
//		return err
//	}
//	defer unlock()
//	// read path, change it, write it back (atomically, by rename)
//
// The lock is flock(2) on Unix and LockFileEx on Windows; the kernel
// drops it when the process dies, so a crash leaves no stale lock. It is
// advisory: only processes that take it are serialized. Elsewhere Lock
// does nothing.
package filelock

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// poll is how often a held lock is tried again.
const poll = 20 * time.Millisecond

// Lock takes the exclusive lock on the file at path, creating it (0600,
// and its directory 0700) if needed, waiting at most timeout for another
// holder to let go. unlock releases it.
func Lock(path string, timeout time.Duration) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !held {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("lock %s: still held by another process after %s", path, timeout)
		}
		time.Sleep(poll)
	}
}
