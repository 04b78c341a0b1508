//go:build !unix

package diagram

import (
	"os"
	"time"
)

// renameWhileLocked is false where an open file cannot be renamed: the
// store closes the damaged file before it moves it aside.
const renameWhileLocked = false

// lockFile does nothing here: the move happens unlocked, which is safe
// when one process uses the data directory at a time.
func lockFile(*os.File, time.Duration) error { return nil }
