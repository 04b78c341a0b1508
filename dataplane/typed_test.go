package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// askingPack is a pack whose tool asks the host a question with an
// input-required result, as a tool for 2026-07-28 hosts does, and
// answers once it has the answer; it counts its calls.
func askingPack(calls *int) *junction.Pack {
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		*calls++
		if r, ok := req.Params.InputResponses["who"].(*mcp.ElicitResult); ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + r.Content["name"].(string) + " (" + req.Params.RequestState + ")"}}}, nil
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}},
			RequestState:  "s1",
		}, nil
	})
	return p
}

// TestPackQuestionToOlderHost: a pack's tool that asks with an
// input-required result, called by a host before 2026-07-28, which cannot
// read one. The question goes to the host as an elicitation request of
// its session, and the tool is called again with the answer and the
// request state; the host gets the tool's final result.
func TestPackQuestionToOlderHost(t *testing.T) {
	calls := 0
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "p", askingPack(&calls), &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	h := startStdio(t, v, nil)
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := h.recv(t); m["result"] == nil {
		t.Fatalf("initialize = %v", m)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	ask := h.recv(t)
	if ask["method"] != "elicitation/create" {
		t.Fatalf("first message after the call = %v, want an elicitation request", ask)
	}
	if msg, _ := ask["params"].(map[string]any)["message"].(string); msg != "Who are you?" {
		t.Errorf("elicitation message %q", msg)
	}
	id, _ := json.Marshal(ask["id"])
	h.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"action":"accept","content":{"name":"ada"}}}`)
	res := h.recv(t)
	if got := text(res); got != "hello ada (s1)" {
		t.Errorf("result = %v, want the text %q", res, "hello ada (s1)")
	}
	if r, _ := res["result"].(map[string]any); r != nil && (r["resultType"] != nil || r["inputRequests"] != nil) {
		t.Errorf("an older host got %v", r)
	}
	if calls != 2 {
		t.Errorf("the tool was called %d times, want 2", calls)
	}
	// A host that refuses the question: a protocol error with the
	// host's code, as from go-sdk's server.
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	ask = h.recv(t)
	id, _ = json.Marshal(ask["id"])
	h.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32600,"message":"no, thanks"}}`)
	res = h.recv(t)
	if e, _ := res["error"].(map[string]any); e == nil || e["code"] != float64(-32600) || !strings.Contains(fmt.Sprint(e["message"]), `fulfilling input request "who"`) || !strings.Contains(fmt.Sprint(e["message"]), "no, thanks") {
		t.Errorf("a refused question gave %v, want the host's error", res)
	}
}

// TestPackSeesItsCallersView: a pack called on the raw path learns the
// view its host is served by (junction.CallerView), so that the tools it
// calls for the host stay inside the host's selection.
func TestPackSeesItsCallersView(t *testing.T) {
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		name := "(none)"
		if v := junction.CallerView(ctx); v != nil {
			name = v.Name()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
	})
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("narrow", junction.Selection{Tools: []string{"whoami"}})
	if err != nil {
		t.Fatal(err)
	}
	h := startStdio(t, v, nil)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if got := text(h.recv(t)); got != "narrow" {
		t.Errorf("the pack saw the view %q, want narrow", got)
	}
}
