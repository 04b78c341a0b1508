package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTraceContextHTTP: a call to an HTTP upstream carries the trace
// context it runs under (junction.WithTraceContext: the hub's span) in
// its _meta in place of the host's, and the host's as it was without
// one.
func TestTraceContextHTTP(t *testing.T) {
	t.Parallel()
	server := mcp.NewServer(&mcp.Implementation{Name: "meta-upstream", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "meta", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(map[string]any{"traceparent": req.Params.Meta["traceparent"], "tracestate": req.Params.Meta["tracestate"]})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
		})
	server.AddResource(&mcp.Resource{URI: "test://meta", Name: "meta"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			tp, _ := req.Params.Meta["traceparent"].(string)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://meta", Text: tp}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	r, _ := newRegistry(t, &Options{MinBackoff: time.Hour})
	s := addReady(t, r, "h", Config{Transport: TransportStreamableHTTP, URL: ts.URL})

	const host = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	const hub = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
	call := func(ctx context.Context) string {
		res, err := s.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "meta", Arguments: json.RawMessage(`{}`),
			Meta: mcp.Meta{"traceparent": host, "tracestate": "h=1"}}})
		if err != nil {
			t.Fatalf("CallTool(meta) = %v", err)
		}
		return resultText(t, res)
	}
	if got, want := call(t.Context()), `{"traceparent":"`+host+`","tracestate":"h=1"}`; got != want {
		t.Errorf("without a trace context: the upstream got %s, want the host's %s", got, want)
	}
	ctx := junction.WithTraceContext(t.Context(), junction.TraceContext{Parent: hub, State: "h=1,j=2"})
	if got, want := call(ctx), `{"traceparent":"`+hub+`","tracestate":"h=1,j=2"}`; got != want {
		t.Errorf("with the hub's trace context: the upstream got %s, want %s", got, want)
	}
	// A resources/read is not traced by the hub: the host's traceparent
	// goes on as it came.
	res, err := s.ReadResource(t.Context(), &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "test://meta", Meta: mcp.Meta{"traceparent": host}}})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != host {
		t.Errorf("ReadResource: %v, %v; want the upstream to get the host's traceparent %s", res, err, host)
	}
}

// TestRawTraceMeta: a raw call's _meta carries the trace context it runs
// under in place of the host's, and the host's as sent without one.
func TestRawTraceMeta(t *testing.T) {
	t.Parallel()
	hm := readHostMeta(t.Context(), json.RawMessage(`{"name":"x","arguments":{},"_meta":{"traceparent":"00-a-b-01","tracestate":"h=1","other":2}}`), nil)
	for _, tc := range []struct {
		tc   junction.TraceContext
		want string
	}{
		{junction.TraceContext{}, `{"other":2,"traceparent":"00-a-b-01","tracestate":"h=1"}`},
		{junction.TraceContext{Parent: "00-a-c-01", State: "h=1"}, `{"other":2,"traceparent":"00-a-c-01","tracestate":"h=1"}`},
		{junction.TraceContext{Parent: "00-a-c-01"}, `{"other":2,"traceparent":"00-a-c-01"}`},
	} {
		got := "{" + string(appendTraceMeta([]byte(`"other":2`), hm, tc.tc)) + "}"
		if got != tc.want {
			t.Errorf("_meta with trace context %+v = %s, want %s", tc.tc, got, tc.want)
		}
	}
}
