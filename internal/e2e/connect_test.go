package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestConfigCheckNamesSelfReference: "config check" and serve's log say
// which entry runs junction itself and that serve skips it.
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
	// serve logs it before it listens.
	p := startServer(t, "-insecure-no-auth", "-config", cfg)
	if log := p.Stderr(); !strings.Contains(log, "mcpServers.me: skipped: it runs this junction binary") {
		t.Errorf("serve's log does not name the self-reference:\n%s", log)
	}
}

// TestConnectClaudeDesktop connects a fake Claude Desktop (a home
// directory with its config file) to the built binary, runs what the host
// file now says to run, as the host would, lists the moved server's tools
// through it, and disconnects, which restores the file's exact bytes.
func TestConnectClaudeDesktop(t *testing.T) {
	node, everything := everythingCmd(t)
	home := t.TempDir()
	hostFile := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	if err := os.MkdirAll(filepath.Dir(hostFile), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := fmt.Sprintf(`{
  "mcpServers": {
    "everything": {
      "command": %q,
      "args": [%q, "stdio"],
      "env": {"EVERYTHING_NOTE": "kept"}
    }
  },
  "globalShortcut": "Ctrl+Space"
}
`, node, everything)
	if err := os.WriteFile(hostFile, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(childEnv(home), "HOME="+home, "XDG_CONFIG_HOME=") // the harness's XDG dir would hide ~/.config
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(junctionBin(t), args...)
		cmd.Env = env
		cmd.Dir = home
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("junction %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	// A dry run changes nothing.
	out := run("connect", "claude-desktop")
	if !strings.Contains(out, "-    \"everything\": {") || !strings.Contains(out, "Nothing was changed") {
		t.Errorf("dry run:\n%s", out)
	}
	if b, _ := os.ReadFile(hostFile); string(b) != orig {
		t.Fatal("the dry run changed the host file")
	}

	out = run("connect", "claude-desktop", "-apply")
	moved := filepath.Join(home, ".config", "junction", "junction.json")
	if !strings.Contains(out, "Wrote "+moved) {
		t.Errorf("connect -apply:\n%s", out)
	}

	// The host's file now runs junction, on the moved config.
	var host struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
		GlobalShortcut string `json:"globalShortcut"`
	}
	b, err := os.ReadFile(hostFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &host); err != nil {
		t.Fatalf("host file after connect: %v\n%s", err, b)
	}
	entry, ok := host.MCPServers["junction"]
	if len(host.MCPServers) != 1 || !ok || host.GlobalShortcut != "Ctrl+Space" {
		t.Fatalf("host file after connect:\n%s", b)
	}
	if want := []string{"serve", "-config", moved}; !slices.Equal(entry.Args, want) {
		t.Errorf("junction entry args %v, want %v", entry.Args, want)
	}
	if fi, err := os.Stat(entry.Command); err != nil || !sameFile(t, entry.Command, junctionBin(t)) {
		t.Errorf("junction entry command %s is not the binary %s (%v, %v)", entry.Command, junctionBin(t), fi, err)
	}

	// Run it as the host would and list the moved server's tools.
	cmd := exec.Command(entry.Command, entry.Args...)
	cmd.Env = env
	cmd.Stderr = newOutput()
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil)
	if err != nil {
		t.Fatalf("connecting to %s %v: %v", entry.Command, entry.Args, err)
	}
	waitFor(t, "everything's tools through junction", 60*time.Second, func() bool {
		return hasName(toolNames(t, cs), "everything__echo")
	})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "moved"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "moved") {
		t.Errorf("everything__echo: %+v, %v", res, err)
	}
	if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Logf("closing: %v", err)
	}

	out = run("disconnect", "claude-desktop", "-apply")
	if !strings.Contains(out, "Restored "+hostFile+" from "+hostFile+".junction-backup-") {
		t.Errorf("disconnect:\n%s", out)
	}
	if b, _ := os.ReadFile(hostFile); string(b) != orig {
		t.Errorf("after disconnect the host file is not the original:\n%s", b)
	}
}

func sameFile(t *testing.T, a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
