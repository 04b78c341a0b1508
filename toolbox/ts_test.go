//go:build unix

package toolbox

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// tsPlugin returns the command that runs the TypeScript example plugin
// with the project's Node 22 ($JUNCTION_NODE), skipping the test when the
// tools are not installed (failing instead under JUNCTION_REQUIRE_TOOLS=1).
func tsPlugin(t *testing.T) Command {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "examples", "toolbox-ts")
	missing := func(why string) {
		if os.Getenv("JUNCTION_REQUIRE_TOOLS") == "1" {
			t.Fatalf("JUNCTION_REQUIRE_TOOLS=1 but %s", why)
		}
		t.Skipf("skipping the TypeScript plugin: %s (scripts/setup installs it)", why)
	}
	node := os.Getenv("JUNCTION_NODE")
	if node == "" {
		missing("JUNCTION_NODE (the path of Node 22) is not set")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@connectrpc", "connect-node")); err != nil {
		missing("examples/toolbox-ts/node_modules is not installed (npm ci in examples/toolbox-ts)")
	}
	return Command{Path: node, Args: []string{"--experimental-transform-types", "--no-warnings", filepath.Join(dir, "src", "main.ts")}, Dir: dir}
}

func TestTSPlugin(t *testing.T) {
	cmd := tsPlugin(t)
	logs := &logBuffer{}
	src, err := NewPlugin(cmd, testOptions("tsp", logs))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := serveThroughHub(t, "tsp", src)
	runContract(t, h, logs)
	if t.Failed() {
		t.Logf("plugin log:\n%s", logs.String())
	}
}

func TestTSPluginKilledMidCallRestarts(t *testing.T) {
	cmd := tsPlugin(t)
	testKilledMidCall(t, cmd)
}
