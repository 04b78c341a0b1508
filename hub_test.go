package junction_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type echoIn struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// newPack returns a pack with the given tool names, each echoing its own
// name and the "text" argument.
func newPack(name string, tools ...string) *junction.Pack {
	p := junction.NewPack(name)
	for _, tn := range tools {
		junction.AddTool(p, &mcp.Tool{Name: tn, Description: "echo from " + name},
			func(_ context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
				return nil, echoOut{Echo: name + "/" + req.Params.Name + ":" + in.Text}, nil
			})
	}
	return p
}

// connect serves view v to a go-sdk client in process, through a data
// plane (dataplane.Plane.Transport).
func connect(t *testing.T, v *junction.View, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := t.Context()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts)
	acked := make(chan struct{})
	var ack sync.Once
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				ack.Do(func() { close(acked) })
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(ctx, dataplane.New(v, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	// A client of 2026-07-28 with a list-changed handler subscribes after
	// Connect returns; a change before the server has the subscription is
	// told to nobody, so wait for the server's acknowledgement.
	if opts != nil && (opts.ToolListChangedHandler != nil || opts.PromptListChangedHandler != nil || opts.ResourceListChangedHandler != nil) &&
		cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
		select {
		case <-acked:
		case <-time.After(5 * time.Second):
			t.Fatal("the server did not acknowledge the client's subscription within 5s")
		}
	}
	return cs
}

func newHub(t *testing.T) *junction.Hub {
	t.Helper()
	h := junction.New(nil)
	t.Cleanup(func() { h.Close() })
	return h
}

