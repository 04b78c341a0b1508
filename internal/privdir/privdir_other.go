//go:build !linux

package privdir

import (
	"log/slog"
	"os"
)

// removeStale is Linux's: elsewhere what a killed junction's directories
// held stays in the temporary directory.
func removeStale(string, *slog.Logger) {}

// hold is Linux's: elsewhere a directory is not locked.
func hold(string) (*os.File, error) { return nil, nil }
