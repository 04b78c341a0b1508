package junction_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// twoPathSource answers a call the same way on the typed path and the
// raw path, and records the trace context each call ran under.
type twoPathSource struct {
	failingSource
	result string // the result object's JSON; "" fails with err
	err    error
	panic  any // when not nil, the call panics with it
	traces chan junction.TraceContext
}

func (s *twoPathSource) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.traces <- junction.TraceContextOf(ctx)
	if s.panic != nil {
		panic(s.panic)
	}
	if s.err != nil {
		return nil, s.err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal([]byte(s.result), &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (s *twoPathSource) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	s.traces <- junction.TraceContextOf(ctx)
	if s.panic != nil {
		panic(s.panic)
	}
	if s.err != nil {
		return nil, s.err
	}
	return json.RawMessage(s.result), nil
}

// summary is what a CallInfo reports, comparable.
type summary struct {
	Source, Tool, Outcome, View, Args string
	Code                              int64
	Panicked                          bool
	ReqSize, ResSize                  int
	Span                              string // the trace context in Context
}

func summarize(ci junction.CallInfo) summary {
	return summary{Source: ci.Source, Tool: ci.Tool, Outcome: ci.Outcome, View: ci.View, Args: string(ci.Arguments()),
		Code: ci.Code, Panicked: ci.Panicked, ReqSize: ci.RequestSize(), ResSize: ci.ResultSize(),
		Span: junction.TraceContextOf(ci.Context).Parent}
}

// TestCallInfoSamePerPath: the typed path and the raw path report a call
// alike (arguments, sizes, outcome, view), and both hand Options.Trace
// the host's trace context and the source the context Trace returns.
func TestCallInfoSamePerPath(t *testing.T) {
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tc := range []struct {
		name   string
		src    *twoPathSource
		want   summary
		noSize bool
	}{
		{"ok", &twoPathSource{result: `{"content":[{"type":"text","text":"hi"}]}`},
			summary{Outcome: "ok", ResSize: len(`{"content":[{"type":"text","text":"hi"}]}`)}, false},
		{"tool error", &twoPathSource{result: `{"content":[{"type":"text","text":"no"}],"isError":true}`},
			summary{Outcome: "tool_error", ResSize: len(`{"content":[{"type":"text","text":"no"}],"isError":true}`)}, false},
		{"protocol error", &twoPathSource{err: &jsonrpc.Error{Code: -32042, Message: "custom"}},
			summary{Outcome: "protocol_error", Code: -32042}, false},
		{"source down", &twoPathSource{err: junction.ErrSourceDown}, summary{Outcome: "source_unavailable"}, true},
		{"cancelled", &twoPathSource{err: context.Canceled}, summary{Outcome: "cancelled"}, true},
		{"panic", &twoPathSource{panic: "boom"}, summary{Outcome: "internal", Panicked: true}, true},
		{"plain error", &twoPathSource{err: errors.New("disk on fire")}, summary{Outcome: "source_error"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.src.traces = make(chan junction.TraceContext, 2)
			infos := make(chan junction.CallInfo, 2)
			var traced []junction.TraceContext
			h := junction.New(&junction.Options{
				Observe: func(ci junction.CallInfo) { infos <- ci },
				Trace: func(ctx context.Context, c *junction.Call, p junction.TraceContext) context.Context {
					traced = append(traced, p)
					return junction.WithTraceContext(ctx, junction.TraceContext{Parent: "span-of-" + c.Name()})
				},
			})
			defer h.Close()
			if err := h.Add(t.Context(), "src", tc.src, nil); err != nil {
				t.Fatal(err)
			}
			v, err := h.NewView("reviewer", junction.Selection{})
			if err != nil {
				t.Fatal(err)
			}
			args := json.RawMessage(`{"path": "a.txt"}`)
			meta := mcp.Meta{"traceparent": parent, "tracestate": "k=v"}

			c, err := v.Begin(t.Context(), "src__op")
			if err != nil {
				t.Fatal(err)
			}
			c.CallTool(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "src__op", Arguments: args, Meta: meta}})
			typed := <-infos

			c, rc := v.BeginRaw(t.Context(), "src__op")
			if c == nil {
				t.Fatal("BeginRaw: the source is a RawCaller, but the call was not taken raw")
			}
			c.CallToolRaw(rc, json.RawMessage(`{"name":"op","arguments":{"path": "a.txt"},"_meta":{"traceparent":"`+parent+`","tracestate":"k=v"}}`))
			raw := <-infos

			want := tc.want
			want.Source, want.Tool, want.View, want.Args, want.ReqSize, want.Span = "src", "src__op", "reviewer", string(args), len(args), "span-of-src__op"
			if tc.noSize { // a tool error the hub made: its size depends on the message
				want.ResSize = summarize(typed).ResSize
				if want.ResSize == 0 {
					t.Errorf("typed: ResultSize() = 0, want the size of the tool error")
				}
			}
			if diff := cmp.Diff(want, summarize(typed)); diff != "" {
				t.Errorf("typed path CallInfo (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, summarize(raw)); diff != "" {
				t.Errorf("raw path CallInfo (-want +got):\n%s", diff)
			}
			if typed.Raw || !raw.Raw {
				t.Errorf("Raw = %v (typed), %v (raw), want false, true", typed.Raw, raw.Raw)
			}
			wantTrace := junction.TraceContext{Parent: parent, State: "k=v"}
			if diff := cmp.Diff([]junction.TraceContext{wantTrace, wantTrace}, traced); diff != "" {
				t.Errorf("Trace got parents (-want +got):\n%s", diff)
			}
			for _, path := range []string{"typed", "raw"} {
				if got := <-tc.src.traces; got.Parent != "span-of-src__op" {
					t.Errorf("%s path: the source ran under trace context %+v, want the one Trace returned", path, got)
				}
			}
		})
	}
}

