package toolbox

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the module root, found from this file's path.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// TestGeneratedCodeChecksums fails when the proto or the code generated
// from it changed without scripts/gen-proto being run: the checksums the
// script recorded in toolbox/v1/generated.sum must match the files.
func TestGeneratedCodeChecksums(t *testing.T) {
	root := repoRoot(t)
	f, err := os.Open(filepath.Join(root, "toolbox", "v1", "generated.sum"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checked := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		want, path, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("generated.sum: bad line %q", line)
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("generated.sum names %s: %v", path, err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s changed since the code was generated (sha256 %s, generated.sum has %s): run scripts/gen-proto and commit the result", path, got, want)
		}
		checked++
	}
	if checked != 4 {
		t.Errorf("generated.sum checks %d files, want 4 (the proto and three generated files)", checked)
	}
}

// TestGeneratedCodeFresh regenerates the code into a temp dir with
// scripts/gen-proto and compares it with what is committed. It needs Node
// 22 and the npm packages of examples/toolbox-ts (buf, protoc-gen-es).
func TestGeneratedCodeFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating code is slow; TestGeneratedCodeChecksums still runs")
	}
	root := repoRoot(t)
	node := os.Getenv("JUNCTION_NODE")
	bufBin := filepath.Join(root, "examples", "toolbox-ts", "node_modules", "@bufbuild", "buf-linux-x64", "bin", "buf")
	_, bufErr := os.Stat(bufBin)
	if node == "" || bufErr != nil {
		why := "JUNCTION_NODE is not set"
		if bufErr != nil {
			why = "buf is not installed in examples/toolbox-ts/node_modules"
		}
		if os.Getenv("JUNCTION_REQUIRE_TOOLS") == "1" {
			t.Fatalf("JUNCTION_REQUIRE_TOOLS=1 but %s", why)
		}
		t.Skipf("skipping the regeneration check: %s (scripts/setup installs it)", why)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "gen-proto"), out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "JUNCTION_NODE="+node)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/gen-proto: %v\n%s", err, b)
	}
	for _, path := range []string{
		"toolbox/v1/toolbox.pb.go",
		"toolbox/v1/toolboxv1connect/toolbox.connect.go",
		"examples/toolbox-ts/src/gen/toolbox/v1/toolbox_pb.ts",
		"toolbox/v1/generated.sum",
	} {
		fresh, err := os.ReadFile(filepath.Join(out, path))
		if err != nil {
			t.Errorf("scripts/gen-proto did not write %s: %v", path, err)
			continue
		}
		committed, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is stale: run scripts/gen-proto and commit the result", path)
		}
	}
}
