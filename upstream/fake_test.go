package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// The test binary doubles as the upstream servers the tests talk to: with
// UPSTREAM_FAKE set, TestMain runs a fake MCP server instead of the tests.
//
//	UPSTREAM_FAKE=server   a go-sdk server with the tools below
//	UPSTREAM_FAKE=raw      a hand-written server with odd tools and content
//	UPSTREAM_FAKE=sleeper  sleeps; a grandchild for process-group tests
//
// Knobs (environment):
//
//	FAKE_FIX_FILE=path     exit at start unless path exists
//	FAKE_JUNK=1            print non-JSON-RPC lines on stdout, often
//	FAKE_MARK_DIR=dir      write marker files (e.g. "cancelled") there
//	FAKE_CHILD_PIDFILE=f   start a sleeper grandchild; write "leader child" pids to f
//	FAKE_STUBBORN=1        ignore SIGTERM and stdin EOF
//	FAKE_MANY=n            add n extra tools (pagination)
//	FAKE_DEBUG=1           go-sdk server logs on stderr
//	FAKE_EXIT_AFTER_MS=n   exit n milliseconds after starting
//	FAKE_HTTP_ADDR_FILE=f  serve Streamable HTTP on 127.0.0.1 instead; write the URL to f
//	FAKE_HTTP_STATELESS=1  ... in stateless mode
//	FAKE_SETLEVEL_HANG=l   never answer logging/setLevel to level l (it is still recorded)
//	FAKE_STRICT=1          raw: exit at once on a method it does not know (server/discover)
//
// The tool "levels" returns the levels logging/setLevel asked for, in
// order, comma-separated.
func TestMain(m *testing.M) {
	switch os.Getenv("UPSTREAM_FAKE") {
	case "":
		goleak.VerifyTestMain(m)
	case "server":
		runFakeServer()
	case "raw":
		runRawServer()
	case "cut":
		runCutServer()
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
	default:
		fmt.Fprintln(os.Stderr, "unknown UPSTREAM_FAKE mode")
		os.Exit(2)
	}
}

func mark(name string) {
	if dir := os.Getenv("FAKE_MARK_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, name), nil, 0o644)
	}
}

// awaitMark waits up to 30 s for the test to create the file name in
// FAKE_MARK_DIR.
func awaitMark(name string) error {
	file := filepath.Join(os.Getenv("FAKE_MARK_DIR"), name)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fake: no %q mark from the test", name)
		}
	}
}

// junkWriter prints a junk line before every message the server writes.
type junkWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (j *junkWriter) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	fmt.Fprintln(j.w, "Loading plugins... [not json]")
	fmt.Fprintln(j.w, `{"half": "a JSON object but not JSON-RPC"}`)
	fmt.Fprintln(j.w, `{"jsonrpc": broken`)
	fmt.Fprintln(j.w)
	return j.w.Write(p)
}

func (j *junkWriter) Close() error { return j.w.Close() }

