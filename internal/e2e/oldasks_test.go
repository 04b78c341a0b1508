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
// at once.
func TestOldStyleSamplingBehindHub(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	body := fmt.Sprintf("servers:\n  up:\n    command: %q\n    env:\n      %s: \"1\"\n", exe, envLegacySampler)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startStdioHost(t, "serve", "-config", cfg, "-no-default-packs")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"e2e","version":"1"}}}`)
	h.answers("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for call := 2; call <= 3; call++ {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"up__ask","arguments":{}}}`, call))
		for answered := false; !answered; {
			var line []byte
			select {
			case l, ok := <-h.lines:
				if !ok {
					t.Fatal("junction closed stdout")
				}
				line = l
			case <-h.ctx.Done():
				t.Fatalf("call %d: timed out", call)
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
			case string(m.ID) == fmt.Sprint(call):
				answered = true
				if m.Error != nil || !strings.Contains(string(m.Result), "sampled: pong") || strings.Contains(string(m.Result), `"isError":true`) {
					t.Errorf("call %d: %s %s; want the host's answer (sampled: pong)", call, m.Result, m.Error)
				}
			}
		}
	}
	if n := strings.Count(h.stderr.String(), "requests of the kind before protocol 2026-07-28"); n != 1 {
		t.Errorf("the hub said %d times that the server asks the old way; want once", n)
	}
}
