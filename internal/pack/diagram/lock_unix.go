//go:build unix

package diagram

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// renameWhileLocked: on Unix a file can be renamed while it is open and
// locked, so the store moves a damaged file aside under its lock.
const renameWhileLocked = true

// lockFile takes an exclusive flock on f, the lock bbolt takes for a
// writable open, waiting at most timeout for another process to let go.
func lockFile(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still locked by another junction process after %s", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
