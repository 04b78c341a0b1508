package telemetry_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/telemetry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const (
	hostTraceID = "0af7651916cd43dd8448eb211c80319c"
	hostSpanID  = "b7ad6b7169203331"
	hostParent  = "00-" + hostTraceID + "-" + hostSpanID + "-01"
)

// tracedHub returns a view of a hub traced into an in-memory exporter,
// with src as source "src".
func tracedHub(t *testing.T, src junction.Source) (*junction.View, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	tr := telemetry.NewTracer(tp)
	return newHub(t, &junction.Options{Trace: tr.Start, Observe: tr.Observe}, src, "reviewer"), exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.Emit()
	}
	return m
}

// TestSpanPerCall: a call makes one server span named after the tool,
// a child of the host's traceparent, with the MCP attributes; the source
// runs under that span's trace context; both paths alike.
func TestSpanPerCall(t *testing.T) {
	src := &fakeSource{call: answer(okResult, nil), traces: make(chan junction.TraceContext, 1)}
	v, exp := tracedHub(t, src)
	meta := mcp.Meta{"traceparent": hostParent, "tracestate": "vendor=1"}

	check := func(path string) {
		t.Helper()
		spans := exp.GetSpans()
		exp.Reset()
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans, want 1", path, len(spans))
		}
		s := spans[0]
		if s.Name != "tools/call src__op" || s.SpanKind != trace.SpanKindServer {
			t.Errorf("%s: span %q of kind %v, want \"tools/call src__op\", server", path, s.Name, s.SpanKind)
		}
		if s.Parent.TraceID().String() != hostTraceID || s.Parent.SpanID().String() != hostSpanID || !s.Parent.IsRemote() {
			t.Errorf("%s: parent %v, want the host's span %s", path, s.Parent, hostParent)
		}
		if s.SpanContext.TraceID().String() != hostTraceID || s.SpanContext.TraceState().Get("vendor") != "1" {
			t.Errorf("%s: span context %v, want the host's trace and tracestate", path, s.SpanContext)
		}
		a := attrs(s)
		for k, want := range map[attribute.Key]string{
			"mcp.method.name": "tools/call", "gen_ai.tool.name": "src__op", "gen_ai.operation.name": "execute_tool",
			"junction.source": "src", "junction.view": "reviewer", "junction.request.bytes": "2", "junction.result.bytes": "41",
		} {
			if a[k] != want {
				t.Errorf("%s: attribute %s = %q, want %q", path, k, a[k], want)
			}
		}
		if s.Status.Code != codes.Unset {
			t.Errorf("%s: status %v, want unset for ok", path, s.Status)
		}
		got := <-src.traces
		wantParent := "00-" + hostTraceID + "-" + s.SpanContext.SpanID().String() + "-01"
		if got.Parent != wantParent || got.State != "vendor=1" {
			t.Errorf("%s: the source ran under %+v, want traceparent %s (the hub's span) and the host's tracestate", path, got, wantParent)
		}
	}

	c, err := v.Begin(t.Context(), "src__op")
	if err != nil {
		t.Fatal(err)
	}
	c.CallTool(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "src__op", Meta: meta}})
	check("typed")

	c, rc := v.BeginRaw(t.Context(), "src__op")
	if c == nil {
		t.Fatal("BeginRaw: not taken raw")
	}
	c.CallToolRaw(rc, json.RawMessage(`{"name":"op","arguments":{},"_meta":{"traceparent":"`+hostParent+`","tracestate":"vendor=1"}}`))
	check("raw")
}

// TestSpanStatus: a failed call's span has an error status and the
// outcome as error.type; a protocol error also its code.
func TestSpanStatus(t *testing.T) {
	for _, tc := range []struct {
		call      func(context.Context) (string, error)
		errorType string
		code      string
	}{
		{answer(`{"content":[],"isError":true}`, nil), "tool_error", ""},
		{answer("", &jsonrpc.Error{Code: -32602, Message: "bad"}), "protocol_error", "-32602"},
		{answer("", junction.ErrSourceDown), "source_unavailable", ""},
		{func(context.Context) (string, error) { panic("boom") }, "panic", ""},
	} {
		t.Run(tc.errorType, func(t *testing.T) {
			v, exp := tracedHub(t, &fakeSource{call: tc.call})
			v.Call(t.Context(), "src__op", nil)
			spans := exp.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			a := attrs(s)
			if s.Status.Code != codes.Error || a["error.type"] != tc.errorType || a["rpc.response.status_code"] != tc.code {
				t.Errorf("status %v, error.type %q, rpc.response.status_code %q; want error, %q, %q", s.Status, a["error.type"], a["rpc.response.status_code"], tc.errorType, tc.code)
			}
		})
	}
}

// TestSpanNesting: without a traceparent a call's span is a root, and a
// tool a source calls through the hub while serving it (a pack that
// composes tools) is its child.
func TestSpanNesting(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := telemetry.NewTracer(tp)
	h := junction.New(&junction.Options{Trace: tr.Start, Observe: tr.Observe})
	defer h.Close()
	inner := &fakeSource{call: answer(okResult, nil)}
	outer := &fakeSource{call: func(ctx context.Context) (string, error) {
		if _, err := h.Call(ctx, "inner__op", nil); err != nil {
			return "", err
		}
		return okResult, nil
	}}
	for name, src := range map[string]junction.Source{"inner": inner, "outer": outer} {
		if err := h.Add(t.Context(), name, src, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Call(t.Context(), "outer__op", nil); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	in, out := spans[0], spans[1] // ended first: the inner one
	if !strings.HasSuffix(in.Name, "inner__op") || !strings.HasSuffix(out.Name, "outer__op") {
		t.Fatalf("spans %q, %q; want inner__op's, then outer__op's", in.Name, out.Name)
	}
	if out.Parent.IsValid() {
		t.Errorf("outer span's parent %v, want none (a root)", out.Parent)
	}
	if in.Parent.SpanID() != out.SpanContext.SpanID() || in.SpanContext.TraceID() != out.SpanContext.TraceID() {
		t.Errorf("inner span's parent %v, want the outer span %v", in.Parent, out.SpanContext)
	}
}

// TestTracingEnabled: the standard variables turn traces on and off, and
// what junction cannot do is an error saying what to set.
func TestTracingEnabled(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		on      bool
		wantErr string
	}{
		{nil, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_SDK_DISABLED": "true"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTLP only"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, false, "4318"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, ""},
	} {
		on, err := telemetry.TracingEnabled(func(k string) string { return tc.env[k] })
		if on != tc.on || (err == nil) != (tc.wantErr == "") || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("TracingEnabled(%v) = %v, %v; want %v and an error containing %q", tc.env, on, err, tc.on, tc.wantErr)
		}
	}
}
