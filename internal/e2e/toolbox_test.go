package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolboxGoOnce guards the one build of examples/toolbox-go, next to the
// junction binary (TestMain removes that directory).
var (
	toolboxGoOnce sync.Once
	toolboxGoErr  error
)

func toolboxGo(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(filepath.Dir(junctionBin(t)), "toolbox-go")
	toolboxGoOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", bin, "github.com/junction-mcp/junction/examples/toolbox-go").CombinedOutput()
		if err != nil {
			toolboxGoErr = errors.New(string(out))
		}
	})
	if toolboxGoErr != nil {
		t.Fatalf("building examples/toolbox-go: %v", toolboxGoErr)
	}
	return bin
}

// connectToolboxMCP runs "junction toolbox mcp -- PLUGIN..." and connects
// a go-sdk client to it.
func connectToolboxMCP(t *testing.T, c *mcp.Client, plugin ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(junctionBin(t), append([]string{"toolbox", "mcp", "--"}, plugin...)...)
	cmd.Env = childEnv(t.TempDir())
	stderr := newLineWatcher("\x00")
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		t.Fatalf("connecting to junction toolbox mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("junction toolbox mcp stderr:\n%s", stderr.String())
		}
	})
	return cs
}

// checkToolboxExample drives one of the example plugins through
// "junction toolbox mcp": identity, tools, a call with progress, a tool
// error, a resource and a prompt.
func checkToolboxExample(t *testing.T, wantName string, plugin ...string) {
	var mu sync.Mutex
	var progress []float64
	c := newClient(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Progress)
		mu.Unlock()
	}})
	cs := connectToolboxMCP(t, c, plugin...)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if got := cs.InitializeResult().ServerInfo.Name; got != wantName {
		t.Errorf("serverInfo.name = %q, want %q", got, wantName)
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "add,echo,fail,media,pid,slow" {
		t.Errorf("tools = %v", names)
	}
	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 3, "delay_ms": 10}}
	params.SetProgressToken("e2e")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("slow = %+v, %v", res, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d progress notifications, want 3", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"mode": "result"}})
	if err != nil || !res.IsError {
		t.Errorf("fail = %+v, %v; want isError", res, err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "example://readme"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello from "+wantName {
		t.Errorf("ReadResource = %+v, %v", rr, err)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(gp.Messages) != 1 {
		t.Errorf("GetPrompt = %+v, %v", gp, err)
	}
}

func TestToolboxMCPGoExample(t *testing.T) {
	t.Parallel()
	checkToolboxExample(t, "toolbox-go", toolboxGo(t))
}

func TestToolboxMCPTypeScriptExample(t *testing.T) {
	t.Parallel()
	node, _ := nodeTools(t)
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "toolbox-ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@connectrpc", "connect-node")); err != nil {
		if os.Getenv(envRequireTools) == "1" {
			t.Fatalf("examples/toolbox-ts/node_modules is not installed (run bash scripts/setup): %v", err)
		}
		t.Skipf("skipping: examples/toolbox-ts/node_modules is not installed (run bash scripts/setup)")
	}
	checkToolboxExample(t, "toolbox-ts", node, "--experimental-transform-types", "--no-warnings", filepath.Join(dir, "src", "main.ts"))
}

// TestInspectorCLIToolbox lists and calls the Go example plugin's tools
// through "junction toolbox mcp" with the official MCP inspector CLI.
func TestInspectorCLIToolbox(t *testing.T) {
	t.Parallel()
	node, modules := nodeTools(t)
	pkg := npmPackageDir(t, modules, "@modelcontextprotocol/inspector-cli")
	plugin := toolboxGo(t)
	inspect := func(args ...string) string {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		// No "--" before the plugin: the inspector would take it as the end
		// of its own options. The plugin takes no flags, so junction needs
		// none.
		argv := []string{filepath.Join(pkg, "build", "index.js"), junctionBin(t), "toolbox", "mcp", plugin}
		cmd := exec.CommandContext(ctx, node, append(argv, args...)...)
		cmd.Dir = filepath.Join(pkg, "build")
		cmd.Env = childEnv(t.TempDir())
		cmd.WaitDelay = stopTimeout
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("inspector-cli %v: %v\n%s\nstderr:\n%s", args, err, out, ee.Stderr)
			}
			t.Fatalf("inspector-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := inspect("--method", "tools/list")
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) != 6 {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	for _, tool := range list.Tools {
		if tool.InputSchema["type"] != "object" {
			t.Errorf("tool %s input schema = %v", tool.Name, tool.InputSchema)
		}
	}
	out = inspect("--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=from the inspector")
	if !strings.Contains(out, "from the inspector") || strings.Contains(out, `"isError": true`) {
		t.Errorf("tools/call echo:\n%s", out)
	}
	out = inspect("--method", "tools/call", "--tool-name", "fail", "--tool-arg", "mode=result")
	if !strings.Contains(out, `"isError": true`) || !strings.Contains(out, "FAILED_PRECONDITION") {
		t.Errorf("tools/call fail:\n%s", out)
	}
}
