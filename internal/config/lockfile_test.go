package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

func TestLockFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "junction.lock.json")
	m := junction.NewManifest([]junction.ToolInfo{{
		Tool:   &mcp.Tool{Name: "a", Description: "alpha", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Source: "s", Local: "a",
	}})
	if err := WriteLockFile(path, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory has %d entries, want only the lock file (no temp files left)", len(entries))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("lock file mode: %v %v, want 0644", fi, err)
	}

	if _, err := ReadLockFile(filepath.Join(dir, "missing.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing lock file: %v, want fs.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":9,"tools":[]}`), 0o644)
	if _, err := ReadLockFile(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("a lock file of another version: %v, want an error naming the file and the version", err)
	}
}