func add(t *testing.T, h *junction.Hub, name string, src junction.Source, mode junction.PrefixMode) {
	t.Helper()
	if err := h.Add(t.Context(), name, src, &junction.SourceOptions{Prefix: mode}); err != nil {
		t.Fatalf("Add(%q) = %v", name, err)
	}
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%q) error: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("CallTool(%q) content = %d blocks, want 1", name, len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestPrefixModes(t *testing.T) {
	h := newHub(t)
	add(t, h, "a", newPack("a", "read", "write"), junction.PrefixAlways)
	add(t, h, "b", newPack("b", "read", "list"), junction.PrefixOnConflict)
	add(t, h, "c", newPack("c", "stat"), junction.PrefixNever)
	add(t, h, "d", newPack("d", "read"), junction.PrefixMCP)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	got := listNames(t, cs)
	// go-sdk lists tools sorted by name.
	want := []string{"a__read", "a__write", "b__read", "list", "mcp__d__read", "stat"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	text, isErr := callText(t, cs, "b__read", map[string]any{"text": "hi"})
	if isErr || text != `{"echo":"b/read:hi"}` {
		t.Errorf("call b__read = %q (isError %v), want the source-local name routed to b", text, isErr)
	}
	text, isErr = callText(t, cs, "mcp__d__read", map[string]any{"text": "hi"})
	if isErr || text != `{"echo":"d/read:hi"}` {
		t.Errorf("call mcp__d__read = %q (isError %v), want the source-local name routed to d", text, isErr)
	}
	if len(h.Collisions()) != 0 {
		t.Errorf("Collisions() = %v, want none", h.Collisions())
	}
}

func TestCollisionIsReportedNotShadowed(t *testing.T) {
	h := newHub(t)
	add(t, h, "first", newPack("first", "read"), junction.PrefixNever)
	add(t, h, "second", newPack("second", "read"), junction.PrefixNever)
	got := h.Collisions()
	want := []junction.Collision{{Kind: "tool", Name: "read", Winner: "first", Loser: "second"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Collisions() (-want +got):\n%s", diff)
	}
	v, _ := h.NewView("", junction.Selection{})
	text, _ := callText(t, connect(t, v, nil), "read", map[string]any{"text": "x"})
	if !strings.Contains(text, "first/read") {
		t.Errorf("read served by %q, want the first source", text)
	}
}

func TestLongNamesAreShortenedDeterministically(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	h := newHub(t)
	add(t, h, "server", newPack("server", long), junction.PrefixAlways)
	tools := h.Tools()
	if len(tools) != 1 {
		t.Fatalf("Tools() = %d, want 1", len(tools))
	}
	name := tools[0].Tool.Name
	if len(name) > junction.MaxNameLength {
		t.Errorf("name %q has %d bytes, want <= %d", name, len(name), junction.MaxNameLength)
	}
	if again := junction.ShortenName("server__"+long, junction.MaxNameLength); again != name {
		t.Errorf("ShortenName not deterministic: %q then %q", name, again)
	}
	if !strings.HasPrefix(name, "server__very_long") {
		t.Errorf("name %q lost its readable stem", name)
	}
	v, _ := h.NewView("", junction.Selection{})
	text, _ := callText(t, connect(t, v, nil), name, map[string]any{"text": "x"})
	if !strings.Contains(text, long) {
		t.Errorf("call routed with local name %q, want %q", text, long)
	}
}

func TestSelection(t *testing.T) {
	h := newHub(t)
	p := newPack("d", "t1", "t2", "t3", "t4")
	p.SetPreset("Minimal", "t1")
	p.SetPreset("more", "t1", "t2")
	add(t, h, "d", p, junction.PrefixNever)

	for _, tc := range []struct {
		name string
		sel  junction.Selection
		want []string
	}{
		{"none selects all", junction.Selection{}, []string{"t1", "t2", "t3", "t4"}},
		{"preset case-insensitive", junction.Selection{Presets: []string{"MINIMAL"}}, []string{"t1"}},
		{"union of presets and tools", junction.Selection{Presets: []string{"minimal"}, Tools: []string{"t3"}}, []string{"t1", "t3"}},
		{"deny alone removes from all", junction.Selection{Deny: []string{"t2"}}, []string{"t1", "t3", "t4"}},
		{"deny wins over preset", junction.Selection{Presets: []string{"more"}, Deny: []string{"t2"}}, []string{"t1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := h.NewView(tc.name, tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, listNames(t, connect(t, v, nil))); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("unselected tool refused at call time", func(t *testing.T) {
		v, _ := h.NewView("narrow", junction.Selection{Tools: []string{"t1"}})
		cs := connect(t, v, nil)
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "t2"})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("CallTool(t2) error = %v, want JSON-RPC -32602", err)
		}
	})

	for _, tc := range []struct {
		sel  junction.Selection
		want string
	}{
		{junction.Selection{Presets: []string{"nope"}}, `unknown preset "nope" (known: minimal, more)`},
		{junction.Selection{Tools: []string{"t9"}}, `unknown tool "t9" (known: t1, t2, t3, t4)`},
		{junction.Selection{Deny: []string{"t9"}}, `unknown tool "t9"`},
		{junction.Selection{Tools: []string{"t1"}, Deny: []string{"t1"}}, `tool selection is empty`},
	} {
		_, err := h.NewView("bad", tc.sel)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewView(%+v) error = %v, want it to contain %q", tc.sel, err, tc.want)
		}
	}
}

// failingSource is a Source whose CallTool behaviour is set per test.
type failingSource struct {
	call func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

func (f *failingSource) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{Tools: []*mcp.Tool{{Name: "op", Description: "an op", InputSchema: json.RawMessage(`{"type":"object"}`)}}}, nil
}
func (f *failingSource) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return f.call(ctx, req)
}
func (f *failingSource) ReadResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("no resources")
}
func (f *failingSource) GetPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}
func (f *failingSource) Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return nil, nil
}

func TestSourceFailuresBecomeToolErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		call     func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)
		timeout  time.Duration
		wantCode string
	}{
		{"plain error", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("disk on fire")
		}, 0, junction.CodeSourceError},
		{"source down", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("upstream x: %w", junction.ErrSourceDown)
		}, 0, junction.CodeSourceUnavailable},
		{"panic", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			panic("boom")
		}, 0, junction.CodeInternal},
		{"timeout", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, 50 * time.Millisecond, junction.CodeTimeout},
		{"nil result", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, nil
		}, 0, junction.CodeInternal},
		{"chosen code", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &junction.ToolError{Code: "WALLET_NOT_CONFIGURED", Message: "no wallet"}
		}, 0, "WALLET_NOT_CONFIGURED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var observed atomic.Value
			h := junction.New(&junction.Options{Observe: func(c junction.CallInfo) { observed.Store(c) }})
			defer h.Close()
			if err := h.Add(t.Context(), "src", &failingSource{call: tc.call}, &junction.SourceOptions{Timeout: tc.timeout}); err != nil {
				t.Fatal(err)
			}
			v, _ := h.NewView("", junction.Selection{})
			text, isErr := callText(t, connect(t, v, nil), "src__op", nil)
			if !isErr {
				t.Fatalf("isError = false, want true (text %q)", text)
			}
			var body struct {
				OK    *bool  `json:"ok"`
				Tool  string `json:"tool"`
				Error struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(text), &body); err != nil {
				t.Fatalf("tool error text %q is not JSON: %v", text, err)
			}
			if body.OK == nil || *body.OK || body.Tool != "src__op" || body.Error.Code != tc.wantCode || body.Error.Message == "" {
				t.Errorf("tool error = %s, want ok:false, tool src__op, code %s and a message", text, tc.wantCode)
			}
			if c, _ := observed.Load().(junction.CallInfo); c.Outcome != strings.ToLower(tc.wantCode) || c.Source != "src" {
				t.Errorf("observed %+v, want outcome %q", c, strings.ToLower(tc.wantCode))
			}
		})
	}
}

func TestProtocolErrorStaysProtocolError(t *testing.T) {
	h := newHub(t)
	add(t, h, "src", &failingSource{call: func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32042, Message: "custom"}
	}}, junction.PrefixNever)
	v, _ := h.NewView("", junction.Selection{})
	_, err := connect(t, v, nil).CallTool(t.Context(), &mcp.CallToolParams{Name: "op"})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32042 {
		t.Errorf("error = %v, want JSON-RPC -32042", err)
	}
}

func TestTypedToolValidation(t *testing.T) {
	h := newHub(t)
	add(t, h, "p", newPack("p", "echo"), junction.PrefixNever)
	v, _ := h.NewView("", junction.Selection{})
	cs := connect(t, v, nil)
	text, isErr := callText(t, cs, "echo", map[string]any{"text": 5})
	if !isErr || !strings.HasPrefix(text, `validating "arguments"`) {
		t.Errorf("bad argument type: got %q (isError %v), want a validation tool error", text, isErr)
	}
	text, isErr = callText(t, cs, "echo", map[string]any{"text": "x", "extra": 1})
	if !isErr {
		t.Errorf("unknown property accepted: %q", text)
	}
}

func TestListChangedWhenPackChanges(t *testing.T) {
	h := newHub(t)
	p := newPack("p", "one")
	add(t, h, "p", p, junction.PrefixNever)
	v, _ := h.NewView("", junction.Selection{})
	changed := make(chan struct{}, 10)
	cs := connect(t, v, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	junction.AddTool(p, &mcp.Tool{Name: "two", Description: "second"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "2"}}}, nil, nil
	})
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed within 5s of adding a tool")
	}
	if diff := cmp.Diff([]string{"one", "two"}, listNames(t, cs)); diff != "" {
		t.Errorf("tools after change (-want +got):\n%s", diff)
	}
}

