package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func assertFile(t *testing.T, path, want string, mode fs.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s holds %q, want %q", path, b, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, mode)
	}
}

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lock.json")
	if err := Write(path, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "one", 0o644)
	if err := Write(path, []byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "two", 0o600)
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestWriteKeepsSymlink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(real, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "mcp.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	assertFile(t, real, "new", 0o640)
}

// TestWriteFailureLeavesOld: a write that cannot finish (the path is a
// directory, so the rename fails) leaves what was there and no
// temporary file.
func TestWriteFailureLeavesOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "taken")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "inside"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600); err == nil {
		t.Fatal("Write over a directory that is not empty succeeded")
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone: %v %v", fi, err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary files left: %v", l)
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("x"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Write into a missing directory: %v, want ErrNotExist", err)
	}
}
