package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// buildToolboxExample builds examples/toolbox-go into a temp dir.
func buildToolboxExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toolbox-go")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/junction-mcp/junction/examples/toolbox-go").CombinedOutput()
	if err != nil {
		t.Fatalf("building the example plugin: %v\n%s", err, out)
	}
	return bin
}

// startToolboxMCP runs "junction toolbox mcp -- plugin" in process, with
// pipes for stdin and stdout. Closing the returned writer ends the
// command; wait returns its error.
func startToolboxMCP(t *testing.T, plugin string) (in io.WriteCloser, out io.ReadCloser, stderr *syncBuffer, wait func() error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr = &syncBuffer{}
	env := &Env{Stdin: inR, Stdout: outW, Stderr: stderr, Environ: func() []string { return nil }}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	done := make(chan error, 1)
	go func() {
		err := RunEnv(ctx, env, []string{"toolbox", "mcp", "--", plugin})
		outW.Close()
		done <- err
	}()
	var waited bool
	var werr error
	wait = func() error {
		if !waited {
			waited = true
			inW.Close()
			werr = <-done
			cancel()
		}
		return werr
	}
	t.Cleanup(func() { wait() })
	return inW, outR, stderr, wait
}

func TestToolboxMCPWithGoSDKClient(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	plugin := buildToolboxExample(t)
	in, out, stderr, wait := startToolboxMCP(t, plugin)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: out, Writer: in}, nil)
	if err != nil {
		t.Fatalf("Connect: %v\nstderr:\n%s", err, stderr.String())
	}
	if got := cs.InitializeResult().ServerInfo; got.Name != "toolbox-go" || got.Version != "0.1.0" {
		t.Errorf("serverInfo = %+v, want the plugin's identity", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "echo") {
		t.Errorf("tools = %v, want echo among them", names)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Errorf("echo = %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"mode": "result"}})
	if err != nil || !res.IsError {
		t.Errorf("fail = %+v, %v; want isError", res, err)
	}
	cs.Close()
	if err := wait(); err != nil {
		t.Errorf("toolbox mcp returned %v", err)
	}
	if !strings.Contains(stderr.String(), "plugin exited") {
		t.Errorf("the plugin was not stopped; stderr:\n%s", stderr.String())
	}
}

func TestToolboxMCPMalformedFrame(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	plugin := buildToolboxExample(t)
	in, out, stderr, wait := startToolboxMCP(t, plugin)
	lines := bufio.NewReader(out)
	send := func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
	read := func() map[string]any {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v\nstderr:\n%s", err, stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("reply %q is not JSON: %v", line, err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize",`) // cut short
	if m := read(); m["error"] == nil || m["error"].(map[string]any)["code"].(float64) != -32700 {
		t.Fatalf("reply to a malformed frame = %v, want a -32700 parse error", m)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := read()
	if m["id"].(float64) != 2 || m["result"] == nil {
		t.Fatalf("reply to initialize after a bad frame = %v", m)
	}
	if err := wait(); err != nil {
		t.Errorf("toolbox mcp returned %v", err)
	}
}

func TestToolboxMCPUsage(t *testing.T) {
	_, stderr, code := run(t, nil, "toolbox", "mcp")
	if code != 2 || !strings.Contains(stderr, "needs a plugin command") {
		t.Errorf("toolbox mcp with no plugin: code %d, stderr %q", code, stderr)
	}
	_, stderr, code = run(t, nil, "toolbox", "mcp", "--", "/nonexistent/plugin")
	if code != 1 || !strings.Contains(stderr, "/nonexistent/plugin") {
		t.Errorf("toolbox mcp with a missing plugin: code %d, stderr %q", code, stderr)
	}
}

// syncBuffer is a goroutine-safe strings.Builder for a command's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
