package junction_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	junction "github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
)

// recorder is a client-side connection that keeps the raw result of
// every response it reads.
type recorder struct {
	mcp.Connection
	mu      sync.Mutex
	results []json.RawMessage
}

func (r *recorder) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := r.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Result != nil {
		r.mu.Lock()
		r.results = append(r.results, resp.Result)
		r.mu.Unlock()
	}
	return msg, err
}

func (r *recorder) last() json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[len(r.results)-1]
}

type recordingTransport struct {
	mcp.Transport
	rec *recorder
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	t.rec = &recorder{Connection: c}
	return t.rec, err
}

// TestVerbatimAnnotations: a tool whose source gives its annotations
// under MetaAnnotations is listed, and described, with that object byte
// for byte, and without the key in its _meta; other tools are listed as
// go-sdk writes them.
func TestVerbatimAnnotations(t *testing.T) {
	const given = `{"readOnlyHint":true,"x-vendor":{"z":1,"a":2}}`
	p := junction.NewPack("up")
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	p.AddTool(&mcp.Tool{Name: "kept", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        mcp.Meta{junction.MetaAnnotations: given, "own": "x"}}, noop)
	p.AddTool(&mcp.Tool{Name: "bad", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        mcp.Meta{junction.MetaAnnotations: `[1]`}}, noop)
	p.AddTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, noop)
	h := junction.New(nil)
	t.Cleanup(func() { h.Close() })
	add(t, h, "up", p, junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}

	rt := &recordingTransport{Transport: dataplane.New(v, nil).Transport()}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), rt, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Annotations json.RawMessage `json:"annotations"`
			Meta        map[string]any  `json:"_meta"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(rt.rec.last(), &list); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"up__kept":  given,
		"up__bad":   `{"idempotentHint":false,"readOnlyHint":true}`, // not an object: go-sdk's own encoding
		"up__plain": `{"idempotentHint":false,"readOnlyHint":true}`,
	}
	own := ""
	for _, tool := range list.Tools {
		if tool.Name == "up__kept" {
			own, _ = tool.Meta["own"].(string)
		}
		if got := string(tool.Annotations); got != want[tool.Name] {
			t.Errorf("%s is listed with annotations %s, want %s", tool.Name, got, want[tool.Name])
		}
		if _, ok := tool.Meta[junction.MetaAnnotations]; ok {
			t.Errorf("%s lists the carrier key in its _meta: %v", tool.Name, tool.Meta)
		}
	}
	if len(list.Tools) != 3 || own != "x" {
		t.Errorf("tools/list = %s", rt.rec.last())
	}

	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"up__kept"}}})
	if err != nil || res.IsError {
		t.Fatalf("describe_tools: %+v, %v", res, err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(strings.Join(strings.Fields(text), ""), given) {
		t.Errorf("describe_tools does not give the annotations verbatim: %s", text)
	}
}
