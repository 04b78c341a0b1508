package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestArgPaths: what a server's arguments name on disk is readable in
// its sandbox; for a script in a node_modules tree, the whole tree.
func TestArgPaths(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "node_modules", "@scope", "server", "dist", "index.js")
	os.MkdirAll(filepath.Dir(script), 0o755)
	os.WriteFile(script, []byte("//"), 0o644)
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	os.WriteFile(filepath.Join(dir, "local.py"), nil, 0o644)
	got := ArgPaths([]string{"-y", script, data, "stdio", "/no/such", "./local.py", "--flag=/x"}, dir)
	want := []string{filepath.Join(dir, "node_modules"), data, filepath.Join(dir, "local.py")}
	if !slices.Equal(got, want) {
		t.Errorf("ArgPaths = %v, want %v", got, want)
	}
}