func TestResourcesPromptsCompletionRouting(t *testing.T) {
	h := newHub(t)
	p := junction.NewPack("docs")
	p.AddResource(&mcp.Resource{URI: "docs://readme", Name: "readme", MIMEType: "text/plain"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "hello"}}}, nil
	})
	p.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "docs://page/{id}", Name: "page"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "page " + req.Params.URI}}}, nil
	})
	p.AddPrompt(&mcp.Prompt{Name: "greet", Description: "greet someone", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + req.Params.Arguments["who"] + " from " + req.Params.Name}}}}, nil
	})
	p.SetCompletionHandler(func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Ref.Name + ":" + req.Params.Argument.Value}}}, nil
	})
	add(t, h, "docs", p, junction.PrefixAlways)
	v, _ := h.NewView("", junction.Selection{})
	cs := connect(t, v, nil)
	ctx := t.Context()

	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://readme"})
	if err != nil || r.Contents[0].Text != "hello" {
		t.Errorf("read docs://readme = %v, %v", r, err)
	}
	r, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://page/7"})
	if err != nil || r.Contents[0].Text != "page docs://page/7" {
		t.Errorf("read template docs://page/7 = %v, %v", r, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://missing"}); err == nil {
		t.Error("read of an unknown URI succeeded")
	}
	g, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "docs__greet", Arguments: map[string]string{"who": "ann"}})
	if err != nil || g.Messages[0].Content.(*mcp.TextContent).Text != "hi ann from greet" {
		t.Errorf("prompt docs__greet = %v, %v; want it routed with its local name", g, err)
	}
	c, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "docs__greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}})
	if err != nil || len(c.Completion.Values) != 1 || c.Completion.Values[0] != "greet:a" {
		t.Errorf("complete = %v, %v", c, err)
	}
	c, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, Argument: mcp.CompleteParamsArgument{Name: "x"}})
	if err != nil || c.Completion.Values == nil || len(c.Completion.Values) != 0 {
		t.Errorf("complete unknown prompt = %v, %v; want empty values", c, err)
	}
}

