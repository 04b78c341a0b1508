package junction

import (
	"context"
	"encoding/json"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TraceContext is a W3C trace context (https://www.w3.org/TR/trace-context/)
// as MCP requests carry it in params._meta: the "traceparent" and
// "tracestate" members. The zero value is no trace context.
type TraceContext struct {
	Parent string // traceparent, such as "00-<trace id>-<span id>-01"
	State  string // tracestate; may be empty
}

// The _meta members a trace context travels in (the OpenTelemetry
// semantic conventions for MCP).
const (
	MetaKeyTraceParent = "traceparent"
	MetaKeyTraceState  = "tracestate"
)

var traceContextKey rareKey[TraceContext]

// WithTraceContext returns a context naming tc as the trace context a
// tool call runs under: a source that forwards the call (an upstream)
// sends it in its request's _meta in place of the host's. A tracer sets
// it from [Options.Trace] to its own span's.
func WithTraceContext(ctx context.Context, tc TraceContext) context.Context {
	return traceContextKey.with(ctx, tc)
}

// TraceContextOf returns the trace context ctx names (see
// [WithTraceContext]), or the zero one.
func TraceContextOf(ctx context.Context) TraceContext {
	return traceContextKey.of(ctx)
}

// metaTraceContext reads the trace context of a typed request's _meta.
func metaTraceContext(m mcp.Meta) TraceContext {
	var tc TraceContext
	tc.Parent, _ = m[MetaKeyTraceParent].(string)
	tc.State, _ = m[MetaKeyTraceState].(string)
	return tc
}

// paramsTraceContext reads the trace context in a raw tools/call params
// object's _meta.
func paramsTraceContext(params []byte) TraceContext {
	var tc TraceContext
	rawjson.Object(params, func(key, val []byte) {
		if string(key) != "_meta" {
			return
		}
		rawjson.Object(val, func(k, v []byte) {
			switch string(k) {
			case MetaKeyTraceParent:
				_ = json.Unmarshal(v, &tc.Parent)
			case MetaKeyTraceState:
				_ = json.Unmarshal(v, &tc.State)
			}
		})
	})
	return tc
}