// TestCallInfoArgumentsAbsent: a call without arguments reports {} on
// both paths (what the source is sent).
func TestCallInfoArgumentsAbsent(t *testing.T) {
	infos := make(chan junction.CallInfo, 2)
	h := junction.New(&junction.Options{Observe: func(ci junction.CallInfo) { infos <- ci }})
	defer h.Close()
	src := &twoPathSource{result: `{"content":[]}`, traces: make(chan junction.TraceContext, 2)}
	if err := h.Add(t.Context(), "src", src, nil); err != nil {
		t.Fatal(err)
	}
	v, _ := h.NewView("", junction.Selection{})
	c, err := v.Begin(t.Context(), "src__op")
	if err != nil {
		t.Fatal(err)
	}
	c.CallTool(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "src__op"}})
	c, rc := v.BeginRaw(t.Context(), "src__op")
	c.CallToolRaw(rc, json.RawMessage(`{"name":"op","arguments":null}`))
	for _, path := range []string{"typed", "raw"} {
		ci := <-infos
		if got := string(ci.Arguments()); got != "{}" || ci.RequestSize() != 2 {
			t.Errorf("%s path: Arguments() = %s, RequestSize() = %d, want {} and 2", path, got, ci.RequestSize())
		}
		if junction.TraceContextOf(ci.Context) != (junction.TraceContext{}) {
			t.Errorf("%s path: a trace context without Options.Trace", path)
		}
	}
}

// factSource starts each call and ends it at once with its result and
// the facts it says it learned of it (see junction.ResultFacts).
type factSource struct {
	failingSource
	result string
	facts  junction.ResultFacts
}

func (s *factSource) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(s.result), nil
}

func (s *factSource) StartToolRaw(ctx context.Context, name string, params json.RawMessage, done junction.RawDone) junction.RawCancel {
	done.RawDone(json.RawMessage(s.result), s.facts, nil)
	return junction.NoCancel
}

// answered is a junction.RawAnswer that keeps what it is handed.
type answered struct {
	res   json.RawMessage
	facts junction.ResultFacts
	werr  *jsonrpc.Error
}

func (a *answered) AnswerRaw(res json.RawMessage, facts junction.ResultFacts, werr *jsonrpc.Error) {
	a.res, a.facts, a.werr = res, facts, werr
}

// TestStartedCallFacts: a started call's outcome is told by the facts its
// source learned of the result where it learned them, and by a search of
// the result where it says nothing; the answer gets the facts on.
func TestStartedCallFacts(t *testing.T) {
	const plain, failed = `{"content":[]}`, `{"content":[],"isError":true}`
	read := junction.ResultRead
	for _, tc := range []struct {
		name    string
		result  string
		facts   junction.ResultFacts
		outcome string
	}{
		{"nothing said, no error", plain, 0, "ok"},
		{"nothing said, an error", failed, 0, "tool_error"},
		{"read, no error", plain, read | junction.ResultUntyped, "ok"},
		{"read, an error", failed, read | junction.ResultIsError, "tool_error"},
		// The source's word is taken: the result is not searched again.
		{"read, an error its reader found", plain, read | junction.ResultIsError, "tool_error"},
		{"read, no error its reader found", failed, read, "ok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			infos := make(chan junction.CallInfo, 1)
			h := junction.New(&junction.Options{Observe: func(ci junction.CallInfo) { infos <- ci }})
			defer h.Close()
			if err := h.Add(t.Context(), "src", &factSource{result: tc.result, facts: tc.facts}, nil); err != nil {
				t.Fatal(err)
			}
			v, err := h.NewView("", junction.Selection{})
			if err != nil {
				t.Fatal(err)
			}
			c, rc := v.BeginRaw(t.Context(), "src__op")
			rs, ok := rc.(junction.RawStarter)
			if c == nil || !ok {
				t.Fatal("BeginRaw: the source starts raw calls, but the call was not taken raw")
			}
			var a answered
			c.StartToolRaw(rs, json.RawMessage(`{"name":"op"}`), &a)
			if ci := <-infos; ci.Outcome != tc.outcome {
				t.Errorf("outcome %q, want %q", ci.Outcome, tc.outcome)
			}
			if string(a.res) != tc.result || a.facts != tc.facts || a.werr != nil {
				t.Errorf("answered %s (facts %b, error %v), want %s (facts %b)", a.res, a.facts, a.werr, tc.result, tc.facts)
			}
		})
	}
}
