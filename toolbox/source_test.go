//go:build unix

package toolbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/toolbox/plugin"
)

// logBuffer is a goroutine-safe log sink, so tests can look for what a
// plugin wrote on stderr.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testOptions are source options with a log captured in logs.
func testOptions(name string, logs *logBuffer) *Options {
	return &Options{
		Name:           name,
		Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HealthInterval: 200 * time.Millisecond,
		MinBackoff:     50 * time.Millisecond,
		MaxBackoff:     500 * time.Millisecond,
		StopTimeout:    2 * time.Second,
	}
}

// hubSession serves src through a hub and returns a go-sdk client session
// connected to it, and the progress notifications that session received.
type hubSession struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

func (h *hubSession) progressFor(token any) []*mcp.ProgressNotificationParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, p := range h.progress {
		if p.ProgressToken == token {
			out = append(out, p)
		}
	}
	return out
}

func serveThroughHub(t *testing.T, name string, src junction.Source) *hubSession {
	t.Helper()
	ctx := t.Context()
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(ctx, name, src, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatalf("hub.Add: %v", err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatalf("NewView: %v", err)
	}
	h := &hubSession{}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, req.Params)
			h.mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	h.cs = cs
	return h
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func call(t *testing.T, ctx context.Context, h *hubSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

// runContract checks, through a hub and a go-sdk client, everything the
// example plugins share: schemas, calls, structured results, progress,
// cancellation, errors as isError, every content kind, resources and
// prompts. logs is where the plugin's stderr ends up.
func runContract(t *testing.T, h *hubSession, logs *logBuffer) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	t.Run("list tools with schemas", func(t *testing.T) {
		res, err := h.cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		tools := make(map[string]*mcp.Tool)
		var names []string
		for _, tool := range res.Tools {
			tools[tool.Name] = tool
			names = append(names, tool.Name)
		}
		want := []string{"add", "echo", "fail", "media", "pid", "slow"}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Fatalf("tool names (-want +got):\n%s", diff)
		}
		var echoSchema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		b, _ := json.Marshal(tools["echo"].InputSchema)
		if err := json.Unmarshal(b, &echoSchema); err != nil || echoSchema.Type != "object" || echoSchema.Properties["text"].Type != "string" {
			t.Errorf("echo input schema = %s, want an object with a string property text", b)
		}
		out, _ := json.Marshal(tools["add"].OutputSchema)
		if !strings.Contains(string(out), `"sum"`) {
			t.Errorf("add output schema = %s, want one with sum", out)
		}
	})

	t.Run("call", func(t *testing.T) {
		res := call(t, ctx, h, "echo", map[string]any{"text": "héllo"})
		if res.IsError || textOf(t, res) != "héllo" {
			t.Errorf("echo = %+v (text %q), want héllo", res, textOf(t, res))
		}
		res = call(t, ctx, h, "add", map[string]any{"a": 2, "b": 40})
		got, _ := json.Marshal(res.StructuredContent)
		if res.IsError || string(got) != `{"sum":42}` {
			t.Errorf("add structured content = %s (isError %v), want {\"sum\":42}", got, res.IsError)
		}
	})

	t.Run("progress", func(t *testing.T) {
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 3, "delay_ms": 20}}
		params.SetProgressToken("p1")
		res, err := h.cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			t.Fatalf("slow = %v, %v", res, err)
		}
		if got := textOf(t, res); got != "done after 3 steps" {
			t.Errorf("slow text = %q", got)
		}
		waitFor(t, 5*time.Second, "3 progress notifications", func() bool { return len(h.progressFor("p1")) == 3 })
		p := h.progressFor("p1")
		if p[2].Progress != 3 || p[2].Total != 3 || p[2].Message != "step 3" {
			t.Errorf("last progress = %+v, want 3/3 step 3", p[2])
		}
	})

	t.Run("cancellation reaches the plugin", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 200, "delay_ms": 50}}
		params.SetProgressToken("c1")
		done := make(chan error, 1)
		go func() {
			_, err := h.cs.CallTool(cctx, params)
			done <- err
		}()
		waitFor(t, 10*time.Second, "the first progress", func() bool { return len(h.progressFor("c1")) > 0 })
		ccancel()
		if err := <-done; err == nil {
			t.Errorf("cancelled CallTool returned no error")
		}
		waitFor(t, 10*time.Second, "the plugin to log its cancellation", func() bool {
			return strings.Contains(logs.String(), "slow: cancelled at step")
		})
	})

	t.Run("errors are isError", func(t *testing.T) {
		res := call(t, ctx, h, "fail", map[string]any{"mode": "result"})
		if !res.IsError || !strings.Contains(textOf(t, res), `"code":"FAILED_PRECONDITION"`) || !strings.Contains(textOf(t, res), "the widget is not ready") {
			t.Errorf("fail(result) = isError %v, %q", res.IsError, textOf(t, res))
		}
		res = call(t, ctx, h, "fail", map[string]any{"mode": "error"})
		if !res.IsError || !strings.Contains(textOf(t, res), "the tool failed on purpose") {
			t.Errorf("fail(error) = isError %v, %q", res.IsError, textOf(t, res))
		}
		res = call(t, ctx, h, "fail", map[string]any{"mode": "rpc"})
		if !res.IsError || !strings.Contains(textOf(t, res), "PERMISSION_DENIED") || !strings.Contains(textOf(t, res), "not allowed on purpose") {
			t.Errorf("fail(rpc) = isError %v, %q", res.IsError, textOf(t, res))
		}
		res = call(t, ctx, h, "echo", map[string]any{"text": 5})
		if !res.IsError {
			t.Errorf("echo with a number = %q, want isError", textOf(t, res))
		}
	})

	t.Run("every content kind", func(t *testing.T) {
		res := call(t, ctx, h, "media", map[string]any{})
		got, err := json.Marshal(res.Content)
		if err != nil {
			t.Fatal(err)
		}
		want := `[{"type":"text","text":"text"},` +
			`{"type":"image","mimeType":"image/png","data":"iVBORw==","annotations":{"audience":["user"],"priority":0.5}},` +
			`{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="},` +
			`{"type":"resource_link","mimeType":"text/plain","uri":"example://readme","name":"readme","size":5},` +
			`{"type":"resource","resource":{"uri":"example://logo","mimeType":"image/png","blob":"AQID"}}]`
		if diff := cmp.Diff(want, string(got)); diff != "" {
			t.Errorf("media content (-want +got):\n%s", diff)
		}
	})

	t.Run("resources", func(t *testing.T) {
		list, err := h.cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("ListResources: %v", err)
		}
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		if diff := cmp.Diff([]string{"example://logo", "example://readme"}, uris); diff != "" {
			t.Errorf("resources (-want +got):\n%s", diff)
		}
		res, err := h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "example://readme"})
		if err != nil || len(res.Contents) != 1 || !strings.HasPrefix(res.Contents[0].Text, "hello from toolbox-") {
			t.Errorf("ReadResource(readme) = %+v, %v", res, err)
		}
		res, err = h.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "example://logo"})
		if err != nil || len(res.Contents) != 1 || !bytes.Equal(res.Contents[0].Blob, []byte{1, 2, 3}) {
			t.Errorf("ReadResource(logo) = %+v, %v", res, err)
		}
	})

	t.Run("prompts", func(t *testing.T) {
		list, err := h.cs.ListPrompts(ctx, nil)
		if err != nil || len(list.Prompts) != 1 || list.Prompts[0].Name != "greet" || len(list.Prompts[0].Arguments) != 1 || !list.Prompts[0].Arguments[0].Required {
			t.Fatalf("ListPrompts = %+v, %v", list, err)
		}
		res, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
		if err != nil {
			t.Fatalf("GetPrompt: %v", err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" || !strings.Contains(res.Messages[0].Content.(*mcp.TextContent).Text, "Ada") {
			t.Errorf("GetPrompt = %+v", res)
		}
		if _, err := h.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet"}); err == nil || !strings.Contains(err.Error(), "name") {
			t.Errorf("GetPrompt without its required argument: err = %v, want one naming the argument", err)
		}
	})
}

