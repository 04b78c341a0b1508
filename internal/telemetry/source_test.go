package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// lumberjack v2.2.1 starts one goroutine per rotated file (the one
// removing old files) that its Close does not end: one per audit file
// the process opens, not per call.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}

// fakeSource serves the tool "op" on both of the hub's paths: its
// result (or failure) comes from call, and it records the trace context
// each call ran under.
type fakeSource struct {
	call   func(ctx context.Context) (string, error) // the result object's JSON
	traces chan junction.TraceContext
}

func (s *fakeSource) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{Tools: []*mcp.Tool{{Name: "op", InputSchema: json.RawMessage(`{"type":"object"}`)}}}, nil
}

func (s *fakeSource) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	out, err := s.run(ctx)
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (s *fakeSource) CallToolRaw(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
	return s.run(ctx)
}

func (s *fakeSource) run(ctx context.Context) (json.RawMessage, error) {
	if s.traces != nil {
		s.traces <- junction.TraceContextOf(ctx)
	}
	out, err := s.call(ctx)
	return json.RawMessage(out), err
}

func (s *fakeSource) ReadResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("no resources")
}

func (s *fakeSource) GetPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("no prompts")
}

func (s *fakeSource) Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{}, nil
}

// okResult is a tool's plain result.
const okResult = `{"content":[{"type":"text","text":"hi"}]}`

func answer(res string, err error) func(context.Context) (string, error) {
	return func(context.Context) (string, error) { return res, err }
}

// newHub returns a hub with src as source "src", and its view "name".
func newHub(t *testing.T, opts *junction.Options, src junction.Source, name string) *junction.View {
	t.Helper()
	h := junction.New(opts)
	t.Cleanup(func() { h.Close() })
	if err := h.Add(t.Context(), "src", src, nil); err != nil {
		t.Fatal(err)
	}
	v, err := h.NewView(name, junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// connect connects a host called "test-host" to v's server in memory.
func connect(t *testing.T, v *junction.View) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-host", Version: "1"}, nil).Connect(t.Context(), dataplane.New(v, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
