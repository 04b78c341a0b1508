//go:build !linux

package wire

import (
	"errors"
	"os"
)

// GrowPipe is a no-op where pipes cannot be resized.
func GrowPipe(*os.File, int) error { return errors.ErrUnsupported }

// PipeCapacity is unknown where pipes cannot be resized.
func PipeCapacity(*os.File) (int, error) { return 0, errors.ErrUnsupported }