func TestGoPlugin(t *testing.T) {
	logs := &logBuffer{}
	src, err := NewPlugin(Command{Path: goPluginPath}, testOptions("gop", logs))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := serveThroughHub(t, "gop", src)
	runContract(t, h, logs)
	if t.Failed() {
		t.Logf("plugin log:\n%s", logs.String())
	}
}

func TestGoPluginUnixSocket(t *testing.T) {
	logs := &logBuffer{}
	opts := testOptions("gopu", logs)
	opts.UnixSocket = true
	src, err := NewPlugin(Command{Path: goPluginPath}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := serveThroughHub(t, "gopu", src)
	res := call(t, t.Context(), h, "echo", map[string]any{"text": "over a socket"})
	if textOf(t, res) != "over a socket" {
		t.Errorf("echo = %q", textOf(t, res))
	}
	if !strings.Contains(logs.String(), "protocol=grpc") || !strings.Contains(logs.String(), "plugin-") {
		t.Errorf("log does not show a unix-socket gRPC plugin:\n%s", logs.String())
	}
}

// pidOf calls the plugin's pid tool.
func pidOf(t *testing.T, ctx context.Context, h *hubSession) int {
	t.Helper()
	res := call(t, ctx, h, "pid", map[string]any{})
	var v struct{ PID int }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil || v.PID == 0 {
		t.Fatalf("pid = %s, %v", b, err)
	}
	return v.PID
}

func TestPluginKilledMidCallRestarts(t *testing.T) {
	testKilledMidCall(t, Command{Path: goPluginPath})
}

// testKilledMidCall kills the plugin during a call: the call ends as a
// SOURCE_UNAVAILABLE tool error, and the next call reaches a new process.
func testKilledMidCall(t *testing.T, cmd Command) {
	logs := &logBuffer{}
	src, err := NewPlugin(cmd, testOptions("crashy", logs))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	h := serveThroughHub(t, "crashy", src)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	pid := pidOf(t, ctx, h)

	params := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"steps": 500, "delay_ms": 20}}
	params.SetProgressToken("k1")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := h.cs.CallTool(ctx, params)
		if err != nil {
			t.Errorf("CallTool during the crash: %v (want a tool error, not a protocol error)", err)
		}
		done <- res
	}()
	waitFor(t, 10*time.Second, "the call to be running", func() bool { return len(h.progressFor("k1")) > 0 })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
	res := <-done
	if res == nil || !res.IsError || !strings.Contains(textOf(t, res), junction.CodeSourceUnavailable) {
		t.Fatalf("the call cut by the crash = %+v, want an isError %s result", textOf(t, res), junction.CodeSourceUnavailable)
	}
	// Calls wait for the restart and then work.
	newPID := pidOf(t, ctx, h)
	if newPID == pid {
		t.Errorf("pid after restart = %d, the same as before", newPID)
	}
	if !strings.Contains(logs.String(), "restarting") {
		t.Errorf("log does not mention the restart:\n%s", logs.String())
	}
}

