package conformance

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTriggers checks that each change hook changes its list for real and
// that the host is told (notifications/tools/list_changed and
// prompts/list_changed), on both protocol generations.
func TestTriggers(t *testing.T) {
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			toolsChanged := make(chan struct{}, 16)
			promptsChanged := make(chan struct{}, 16)
			cs := connectVersion(t, &mcp.ClientOptions{
				ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
				PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { promptsChanged <- struct{}{} },
			}, version)
			ctx := callCtx(t)
			for change := 1; change <= 2; change++ {
				res, err := callRound(t, cs, "test_trigger_tool_change", nil, nil, "")
				mustText(t, res, err, "tool list changed (change "+strconv.Itoa(change)+")")
				awaitSignal(t, toolsChanged, "notifications/tools/list_changed")
				tool := findTool(t, cs, transientTool)
				if want := "(change " + strconv.Itoa(change) + ")"; !strings.Contains(tool.Description, want) {
					t.Errorf("%s description %q, want it to say %s", transientTool, tool.Description, want)
				}
				res, err = callRound(t, cs, transientTool, nil, nil, "")
				mustText(t, res, err, transientTool+", change "+strconv.Itoa(change))

				res, err = callRound(t, cs, "test_trigger_prompt_change", nil, nil, "")
				mustText(t, res, err, "prompt list changed (change "+strconv.Itoa(change)+")")
				awaitSignal(t, promptsChanged, "notifications/prompts/list_changed")
				prompts, err := cs.ListPrompts(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(prompts.Prompts, func(p *mcp.Prompt) bool { return p.Name == transientPrompt })
				if i < 0 || !strings.Contains(prompts.Prompts[i].Description, "(change "+strconv.Itoa(change)+")") {
					t.Errorf("prompts after change %d: %v", change, asJSON(t, prompts.Prompts))
				}
			}
		})
	}
}

// awaitSignal waits for one value on ch, for up to 5 s.
func awaitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s within 5s", what)
	}
}

// findTool lists the tools until one named name is there: the hub
// refreshes its tool list in the background after the pack changes, and
// list_changed may reach the client first.
func findTool(t *testing.T, cs *mcp.ClientSession, name string) *mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == name })
	if i < 0 {
		t.Fatalf("tools/list after list_changed has no %s", name)
	}
	return res.Tools[i]
}

// TestLoggingTool checks that test_logging_tool's message reaches a client
// that asked for info, and not one that asked for warnings only: the two
// calls are made in that order, and the one message that arrives is the
// second call's.
func TestLoggingTool(t *testing.T) {
	logs := make(chan string, 4)
	cs := connect(t, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logs <- string(req.Params.Level) + ": " + req.Params.Data.(string)
		},
	})
	ctx := callCtx(t)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatal(err)
	}
	res, err := callRound(t, cs, "test_logging_tool", nil, nil, "")
	mustText(t, res, err, "test_logging_tool sent one info log message, subject to the client's log level")
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	// Mark the second call's message apart: test_tool_with_logging logs
	// after it, so everything test_logging_tool sent arrives before
	// "Tool execution started".
	if _, err := callRound(t, cs, "test_logging_tool", nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := callRound(t, cs, "test_tool_with_logging", nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) == 0 || got[len(got)-1] != "info: Tool execution started" {
		select {
		case l := <-logs:
			got = append(got, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("log messages so far %q; no \"Tool execution started\" within 5s", got)
		}
	}
	if want := []string{"info: test_logging_tool ran", "info: Tool execution started"}; !slices.Equal(got, want) {
		t.Errorf("log messages = %q, want %q", got, want)
	}
}

func TestXMCPHeaderTool(t *testing.T) {
	cs := connect(t, nil)
	tools, err := cs.ListTools(callCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "test_x_mcp_header" })
	if i < 0 {
		t.Fatal("test_x_mcp_header not listed")
	}
	schema := asJSON(t, tools.Tools[i].InputSchema).(map[string]any)
	region := schema["properties"].(map[string]any)["region"].(map[string]any)
	if region["x-mcp-header"] != "Region" || region["type"] != "string" {
		t.Errorf("region property = %v, want a string with x-mcp-header Region", region)
	}
	res, err := callRound(t, cs, "test_x_mcp_header", map[string]any{"region": "eu-west", "level": 3}, nil, "")
	mustText(t, res, err, "region=eu-west level=3")
}
