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
	"syscall"
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
	cs, _ := connectJunction(t, c, append([]string{"toolbox", "mcp", "--"}, plugin...)...)
	return cs
}

// connectJunction runs "junction ARGS" as a stdio MCP server and connects
// c to it; it returns the session and the process's stderr.
func connectJunction(t *testing.T, c *mcp.Client, args ...string) (*mcp.ClientSession, *lineWatcher) {
	t.Helper()
	cmd := exec.Command(junctionBin(t), args...)
	cmd.Env = childEnv(t.TempDir())
	stderr := newOutput()
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
		t.Fatalf("connecting to junction %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("junction %s stderr:\n%s", strings.Join(args, " "), stderr.String())
		}
	})
	return cs, stderr
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

// tsExampleCommand returns the command line of the TypeScript example
// plugin, or nil (after logging why) when the Node tools are missing and
// not required.
func tsExampleCommand(t *testing.T) []string {
	t.Helper()
	node := os.Getenv(envNode)
	dir, err := filepath.Abs(filepath.Join("..", "..", "examples", "toolbox-ts"))
	if err != nil {
		t.Fatal(err)
	}
	_, modErr := os.Stat(filepath.Join(dir, "node_modules", "@connectrpc", "connect-node"))
	if node == "" || modErr != nil {
		if os.Getenv(envRequireTools) == "1" {
			t.Fatalf("the TypeScript example needs %s and examples/toolbox-ts/node_modules (run bash scripts/setup)", envNode)
		}
		t.Logf("leaving out the TypeScript example: %s or examples/toolbox-ts/node_modules missing (run bash scripts/setup)", envNode)
		return nil
	}
	return []string{node, "--experimental-transform-types", "--no-warnings", filepath.Join(dir, "src", "main.ts")}
}

// TestServeWithPlugins runs both example plugins behind "junction serve"
// (configured in a config file) and checks, through a go-sdk client:
// tools listed with their schemas, calls with progress, cancellation
// reaching the plugin, errors as isError, resources and prompts, and a
// plugin killed mid-call and restarted.
func TestServeWithPlugins(t *testing.T) {
	t.Parallel()
	cfg := "plugins:\n  gop:\n    command: " + strconvQuote(toolboxGo(t)) + "\n"
	prefixes := []string{"gop"}
	if ts := tsExampleCommand(t); ts != nil {
		cfg += "  tsp:\n    command: " + strconvQuote(ts[0]) + "\n    args: ["
		for i, a := range ts[1:] {
			if i > 0 {
				cfg += ", "
			}
			cfg += strconvQuote(a)
		}
		cfg += "]\n"
		prefixes = append(prefixes, "tsp")
	}
	path := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	progress := map[any]int{}
	c := newClient(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress[req.Params.ProgressToken]++
		mu.Unlock()
	}})
	progressOf := func(tok string) int {
		mu.Lock()
		defer mu.Unlock()
		return progress[tok]
	}
	cs, stderr := connectJunction(t, c, "serve", "-config", path, "-no-default-packs")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waitUntil := func(t *testing.T, what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	text := func(res *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	// Plugins start in the background: wait for all their tools.
	tools := map[string]*mcp.Tool{}
	waitUntil(t, "every plugin's tools", func() bool {
		clear(tools)
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			tools[tool.Name] = tool
		}
		return len(tools) == 6*len(prefixes)
	})
	for _, p := range prefixes {
		t.Run(p, func(t *testing.T) {
			schema, _ := json.Marshal(tools[p+"__echo"].InputSchema)
			if !strings.Contains(string(schema), `"text"`) || !strings.Contains(string(schema), `"object"`) {
				t.Errorf("%s__echo input schema = %s", p, schema)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: p + "__echo", Arguments: map[string]any{"text": "via serve"}})
			if err != nil || text(res) != "via serve" {
				t.Errorf("%s__echo = %v, %v", p, res, err)
			}
			params := &mcp.CallToolParams{Name: p + "__slow", Arguments: map[string]any{"steps": 3, "delay_ms": 10}}
			params.SetProgressToken(p + "-progress")
			if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
				t.Fatalf("%s__slow = %v, %v", p, res, err)
			}
			waitUntil(t, "3 progress notifications", func() bool { return progressOf(p+"-progress") == 3 })
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: p + "__fail", Arguments: map[string]any{"mode": "rpc"}})
			if err != nil || !res.IsError || !strings.Contains(text(res), "PERMISSION_DENIED") {
				t.Errorf("%s__fail(rpc) = %v, %v", p, res, err)
			}
			gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: p + "__greet", Arguments: map[string]string{"name": "Ada"}})
			if err != nil || len(gp.Messages) != 1 {
				t.Errorf("%s__greet = %v, %v", p, gp, err)
			}

			// Cancellation: the plugin logs it on stderr, which junction logs.
			cctx, ccancel := context.WithCancel(ctx)
			params = &mcp.CallToolParams{Name: p + "__slow", Arguments: map[string]any{"steps": 500, "delay_ms": 20}}
			params.SetProgressToken(p + "-cancel")
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(cctx, params)
				done <- err
			}()
			waitUntil(t, "the slow call to start", func() bool { return progressOf(p+"-cancel") > 0 })
			ccancel()
			<-done
			waitUntil(t, "the plugin to see the cancellation", func() bool {
				return strings.Contains(stderr.String(), "slow: cancelled at step") && strings.Contains(stderr.String(), "source="+p)
			})

			// Kill the plugin mid-call: the call fails as a tool error, the
			// plugin restarts, and calls work again.
			pidOf := func() int {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: p + "__pid", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("%s__pid = %v, %v", p, res, err)
				}
				var v struct{ PID int }
				b, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(b, &v)
				return v.PID
			}
			pid := pidOf()
			params = &mcp.CallToolParams{Name: p + "__slow", Arguments: map[string]any{"steps": 500, "delay_ms": 20}}
			params.SetProgressToken(p + "-kill")
			results := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, _ := cs.CallTool(ctx, params)
				results <- res
			}()
			waitUntil(t, "the slow call to start", func() bool { return progressOf(p+"-kill") > 0 })
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			res = <-results
			if res == nil || !res.IsError || !strings.Contains(text(res), "SOURCE_UNAVAILABLE") {
				t.Errorf("call cut by the kill = %v, want a SOURCE_UNAVAILABLE tool error", res)
			}
			if again := pidOf(); again == pid || again == 0 {
				t.Errorf("pid after the restart = %d (was %d)", again, pid)
			}
		})
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "example://readme"})
	if err != nil || len(rr.Contents) != 1 || !strings.HasPrefix(rr.Contents[0].Text, "hello from toolbox-") {
		t.Errorf("ReadResource = %v, %v", rr, err)
	}
}

// strconvQuote quotes s for YAML (a JSON string is a YAML string).
func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
