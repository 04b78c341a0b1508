package junction_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostSeer is a source that records, for each kind of request, the host
// its context names (junction.HostSession).
type hostSeer struct {
	mu   sync.Mutex
	seen map[string]junction.Host
}

func (s *hostSeer) see(ctx context.Context, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[what] = junction.HostSession(ctx)
}

func (s *hostSeer) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{
		Tools:     []*mcp.Tool{{Name: "op", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Resources: []*mcp.Resource{{URI: "test://r", Name: "r"}},
		Prompts:   []*mcp.Prompt{{Name: "p", Arguments: []*mcp.PromptArgument{{Name: "a"}}}},
	}, nil
}

func (s *hostSeer) CallTool(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.see(ctx, "tools/call")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
}

func (s *hostSeer) ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	s.see(ctx, "resources/read")
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "r"}}}, nil
}

func (s *hostSeer) GetPrompt(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	s.see(ctx, "prompts/get")
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "p"}}}}, nil
}

func (s *hostSeer) Complete(ctx context.Context, _ *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	s.see(ctx, "completion/complete")
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"x"}}}, nil
}

// TestSourcesSeeTheirHost checks that every request a source gets names
// the host's session in its context, the same Host for each: sources
// read their host there, never from the go-sdk request.
func TestSourcesSeeTheirHost(t *testing.T) {
	h := newHub(t)
	src := &hostSeer{seen: map[string]junction.Host{}}
	add(t, h, "s", src, junction.PrefixNever)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	ctx := t.Context()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "op", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p", Arguments: map[string]string{"a": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "p"},
		Argument: mcp.CompleteParamsArgument{Name: "a", Value: ""},
	}); err != nil {
		t.Fatal(err)
	}
	want := src.seen["tools/call"]
	if want == nil {
		t.Fatal("the tools/call's context names no host")
	}
	for _, what := range []string{"tools/call", "resources/read", "prompts/get", "completion/complete"} {
		got, ok := src.seen[what]
		switch {
		case !ok:
			t.Errorf("%s: the source was not asked", what)
		case got == nil:
			t.Errorf("%s: the source's context names no host", what)
		case got != want:
			t.Errorf("%s: the source's context names host %v, want the tools/call's %v", what, got, want)
		}
	}
	if got := junction.SessionHost(nil); got != nil {
		t.Errorf("SessionHost(nil) = %v, want a nil Host", got)
	}
}

// paramsHost is a Host of a front's own, with only what initialize sent.
type paramsHost struct {
	junction.Host
	p *mcp.InitializeParams
}

func (h paramsHost) InitializeParams() *mcp.InitializeParams { return h.p }

// TestRequestClient: a source's handler finds the client's version and
// capabilities in the request's _meta first, then in the request's Host
// (a front's own, with no go-sdk session behind the request), then
// nowhere.
func TestRequestClient(t *testing.T) {
	sampling := &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}
	host := paramsHost{p: &mcp.InitializeParams{ProtocolVersion: "2025-06-18", Capabilities: sampling}}
	hostCtx := junction.WithHostSession(t.Context(), host)
	plain := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t"}}
	modern := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "t", Meta: mcp.Meta{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}},
	}}}
	for _, tc := range []struct {
		name        string
		ctx         context.Context
		req         *mcp.CallToolRequest
		version     string
		sampling    bool
		elicitation bool
	}{
		{"the host's initialize", hostCtx, plain, "2025-06-18", true, false},
		{"the request's _meta first", hostCtx, modern, "2026-07-28", false, true},
		{"no host", t.Context(), plain, "", false, false},
		{"a host that has not initialized", junction.WithHostSession(t.Context(), paramsHost{}), plain, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := junction.RequestVersion(tc.ctx, tc.req); got != tc.version {
				t.Errorf("RequestVersion = %q, want %q", got, tc.version)
			}
			caps := junction.RequestCapabilities(tc.ctx, tc.req)
			if got := caps != nil && caps.Sampling != nil; got != tc.sampling {
				t.Errorf("RequestCapabilities = %+v: sampling %v, want %v", caps, got, tc.sampling)
			}
			if got := caps != nil && caps.Elicitation != nil; got != tc.elicitation {
				t.Errorf("RequestCapabilities = %+v: elicitation %v, want %v", caps, got, tc.elicitation)
			}
		})
	}
}