func TestOddSchemaIsSkippedNotPanicking(t *testing.T) {
	src := &oddSource{}
	h := newHub(t)
	add(t, h, "odd", src, junction.PrefixNever)
	var names []string
	for _, ti := range h.Tools() {
		names = append(names, ti.Tool.Name)
	}
	if diff := cmp.Diff([]string{"good"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

type oddSource struct{ failingSource }

func (oddSource) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{Tools: []*mcp.Tool{
		{Name: "noschema"},
		{Name: "arrayschema", InputSchema: json.RawMessage(`{"type":"array"}`)},
		{Name: "notjson", InputSchema: json.RawMessage(`{`)},
		{Name: "good", Description: "fine", InputSchema: json.RawMessage(`{"type":"object","$defs":{"x":{}}}`)},
	}}, nil
}

func TestDuplicateAndBadSourceNames(t *testing.T) {
	h := newHub(t)
	add(t, h, "a", newPack("a"), junction.PrefixAlways)
	if err := h.Add(t.Context(), "a", newPack("a"), nil); !errors.Is(err, junction.ErrDuplicateSource) {
		t.Errorf("second Add(a) = %v, want ErrDuplicateSource", err)
	}
	for _, bad := range []string{"", "x__y"} {
		if err := h.Add(t.Context(), bad, newPack(bad), nil); err == nil {
			t.Errorf("Add(%q) succeeded", bad)
		}
	}
	if err := h.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if got := h.SourceNames(); len(got) != 0 {
		t.Errorf("SourceNames after Remove = %v", got)
	}
}

func TestHubCall(t *testing.T) {
	h := newHub(t)
	add(t, h, "p", newPack("p", "echo"), junction.PrefixAlways)
	res, err := h.Call(t.Context(), "p__echo", json.RawMessage(`{"text":"in"}`))
	if err != nil || res.IsError {
		t.Fatalf("Call = %v, %v", res, err)
	}
	if _, err := h.Call(t.Context(), "missing", nil); !errors.Is(err, junction.ErrUnknownTool) {
		t.Errorf("Call(missing) = %v, want ErrUnknownTool", err)
	}
}

func TestRefreshWithoutChangeSendsNoListChanged(t *testing.T) {
	h := newHub(t)
	add(t, h, "p", newPack("p", "one"), junction.PrefixNever)
	v, _ := h.NewView("", junction.Selection{})
	changed := make(chan struct{}, 10)
	connect(t, v, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	// First a real change, to know the client's subscription is live.
	p := newPack("q", "two")
	add(t, h, "q", p, junction.PrefixNever)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/list_changed after adding a source")
	}
	time.Sleep(50 * time.Millisecond) // let the debounced notification settle
	for len(changed) > 0 {
		<-changed
	}
	if err := h.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
		t.Error("tools/list_changed sent after a refresh that changed nothing")
	case <-time.After(300 * time.Millisecond):
	}
}

func TestDriftPolicies(t *testing.T) {
	// Lock a hub with tools a and b, then serve a changed b and a new c.
	h0 := newHub(t)
	add(t, h0, "s", newPack("s", "a", "b"), junction.PrefixNever)
	lock := junction.NewManifest(h0.Tools())

	changed := junction.NewPack("s")
	for _, n := range []string{"a", "b", "c"} {
		desc := "echo from s"
		if n == "b" {
			desc = "now it exfiltrates"
		}
		junction.AddTool(changed, &mcp.Tool{Name: n, Description: desc}, func(context.Context, *mcp.CallToolRequest, echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{}, nil
		})
	}
	for _, tc := range []struct {
		policy    junction.DriftPolicy
		wantTools []string
		wantDrift bool
	}{
		{junction.DriftWarn, []string{"a", "b", "c"}, true},
		{junction.DriftBlock, []string{"a"}, true},
		{junction.DriftAccept, []string{"a", "b", "c"}, false},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			h := junction.New(&junction.Options{Lock: lock})
			defer h.Close()
			if err := h.Add(t.Context(), "s", changed, &junction.SourceOptions{Prefix: junction.PrefixNever, Drift: tc.policy}); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, ti := range h.Tools() {
				names = append(names, ti.Tool.Name)
			}
			if diff := cmp.Diff(tc.wantTools, names); diff != "" {
				t.Errorf("served tools (-want +got):\n%s", diff)
			}
			d := h.Drift()["s"]
			if (d != nil) != tc.wantDrift {
				t.Fatalf("Drift() = %v, want drift %v", d, tc.wantDrift)
			}
			if d != nil {
				want := &junction.Drift{Added: []string{"c"}, Changed: []junction.ToolChange{{Name: "b", Fields: []string{"description"}}}}
				if diff := cmp.Diff(want, d); diff != "" {
					t.Errorf("drift (-want +got):\n%s", diff)
				}
			}
			// Re-locking (as "junction lock" does: a hub without a lock
			// serves everything) clears it and unblocks.
			unlocked := junction.New(nil)
			defer unlocked.Close()
			unlocked.Add(t.Context(), "s", changed, &junction.SourceOptions{Prefix: junction.PrefixNever})
			if err := h.SetLock(junction.NewManifest(unlocked.Tools())); err != nil {
				t.Fatal(err)
			}
			if d := h.Drift()["s"]; d != nil {
				t.Errorf("drift after re-lock = %v, want none", d)
			}
			if n := len(h.Tools()); n != 3 {
				t.Errorf("%d tools after re-lock, want 3", n)
			}
		})
	}
}

