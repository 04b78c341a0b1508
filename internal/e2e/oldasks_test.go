package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// envLegacySampler makes this test binary a go-sdk MCP server over stdio
// whose tool "ask" samples the old way (ServerSession.CreateMessage),
// as a server written before 2026-07-28 does, though its SDK speaks
// 2026-07-28. Set only on the upstreams TestOldStyleSamplingBehindHub
// configures.
const envLegacySampler = "JUNCTION_E2E_LEGACY_SAMPLER"

func init() {
	if os.Getenv(envLegacySampler) != "" {
		os.Exit(runLegacySampler())
	}
}

func runLegacySampler() int {
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy-sampler", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say pong"}}}})
		if err != nil {
			return nil, err
		}
		text, _ := res.Content.(*mcp.TextContent)
		if text == nil {
			return nil, fmt.Errorf("the answer has no text")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + text.Text}}}, nil
	})
	// ask_typed asks the same way from a typed handler, whose error
	// go-sdk's server sends as a tool error (isError) rather than as a
	// JSON-RPC error.
	mcp.AddTool(s, &mcp.Tool{Name: "ask_typed"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "say pong"}}}})
		if err != nil {
			return nil, nil, err
		}
		text, _ := res.Content.(*mcp.TextContent)
		if text == nil {
			return nil, nil, fmt.Errorf("the answer has no text")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + text.Text}}}, nil, nil
	})
	// quote succeeds, quoting the SDK's refusal, and says which protocol
	// its session speaks: a hub that took it for a refusal would run it
	// again on a session of the host's own, at the host's revision.
	s.AddTool(&mcp.Tool{Name: "quote", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		version := "none"
		if p := req.Session.InitializeParams(); p != nil {
			version = p.ProtocolVersion
		}
		text := "the SDK would say: cannot be sent while serving a request on protocol version; session protocol " + version
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "legacy sampler:", err)
		return 1
	}
	return 0
}

// TestOldStyleSamplingBehindHub: a server whose SDK speaks 2026-07-28
// (go-sdk) but whose tool samples the old way works for a 2025-11-25 host
// behind a hub in its default config as it would directly: the hub, which
// speaks 2026-07-28 to it, learns from its SDK's refusal of the first
// call that it asks the old way, runs that call again on a session of the
// host's own at 2025-11-25, and the host is asked. Later calls go there
// at once. The refusal may come as a JSON-RPC error (up's ask) or as a
// tool error (typed's ask_typed); a call that succeeds is not taken for
// one, whatever its text says (typed's quote, before it).
func TestOldStyleSamplingBehindHub(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	body := fmt.Sprintf("servers:\n  up:\n    command: %q\n    env:\n      %s: \"1\"\n  typed:\n    command: %q\n    env:\n      %s: \"1\"\n",
		exe, envLegacySampler, exe, envLegacySampler)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startStdioHost(t, "serve", "-config", cfg, "-no-default-packs")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"e2e","version":"1"}}}`)
	h.answers("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// call calls tool and returns its result, answering the host's
	// sampling requests on the way.
	call := func(id int, tool string) string {
		t.Helper()
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
		for {
			var line []byte
			select {
			case l, ok := <-h.lines:
				if !ok {
					t.Fatal("junction closed stdout")
				}
				line = l
			case <-h.ctx.Done():
				t.Fatalf("call %d (%s): timed out", id, tool)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("junction wrote %q: %v", line, err)
			}
			switch {
			case m.Method == "sampling/createMessage":
				h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"pong"}}}`, m.ID))
			case string(m.ID) == fmt.Sprint(id):
				if m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
					t.Errorf("call %d (%s): %s %s; want a result", id, tool, m.Result, m.Error)
				}
				return string(m.Result)
			}
		}
	}
	want := func(id int, tool, text string) {
		t.Helper()
		if res := call(id, tool); !strings.Contains(res, text) {
			t.Errorf("call %d (%s) = %s; want %q in it", id, tool, res, text)
		}
	}
	want(2, "up__ask", "sampled: pong")
	want(3, "up__ask", "sampled: pong")
	if res := call(4, "typed__quote"); !strings.Contains(res, "session protocol") || strings.Contains(res, "2025-11-25") {
		t.Errorf("call 4 (typed__quote) = %s; want it answered on the hub's shared session, not run again on the host's own", res)
	}
	want(5, "typed__ask_typed", "sampled: pong")
	want(6, "typed__ask_typed", "sampled: pong")
	if n := strings.Count(h.stderr.String(), "requests of the kind before protocol 2026-07-28"); n != 2 {
		t.Errorf("the hub said %d times that a server asks the old way; want twice (up, then typed)", n)
	}
}
