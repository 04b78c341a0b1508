package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// stdioHost is a host speaking raw JSON-RPC lines to "junction ARGS" over
// its stdin and stdout.
type stdioHost struct {
	t      *testing.T
	ctx    context.Context
	stdin  io.WriteCloser
	stdout io.ReadCloser // the pipe junction writes to (an *os.File)
	lines  chan []byte   // every line junction writes, until it closes stdout
	stderr *lineWatcher
	wmu    sync.Mutex
}

// startStdioHost runs junction with args; it is stopped (stdin closed,
// then waited for) at cleanup.
func startStdioHost(t *testing.T, args ...string) *stdioHost {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	cmd := exec.CommandContext(ctx, junctionBin(t), args...)
	cmd.Env = childEnv(t.TempDir())
	cmd.WaitDelay = stopTimeout
	h := &stdioHost{t: t, ctx: ctx, lines: make(chan []byte, 256), stderr: newOutput()}
	cmd.Stderr = h.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.stdin, h.stdout = stdin, stdout
	go func() {
		defer close(h.lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				h.lines <- line
			}
			if err != nil {
				io.Copy(io.Discard, r)
				return
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil && ctx.Err() == nil {
			t.Errorf("junction %s exited with %v", strings.Join(args, " "), err)
		}
		cancel()
		if t.Failed() {
			t.Logf("stderr:\n%s", h.stderr.String())
		}
	})
	return h
}

func (h *stdioHost) send(line string) {
	h.t.Helper()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.t.Fatalf("write: %v", err)
	}
}

// answers reads until it has the answers to every id in ids (as JSON
// text: `1`, `"a"`), skipping notifications, and returns them by id.
func (h *stdioHost) answers(ids ...string) map[string]map[string]json.RawMessage {
	h.t.Helper()
	out := map[string]map[string]json.RawMessage{}
	for len(out) < len(ids) {
		select {
		case line, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("junction closed stdout with answers to %v missing (got %v)", ids, keys(out))
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(line, &m); err != nil {
				h.t.Fatalf("junction wrote %q: %v", line, err)
			}
			if id, ok := m["id"]; ok {
				out[string(id)] = m
			}
		case <-h.ctx.Done():
			h.t.Fatalf("timed out waiting for the answers to %v (got %v)", ids, keys(out))
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

// TestFirstListOverStdioHasUpstreamTools is the desktop host's first
// minute: with a Claude Desktop config holding the npm server-everything,
// a host that calls a tool right after notifications/initialized, and
// lists tools once, gets the call answered and the upstream's tools
// listed.
func TestFirstListOverStdioHasUpstreamTools(t *testing.T) {
	node, script := everythingCmd(t)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "claude_desktop_config.json"),
		fmt.Sprintf(`{"mcpServers":{"everything":{"command":%q,"args":[%q,"stdio"]}}}`, node, script))
	h := startStdioHost(t, "serve", "-config", cfg)
	h.send(initializeLine)
	h.answers("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"everything__echo","arguments":{"message":"first"}}}`)
	h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	got := h.answers("2", "3")
	if call := string(got["2"]["result"]); !strings.Contains(call, "Echo: first") {
		t.Errorf("tools/call sent right after initialized = %s %s, want the echo", got["2"]["result"], got["2"]["error"])
	}
	var list struct {
		Tools []struct{ Name string }
	}
	json.Unmarshal(got["3"]["result"], &list)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "everything__echo") || len(names) < 10 {
		t.Errorf("first tools/list = %v, want the core pack and server-everything's tools", names)
	}
}

// TestReadyzAndStartupBudget: an upstream that never answers holds
// /readyz at 503 (naming it) and a new session's first tools/list only
// for the config file's startup_budget; then the hub is ready, serves
// what it has, and lists without waiting.
func TestReadyzAndStartupBudget(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), `
startup_budget: 3s
servers:
  silent:
    command: sleep
    args: ["120"]
`)
	start := time.Now()
	url := startServe(t, "-insecure-no-auth", "-config", cfg)
	readyz := strings.TrimSuffix(url, "/mcp") + "/readyz"
	get := func() (int, string) {
		resp, err := http.Get(readyz)
		if err != nil {
			t.Fatalf("GET /readyz: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(); time.Since(start) < 2*time.Second && (code != http.StatusServiceUnavailable || !strings.Contains(body, `"connecting":["silent"]`)) {
		t.Errorf("/readyz during startup = %d %s, want 503 naming the silent upstream", code, body)
	}
	cs := connectHTTP(t, url, "")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 3*time.Second {
		t.Errorf("first tools/list answered %v after start, inside the 3s budget", waited)
	}
	if len(res.Tools) == 0 || strings.Contains(fmt.Sprint(res.Tools), "silent__") {
		t.Errorf("tools/list after the budget = %d tools", len(res.Tools))
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("/readyz after the budget = %d %s, want 200 ready", code, body)
	}
	listStart := time.Now()
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(listStart); d > 2*time.Second {
		t.Errorf("a tools/list after startup took %v", d)
	}
}