func runFakeServer() {
	if f := os.Getenv("FAKE_FIX_FILE"); f != "" {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintln(os.Stderr, "fake: not fixed yet, exiting")
			os.Exit(1)
		}
	}
	if os.Getenv("FAKE_STUBBORN") != "" {
		signal.Ignore(syscall.SIGTERM)
	}
	if ms, _ := strconv.Atoi(os.Getenv("FAKE_EXIT_AFTER_MS")); ms > 0 {
		time.AfterFunc(time.Duration(ms)*time.Millisecond, func() { os.Exit(4) })
	}
	if f := os.Getenv("FAKE_CHILD_PIDFILE"); f != "" {
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "UPSTREAM_FAKE=sleeper")
		// Like a wrapper's child, the grandchild shares stdout and stderr.
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "fake: start sleeper:", err)
			os.Exit(1)
		}
		os.WriteFile(f+".tmp", fmt.Appendf(nil, "%d %d", os.Getpid(), child.Process.Pid), 0o644)
		os.Rename(f+".tmp", f)
	}
	fmt.Fprintln(os.Stderr, "fake: starting")

	var out io.WriteCloser = os.Stdout
	if os.Getenv("FAKE_JUNK") != "" {
		fmt.Fprintln(os.Stdout, "Server starting on stdio (this line is junk)")
		out = &junkWriter{w: os.Stdout}
	}
	var dbg *slog.Logger
	if os.Getenv("FAKE_DEBUG") != "" {
		dbg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1.0"}, &mcp.ServerOptions{
		Logger:   dbg,
		PageSize: 10,
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Argument.Value + "ob"}}}, nil
		},
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities: &mcp.ServerCapabilities{
			Logging:   &mcp.LoggingCapabilities{},
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	var levelsMu sync.Mutex
	var levels []string
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "logging/setLevel" {
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok {
					levelsMu.Lock()
					levels = append(levels, string(p.Level))
					levelsMu.Unlock()
					mark("setlevel-" + string(p.Level))
				}
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && string(p.Level) == os.Getenv("FAKE_SETLEVEL_HANG") {
					<-ctx.Done()
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	server.AddTool(&mcp.Tool{Name: "levels", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		levelsMu.Lock()
		defer levelsMu.Unlock()
		return text(strings.Join(levels, ",")), nil
	})
	obj := map[string]any{"type": "object"}
	server.AddTool(&mcp.Tool{
		Name:        "echo",
		Description: "echoes its raw arguments",
		InputSchema: map[string]any{
			"$schema":              "https://json-schema.org/draft/2020-12/schema",
			"type":                 "object",
			"properties":           map[string]any{"text": map[string]any{"$ref": "#/$defs/msg"}},
			"$defs":                map[string]any{"msg": map[string]any{"type": "string"}},
			"additionalProperties": false,
			"x-vendor":             "kept",
		},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := text(string(req.Params.Arguments))
		res.Meta = mcp.Meta{"echoedMeta": req.Params.Meta}
		return res, nil
	})
	server.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil
	})
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Steps   int `json:"steps"`
			DelayMS int `json:"delay_ms"`
		}
		json.Unmarshal(req.Params.Arguments, &args)
		for i := range args.Steps {
			select {
			case <-time.After(time.Duration(args.DelayMS) * time.Millisecond):
			case <-ctx.Done():
				mark("cancelled")
				return nil, ctx.Err()
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: float64(args.Steps), Message: "step"})
			}
		}
		return text("done"), nil
	})
	server.AddTool(&mcp.Tool{Name: "hang", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mark("started")
		<-ctx.Done()
		mark("cancelled")
		return nil, ctx.Err()
	})
	server.AddTool(&mcp.Tool{Name: "die", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "fake: dying mid-call")
		os.Exit(3)
		return nil, nil
	})
	server.AddTool(&mcp.Tool{Name: "grow", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		server.AddTool(&mcp.Tool{Name: "extra", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("extra"), nil
		})
		return text("grown"), nil
	})
	// sample and elicit ask the client: by a server-to-client request
	// before protocol 2026-07-28, by an input-required result after.
	modern := func(req *mcp.CallToolRequest) bool {
		if v, ok := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok {
			return v >= "2026-07-28" // stateless HTTP: per request
		}
		p := req.Session.InitializeParams()
		return p != nil && p.ProtocolVersion >= "2026-07-28"
	}
	sampleParams := &mcp.CreateMessageParams{
		MaxTokens: 10,
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}},
	}
	server.AddTool(&mcp.Tool{Name: "sample", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["s1"]; ok {
			switch r := r.(type) {
			case *mcp.CreateMessageResult:
				return text("sampled: " + r.Content.(*mcp.TextContent).Text), nil
			case *mcp.CreateMessageWithToolsResult:
				return text("sampled: " + r.Content[0].(*mcp.TextContent).Text), nil
			}
			return nil, fmt.Errorf("unexpected input response %T", r)
		}
		if modern(req) {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s1": sampleParams}}, nil
		}
		res, err := req.Session.CreateMessage(ctx, sampleParams)
		if err != nil {
			return nil, err
		}
		return text("sampled: " + res.Content.(*mcp.TextContent).Text), nil
	})
	// sample_legacy is written against the older revision's API: it asks
	// with a request of its own, which go-sdk refuses on a 2026-07-28
	// session.
	server.AddTool(&mcp.Tool{Name: "sample_legacy", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, sampleParams)
		if err != nil {
			return nil, err
		}
		return text("sampled: " + res.Content.(*mcp.TextContent).Text), nil
	})
	elicitParams := &mcp.ElicitParams{
		Message:         "name?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
	}
	server.AddTool(&mcp.Tool{Name: "elicit", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var res *mcp.ElicitResult
		if r, ok := req.Params.InputResponses["e1"]; ok {
			res, _ = r.(*mcp.ElicitResult)
		} else if modern(req) {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"e1": elicitParams}}, nil
		} else {
			var err error
			if res, err = req.Session.Elicit(ctx, elicitParams); err != nil {
				return nil, err
			}
		}
		if res == nil {
			return nil, errors.New("no elicit result")
		}
		return text(fmt.Sprintf("elicited: %s %v", res.Action, res.Content["name"])), nil
	})
	// elicit2 asks twice, one question after the other (a host before
	// 2026-07-28 only: it is for the bridge).
	server.AddTool(&mcp.Tool{Name: "elicit2", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var names []string
		for range 2 {
			res, err := req.Session.Elicit(ctx, elicitParams)
			if err != nil {
				return nil, err
			}
			names = append(names, fmt.Sprint(res.Content["name"]))
		}
		return text("elicited: " + strings.Join(names, ", ")), nil
	})
	// elicit_progress reports progress 1, asks (a host before 2026-07-28
	// only: it is for the bridge), and while it waits for the answer
	// reports progress 2 once the file "go" appears in FAKE_MARK_DIR
	// (marking "sent2"); then progress 3, and the answer.
	server.AddTool(&mcp.Tool{Name: "elicit_progress", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		tok := req.Params.GetProgressToken()
		notify := func(p float64) {
			if tok != nil {
				req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: 3})
			}
		}
		notify(1)
		type answer struct {
			res *mcp.ElicitResult
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			res, err := req.Session.Elicit(ctx, elicitParams)
			ch <- answer{res, err}
		}()
		if err := awaitMark("go"); err != nil {
			return nil, err
		}
		notify(2)
		mark("sent2")
		a := <-ch
		if a.err != nil {
			return nil, a.err
		}
		notify(3)
		return text(fmt.Sprintf("elicited: %s %v", a.res.Action, a.res.Content["name"])), nil
	})
	// elicit_then_done asks (a host before 2026-07-28 only: it is for the
	// bridge) without waiting for the answer, and once the file "go"
	// appears in FAKE_MARK_DIR reports progress 1 and answers "run N" (N:
	// its calls so far).
	var runs atomic.Int64
	server.AddTool(&mcp.Tool{Name: "elicit_then_done", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := runs.Add(1)
		go req.Session.Elicit(ctx, elicitParams)
		if err := awaitMark("go"); err != nil {
			return nil, err
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 1})
		}
		return text(fmt.Sprintf("run %d", n)), nil
	})
	server.AddTool(&mcp.Tool{Name: "log", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Logger: "fake", Data: "hello from upstream"})
		return text("logged"), nil
	})
	server.AddTool(&mcp.Tool{Name: "touch", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "fake://r"})
		return text("touched"), nil
	})
	n, _ := strconv.Atoi(os.Getenv("FAKE_MANY"))
	for i := range n {
		server.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("t"), nil
		})
	}
	server.AddResource(&mcp.Resource{URI: "fake://r", Name: "r", MIMEType: "text/plain"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "resource body"}}}, nil
	})
	server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "fake://items/{id}", Name: "item"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item"}}}, nil
	})
	server.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	server.AddPrompt(&mcp.Prompt{Name: "ask"}, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := req.Session.Elicit(ctx, elicitParams)
		if err != nil {
			return nil, err
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprint("hello ", res.Content["name"])}}}}, nil
	})

	if f := os.Getenv("FAKE_HTTP_ADDR_FILE"); f != "" {
		// Serve Streamable HTTP on a loopback port instead of stdio, until
		// stdin closes.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake: listen:", err)
			os.Exit(1)
		}
		// go-sdk serves 2026-07-28 only statelessly, and server-to-client
		// requests of older versions only with sessions.
		opts := &mcp.StreamableHTTPOptions{Stateless: os.Getenv("FAKE_HTTP_STATELESS") != "", PropagateRequestCancellation: true}
		go http.Serve(ln, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts))
		os.WriteFile(f+".tmp", []byte("http://"+ln.Addr().String()), 0o644)
		os.Rename(f+".tmp", f)
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	err := server.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: out})
	if os.Getenv("FAKE_STUBBORN") != "" {
		time.Sleep(time.Hour) // ignore stdin EOF too
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake: run:", err)
	}
	os.Exit(0)
}

