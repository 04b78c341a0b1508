//go:build !linux

package upstream

import (
	"errors"
	"os"
)

// growPipe is a no-op where pipes cannot be resized.
func growPipe(*os.File, int) error { return errors.ErrUnsupported }
