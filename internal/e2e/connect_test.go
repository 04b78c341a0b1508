package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSelfReferenceDoesNotRecurse is the "junction named in its own
// config" case: a Claude Desktop file that runs junction on itself, and is
// also what junction serves. Before the guard this started a hub, which
// started a hub, ... (54 nested hubs in 5 s). The entry here goes through
// a wrapper script, so that only the environment marker can recognise it
// (the command path is not junction's); the wrapper counts its starts and
// refuses past a bound, so a regression fails instead of running away.
func TestSelfReferenceDoesNotRecurse(t *testing.T) {
	dir := t.TempDir()
	counter := filepath.Join(dir, "starts")
	wrapper := filepath.Join(dir, "hub.sh")
	cfg := filepath.Join(dir, "claude_desktop_config.json")
	script := fmt.Sprintf(`#!/bin/sh
echo $$ >> %q
if [ "$(wc -l < %q)" -gt 8 ]; then echo "hub.sh: too many nested hubs" >&2; exit 1; fi
exec %q "$@"
`, counter, counter, junctionBin(t))
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, cfg, fmt.Sprintf(`{
  "mcpServers": {
    "hub": {"command": %q, "args": ["serve", "-config", %q]},
    "self": {"command": %q, "args": ["serve", "-config", %q]}
  }
}
`, wrapper, cfg, junctionBin(t), cfg))

	cs := connectStdio(t, "-config", cfg)
	names := toolNames(t, cs) // waits for the upstreams' first connection
	if !hasName(names, "hub__junction_version") {
		t.Errorf("tools = %v, want hub__junction_version (the nested hub's own pack, without the hub entry)", names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "self__") || strings.HasPrefix(n, "hub__hub__") || strings.HasPrefix(n, "hub__self__") {
			t.Errorf("tool %s is served: a self-reference was started", n)
		}
	}
	b, err := os.ReadFile(counter)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Fatalf("the wrapper started %d nested hubs, want 1 (the nested one must skip itself)", n)
	}
}

// TestConfigCheckNamesSelfReference: "config check" says which entry runs
// junction itself and that serve skips it.
func TestConfigCheckNamesSelfReference(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "claude_desktop_config.json")
	writeConfig(t, cfg, fmt.Sprintf(`{"mcpServers": {"me": {"command": %q, "args": ["serve", "-config", %q]}}}`, junctionBin(t), cfg))
	cmd := exec.Command(junctionBin(t), "config", "check", cfg)
	cmd.Env = childEnv(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "mcpServers.me: skipped: it runs this junction binary") || !strings.Contains(string(out), "(disabled)") {
		t.Errorf("config check output does not name the self-reference:\n%s", out)
	}
}
