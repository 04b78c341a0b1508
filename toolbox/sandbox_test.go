//go:build linux

package toolbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/sandbox"
)

// skipWithoutNamespaces skips a test on a system where the sandbox has no
// namespaces to give (user namespaces switched off, a masked /proc).
func skipWithoutNamespaces(t *testing.T) {
	t.Helper()
	if s := sandbox.Check(); !s.UserNS || !s.ProcMount || !s.Loopback {
		t.Skipf("skipping: this system cannot give the sandbox its namespaces: %v", s.Lines())
	}
}

// TestSandboxedPlugin: a plugin with a sandbox runs in it (its own PID
// namespace) and is reached through the unix socket handshake, though
// the options did not ask for one: its loopback is not the hub's.
func TestSandboxedPlugin(t *testing.T) {
	skipWithoutNamespaces(t)
	logs := &logBuffer{}
	opts := testOptions("boxed", logs)
	opts.UnixSocket = false
	home := t.TempDir()
	t.Setenv("HOME", home)
	src, err := NewPlugin(Command{Path: goPluginPath, Sandbox: &Sandbox{Level: "on"}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if pid := pidFromSource(t, ctx, src); pid > 64 {
		t.Errorf("the plugin's pid is %d: not in a PID namespace of its own", pid)
	}
	if !strings.Contains(logs.String(), "protocol=") || !strings.Contains(logs.String(), ".sock") {
		t.Errorf("the plugin did not answer on a unix socket; log:\n%s", logs)
	}
	if t.Failed() {
		t.Logf("log:\n%s", logs)
	}
}

// TestSandboxedPluginBadLevel: an unknown level is refused at once.
func TestSandboxedPluginBadLevel(t *testing.T) {
	_, err := NewPlugin(Command{Path: goPluginPath, Sandbox: &Sandbox{Level: "sometimes"}}, nil)
	if err == nil || !strings.Contains(err.Error(), "sometimes") {
		t.Errorf("NewPlugin with level sometimes = %v, want an error naming it", err)
	}
}
