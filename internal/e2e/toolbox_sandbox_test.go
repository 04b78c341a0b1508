package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSandboxToolboxPlugins runs the Go and the TypeScript example
// plugins behind "junction serve" at sandbox level strict (the top-level
// sandbox for one, the plugin's own for the other) and calls their tools:
// each answers from a PID namespace of its own, reached through the unix
// socket handshake (its loopback is not the hub's). The example plugins
// have no tool that reads a file or the environment, so what they could
// read is not checked here; TestSandboxEscapes checks that for servers,
// whose sandbox is the same code.
func TestSandboxToolboxPlugins(t *testing.T) {
	skipWithoutSandbox(t)
	goPlugin := toolboxGo(t)
	node, _ := nodeTools(t)
	tsDir, err := filepath.Abs(filepath.Join("..", "..", "examples", "toolbox-ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tsDir, "node_modules", "@connectrpc", "connect-node")); err != nil {
		if os.Getenv(envRequireTools) == "1" {
			t.Fatalf("examples/toolbox-ts/node_modules is not installed (run bash scripts/setup): %v", err)
		}
		t.Skipf("skipping: examples/toolbox-ts/node_modules is not installed (run bash scripts/setup)")
	}
	// The plugin may read its working directory; where node_modules is a
	// link (scripts/setup links it into .tools), the tree it leads to too,
	// as a user would list it: the sandbox follows no links.
	mods, err := filepath.EvalSymlinks(filepath.Join(tsDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
sandbox: strict
plugins:
  gotb:
    command: %q
  tstb:
    command: %q
    args: [--experimental-transform-types, --no-warnings, %q]
    cwd: %q
    sandbox: {level: strict, read_only: [%q], limits: {procs: 128}}
`, goPlugin, node, filepath.Join(tsDir, "src", "main.ts"), tsDir, mods))
	if _, stderr, code := runJunction(t, []string{"HOME=" + home}, "config", "check", cfg); code != 0 {
		t.Fatalf("junction config check: exit %d\n%s", code, stderr)
	}
	hub := startServerEnv(t, []string{"HOME=" + home}, "-insecure-no-auth", "-config", cfg)
	cs := connectHTTP(t, hub.URL, "")
	waitFor(t, "the two plugins' tools", 90*time.Second, func() bool {
		names := toolNames(t, cs)
		return hasName(names, "gotb__add") && hasName(names, "tstb__add")
	})
	for _, name := range []string{"gotb", "tstb"} {
		if text := toolText(t, cs, name+"__add", map[string]any{"a": 2, "b": 40}); !strings.Contains(text, "42") {
			t.Errorf("%s__add 2 40 = %q, want 42", name, text)
		}
		var v struct{ PID int }
		text := toolText(t, cs, name+"__pid", nil)
		if err := json.Unmarshal([]byte(text), &v); err != nil || v.PID == 0 {
			t.Errorf("%s__pid = %q: %v", name, text, err)
		} else if v.PID > 64 {
			t.Errorf("%s__pid = %d: the plugin is not in a PID namespace of its own", name, v.PID)
		} else {
			t.Logf("%s answers with pid %d, in its sandbox", name, v.PID)
		}
	}
	if text := toolText(t, cs, "tstb__echo", map[string]any{"text": "from a sandbox"}); !strings.Contains(text, "from a sandbox") {
		t.Errorf("tstb__echo = %q", text)
	}
	logs := hub.Stderr()
	for _, name := range []string{"gotb", "tstb"} {
		if !strings.Contains(logs, "source="+name) || !strings.Contains(logs, "junction-toolbox-") {
			t.Errorf("no unix socket handshake of %s in the log:\n%s", name, logs)
		}
	}
}

// TestSandboxToolboxPluginCheck: "junction config check" checks a
// plugin's sandbox as it would run, as it does a server's.
func TestSandboxToolboxPluginCheck(t *testing.T) {
	skipWithoutSandbox(t)
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), `
plugins:
  boxed:
    command: sh
    args: [-c, "exec sleep 1"]
    sandbox:
      level: strict
      read_only: [/no/such/dir]
`)
	_, stderr, code := runJunction(t, nil, "config", "check", cfg)
	if code == 0 || !strings.Contains(stderr, "plugins.boxed.sandbox") || !strings.Contains(stderr, "/no/such/dir does not exist") {
		t.Errorf("junction config check: exit %d, want a failure naming plugins.boxed.sandbox and the missing path:\n%s", code, stderr)
	}
}