// runRawServer speaks JSON-RPC by hand, to send what a go-sdk server
// would refuse to: tools with odd schemas and content of unknown types.
func runRawServer() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	reply := func(id json.RawMessage, result string) {
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		switch msg.Method {
		case "initialize":
			reply(msg.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}`)
		case "tools/list":
			reply(msg.ID, `{"tools":[{"name":"notype","inputSchema":{"properties":{"a":{"type":"string"}}}},{"name":"array","inputSchema":{"type":"array"}},{"name":"nullable","inputSchema":{"type":["object","null"]}},{"name":"noschema"},{"name":"","inputSchema":{"type":"object"}},{"name":"widget","inputSchema":{"type":"object"},"outputSchema":{"type":"string"}},{"name":"widget","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			if strings.Contains(in.Text(), `"boom"`) {
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32042,"message":"boom","data":{"why":"testing"}}}`+"\n", msg.ID)
				continue
			}
			reply(msg.ID, `{"content":[{"type":"text","text":"before"},{"type":"widget","spin":3}],"isError":false}`)
		case "ping":
			reply(msg.ID, `{}`)
		default:
			if os.Getenv("FAKE_STRICT") != "" {
				fmt.Fprintln(os.Stderr, "fake: unknown method", msg.Method, "- closing")
				os.Exit(3)
			}
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found: %s"}}`+"\n", msg.ID, strings.ReplaceAll(msg.Method, `"`, ""))
		}
	}
}

// fakeConfig returns a Config that runs the test binary as a fake server.
func fakeConfig(t *testing.T, mode string, env map[string]string) Config {
	t.Helper()
	// A binary built with -race sleeps a second on exit unless told not
	// to; without this every stop of a fake would take that long.
	e := map[string]string{"UPSTREAM_FAKE": mode, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return Config{Command: os.Args[0], Env: e, StopTimeout: 500 * time.Millisecond}
}

// startHTTPFake runs the fake server over Streamable HTTP in its own
// process and returns its URL; the process is stopped when the test ends.
func startHTTPFake(t *testing.T, env map[string]string) string {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "url")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "UPSTREAM_FAKE=server", "FAKE_HTTP_ADDR_FILE="+addrFile)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatal("HTTP fake did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