func TestCloseStopsPluginGracefully(t *testing.T) {
	logs := &logBuffer{}
	src, err := NewPlugin(Command{Path: goPluginPath}, testOptions("stopper", logs))
	if err != nil {
		t.Fatal(err)
	}
	ident, err := src.Identity(t.Context())
	if err != nil || ident.GetName() != "toolbox-go" {
		t.Fatalf("Identity = %v, %v", ident, err)
	}
	start := time.Now()
	src.Close()
	src.Close() // idempotent
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v; the plugin should exit on SIGTERM at once", d)
	}
	if !strings.Contains(logs.String(), "exit status 0") {
		t.Errorf("plugin did not exit cleanly on SIGTERM:\n%s", logs.String())
	}
	if _, err := src.Identity(t.Context()); err == nil {
		t.Errorf("Identity after Close succeeded")
	}
}

func TestPluginWithoutHandshake(t *testing.T) {
	logs := &logBuffer{}
	opts := testOptions("mute", logs)
	opts.HandshakeTimeout = 300 * time.Millisecond
	opts.ReadyTimeout = 200 * time.Millisecond
	script := filepath.Join(t.TempDir(), "mute.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho not a handshake\necho oops >&2\nsleep 30\n"), 0o755)
	src, err := NewPlugin(Command{Path: script}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// Before its first start has finished, the catalog is empty at once
	// (the hub waits for Ready instead).
	if cat, err := src.Catalog(t.Context()); err != nil || len(cat.Tools) != 0 {
		t.Errorf("Catalog while starting = %v, %v; want empty", cat, err)
	}
	select {
	case <-src.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("Ready not closed after the handshake timed out")
	}
	_, err = src.Catalog(t.Context())
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("Catalog of a plugin with no handshake: err = %v, want not ready", err)
	}
	waitFor(t, 5*time.Second, "the missing handshake to be logged", func() bool {
		l := logs.String()
		return strings.Contains(l, "no handshake within") && strings.Contains(l, "not a handshake") && strings.Contains(l, "oops")
	})
}

func TestNewPluginMissingCommand(t *testing.T) {
	_, err := NewPlugin(Command{Path: "/nonexistent/plugin"}, nil)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/plugin") {
		t.Errorf("NewPlugin(missing) err = %v", err)
	}
}

// startServing runs the Go example plugin by hand (as a service a URL
// source would reach) and returns its base URL.
func startServing(t *testing.T, token string) string {
	t.Helper()
	cmd := exec.Command(goPluginPath, "-serve")
	cmd.Env = append(os.Environ(), "JUNCTION_TOOLBOX_TOKEN="+token)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the handshake: %v", err)
	}
	hs, err := plugin.ParseHandshake(line)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + hs.Address
}

func TestURLSource(t *testing.T) {
	base := startServing(t, "s3cret")
	for _, proto := range []string{"connect", "grpc", "grpcweb"} {
		t.Run(proto, func(t *testing.T) {
			src, err := NewURL(base, &Options{Name: "u", Protocol: proto, Token: "s3cret"})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			h := serveThroughHub(t, "u", src)
			res := call(t, t.Context(), h, "echo", map[string]any{"text": proto})
			if textOf(t, res) != proto {
				t.Errorf("echo over %s = %q", proto, textOf(t, res))
			}

			bad, err := NewURL(base, &Options{Name: "bad", Protocol: proto, Token: "wrong"})
			if err != nil {
				t.Fatal(err)
			}
			defer bad.Close()
			if _, err := bad.Catalog(t.Context()); err == nil || !strings.Contains(err.Error(), "nauthenticated") {
				t.Errorf("Catalog with a wrong token: err = %v, want unauthenticated", err)
			}
		})
	}
}

func TestURLSourceDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	src, err := NewURL(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res, err := src.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}})
	if res != nil || err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("CallTool on a dead URL = %v, %v; want an unavailable error", res, err)
	}
	for _, bad := range []string{"", "ftp://x", "http://", "::"} {
		if _, err := NewURL(bad, nil); err == nil {
			t.Errorf("NewURL(%q) succeeded", bad)
		}
	}
}
