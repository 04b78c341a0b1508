package config

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/atomicfile"
)

// ReadLockFile reads the lock file at path (the key lock: of a config, or
// "junction lock -o"): the pins of the tools a hub serves. A file that is
// not there is an error that wraps fs.ErrNotExist.
func ReadLockFile(path string) (*junction.Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := junction.ReadManifest(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// WriteLockFile writes m to path as indented JSON, atomically: a reader
// sees the old file or the new one, never half of one.
func WriteLockFile(path string, m *junction.Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}
