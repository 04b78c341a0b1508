package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCodeModeThroughBinary: junction serve with code mode on, over the
// real server-everything, stdio at both protocol revisions and HTTP: a
// script chains its tools, one of which asks the host to sample (the
// request reaches the host through the run_script call, and the script
// goes on with the answer), reports progress per call, and only its
// answer comes back; the inner calls are audited as the script's.
func TestCodeModeThroughBinary(t *testing.T) {
	node, everything := everythingCmd(t)
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
code_mode: on
`, node, everything))
	audit := filepath.Join(dir, "audit.jsonl")
	url := startServe(t, "-insecure-no-auth", "-config", cfg, "-audit", audit)

	const script = `
const sum: any = await everything.get_sum({a: 2, b: 3});
const echoed: any = await tools["everything__echo"]({message: "from the script"});
const sampled: any = await everything.trigger_sampling_request({prompt: "say hi", maxTokens: 5});
let refused = "";
try { await everything.no_such_tool({}); } catch (e: any) { refused = e.message; }
return {sum: sum[0].text, echoed: echoed[0].text, sampled: JSON.stringify(sampled), refused};`

	var sampledBy, progressed atomic.Int64
	client := func() *mcp.Client {
		return newClient(&mcp.ClientOptions{
			CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				sampledBy.Add(1)
				return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant", Content: &mcp.TextContent{Text: "hi from the host"}}, nil
			},
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				if tok, _ := req.Params.ProgressToken.(string); strings.HasPrefix(tok, "p-") {
					progressed.Add(1)
				}
			},
		})
	}
	sessions := map[string]func(t *testing.T) *mcp.ClientSession{
		"stdio-2026-07-28": func(t *testing.T) *mcp.ClientSession {
			return connectStdioOpts(t, client(), newOutput(), nil, "-config", cfg)
		},
		"stdio-2025-11-25": func(t *testing.T) *mcp.ClientSession {
			return connectStdioOpts(t, client(), newOutput(), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "-config", cfg)
		},
		"http-2026-07-28": func(t *testing.T) *mcp.ClientSession { return connectHTTPClient(t, client(), url, "") },
		"http-2025-11-25": func(t *testing.T) *mcp.ClientSession {
			return connectHTTPClientOpts(t, client(), url, "", &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		},
	}
	for name, connect := range sessions {
		t.Run(name, func(t *testing.T) {
			cs := connect(t)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			waitFor(t, "run_script and the everything tools", 60*time.Second, func() bool {
				names := toolNames(t, cs)
				return hasName(names, "run_script") && hasName(names, "everything__echo")
			})
			before, progressBefore := sampledBy.Load(), progressed.Load()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": script}, Meta: mcp.Meta{"progressToken": "p-" + name}})
			if err != nil {
				t.Fatalf("run_script: %v", err)
			}
			if res.IsError {
				t.Fatalf("run_script failed: %s", res.Content[0].(*mcp.TextContent).Text)
			}
			var out struct {
				Value struct{ Sum, Echoed, Sampled, Refused string }
				Calls int
			}
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.Value.Sum, "5") || !strings.Contains(out.Value.Echoed, "from the script") {
				t.Errorf("value = %+v", out.Value)
			}
			if !strings.Contains(out.Value.Sampled, "hi from the host") || sampledBy.Load() != before+1 {
				t.Errorf("sampling through the script: result %q, host asked %d times", out.Value.Sampled, sampledBy.Load()-before)
			}
			if !strings.Contains(out.Value.Refused, "no_such_tool") {
				t.Errorf("an unknown tool in the script: %q", out.Value.Refused)
			}
			waitFor(t, "a progress notification for each of the script's calls", 10*time.Second, func() bool {
				return progressed.Load()-progressBefore >= 3
			})
		})
	}

	var b []byte
	waitFor(t, "an audit line of everything__get-sum via run_script", 10*time.Second, func() bool {
		b, _ = os.ReadFile(audit)
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var l struct{ Tool, Via string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Tool == "everything__get-sum" && l.Via == "run_script" {
				return true
			}
		}
		return false
	})
}