// TestNoDriftWhileServingNothing: a locked source that serves no tools at
// all (an upstream not connected yet, stopped, or withdrawn) is not
// reported as having lost them all.
func TestNoDriftWhileServingNothing(t *testing.T) {
	h0 := newHub(t)
	add(t, h0, "s", newPack("s", "a", "b"), junction.PrefixNever)
	h := junction.New(&junction.Options{Lock: junction.NewManifest(h0.Tools())})
	defer h.Close()
	if err := h.Add(t.Context(), "s", junction.NewPack("s"), &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	if d := h.Drift()["s"]; d != nil {
		t.Errorf("Drift() of a source serving nothing = %v, want none", d)
	}
}

func TestReplaceAndSourceOptions(t *testing.T) {
	h := newHub(t)
	add(t, h, "a", newPack("a", "x"), junction.PrefixAlways)
	add(t, h, "b", newPack("b", "y"), junction.PrefixAlways)
	if err := h.Replace(t.Context(), "a", newPack("a2", "x", "z"), nil); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ti := range h.Tools() {
		names = append(names, ti.Tool.Name)
	}
	if diff := cmp.Diff([]string{"a__x", "a__z", "b__y"}, names); diff != "" {
		t.Errorf("after Replace (-want +got):\n%s", diff)
	}
	res, err := h.Call(t.Context(), "a__x", json.RawMessage(`{"text":"q"}`))
	if err != nil || !strings.Contains(string(res.StructuredContent.(json.RawMessage)), "a2/x") {
		t.Errorf("a__x after Replace routed to %v, %v; want the new source", res, err)
	}
	if err := h.SetSourceOptions("b", junction.SourceOptions{Prefix: junction.PrefixNever, Deny: []string{"y"}}); err != nil {
		t.Fatal(err)
	}
	if len(h.Tools()) != 2 {
		t.Errorf("after denying b's only tool: %d tools, want 2", len(h.Tools()))
	}
	if err := h.SetSourceOptions("nope", junction.SourceOptions{}); err == nil {
		t.Error("SetSourceOptions on an unknown source succeeded")
	}
}

func TestViewSourcesAndHubPresets(t *testing.T) {
	h := junction.New(&junction.Options{Presets: map[string][]string{"Mixed": {"a__x", "b__y"}}})
	defer h.Close()
	add(t, h, "a", newPack("a", "x", "w"), junction.PrefixAlways)
	add(t, h, "b", newPack("b", "y"), junction.PrefixAlways)
	v, err := h.NewView("p", junction.Selection{Sources: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a__w", "a__x"}, listNames(t, connect(t, v, nil))); diff != "" {
		t.Errorf("sources view (-want +got):\n%s", diff)
	}
	v2, err := h.NewView("q", junction.Selection{Presets: []string{"mixed"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a__x", "b__y"}, listNames(t, connect(t, v2, nil))); diff != "" {
		t.Errorf("hub preset view (-want +got):\n%s", diff)
	}
	if _, err := h.NewView("r", junction.Selection{Sources: []string{"zzz"}}); err == nil || !strings.Contains(err.Error(), `unknown source "zzz"`) {
		t.Errorf("unknown source: %v", err)
	}
}

func TestPointerOutputSchemaIsObject(t *testing.T) {
	p := junction.NewPack("p")
	junction.AddTool(p, &mcp.Tool{Name: "ptr", Description: "pointer out"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, *echoOut, error) {
		return nil, &echoOut{Echo: "x"}, nil
	})
	c, _ := p.Catalog(t.Context())
	b, _ := json.Marshal(c.Tools[0].OutputSchema)
	if !strings.HasPrefix(string(b), `{"type":"object"`) {
		t.Errorf("output schema = %s, want type object", b)
	}
	h := newHub(t)
	add(t, h, "p", p, junction.PrefixNever)
	res, err := h.Call(t.Context(), "ptr", nil)
	if err != nil || res.IsError || string(res.StructuredContent.(json.RawMessage)) != `{"echo":"x"}` {
		t.Errorf("call = %+v, %v", res, err)
	}
}

// TestGreeted: the hub's Greeted channel closes when a host finishes its
// handshake with a view, and not before.
func TestGreeted(t *testing.T) {
	h := junction.New(nil)
	defer h.Close()
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Greeted():
		t.Fatal("Greeted is closed before any host greeted")
	default:
	}
	v.HostInitialized(nil)
	v.HostInitialized(nil) // a second host: no second close
	select {
	case <-h.Greeted():
	default:
		t.Fatal("Greeted is still open after a host's notifications/initialized")
	}
}
