//go:build !linux

package cli

import (
	"os"
	"testing"
)

// openPTY skips the test: the pseudo-terminal tests open one through
// Linux's interface only.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Skip("pseudo-terminal tests run on Linux only")
	return nil, nil
}
