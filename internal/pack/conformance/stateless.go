package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The diagnostic tools of the suite's server-stateless scenario (protocol
// 2026-07-28, SEP-2575), the hooks it uses to change the tool and prompt
// lists while a subscriptions/listen stream is open, and the tool with an
// x-mcp-header parameter that the http-custom-header-server-validation
// scenario needs (SEP-2243).

// Names of what the change hooks add and then keep changing.
const (
	transientTool   = "test_transient_tool"
	transientPrompt = "test_transient_prompt"
)

func addStatelessTools(p *junction.Pack) {
	mrtrTool(p, "test_missing_capability",
		"Needs the client's sampling capability: a client that did not declare it gets MissingRequiredClientCapabilityError "+
			`(-32021) with data {"requiredCapabilities":{"sampling":{}}}; one that did is asked for one word by sampling ("word").`,
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !hasCapability(junction.RequestCapabilities(ctx, req), "sampling") {
				return nil, missingCapability("test_missing_capability needs the sampling capability, which the client did not declare", map[string]any{"sampling": map[string]any{}})
			}
			if answer, ok := sampled(req.Params.InputResponses, "word"); ok {
				return text("The client's LLM answered: " + answer), nil
			}
			return ask(mcp.InputRequestMap{"word": samplingRequest("Reply with one word.", 10)}, ""), nil
		})

	mrtrTool(p, "test_streaming_elicitation",
		"Needs the user's confirmation in the middle of the call. A 2026-07-28 client is asked in an input-required result "+
			`("confirmation") on the call's response stream, never by an elicitation/create request on that stream; `+
			"an older client gets elicitation/create over its session. Sends a progress notification first when the call has a progress token.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if content, answered := accepted(req.Params.InputResponses, "confirmation"); answered {
				return text("Confirmation received: " + jsonText(content)), nil
			}
			if token := req.Params.GetProgressToken(); token != nil {
				if err := junction.NotifyProgress(ctx, junction.HostSession(ctx), &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: 1, Total: 2, Message: "waiting for the user's confirmation",
				}); err != nil {
					return nil, fmt.Errorf("sending progress: %w", err)
				}
			}
			return ask(mcp.InputRequestMap{"confirmation": elicitForm("Continue?", "boolean:continue")}, ""), nil
		})

	p.AddTool(&mcp.Tool{
		Name: "test_logging_tool",
		Description: "Sends one info log message (notifications/message). It reaches the client only when the client asked " +
			"for info or lower: in the request's _meta (2026-07-28, io.modelcontextprotocol/logLevel) or with logging/setLevel (older revisions).",
		InputSchema: noArgs,
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := junction.Log(ctx, junction.HostSession(ctx), &mcp.LoggingMessageParams{Level: "info", Logger: Name, Data: "test_logging_tool ran"}); err != nil {
			return nil, fmt.Errorf("sending log message: %w", err)
		}
		return text("test_logging_tool sent one info log message, subject to the client's log level"), nil
	})

	// The change hooks: each call changes the list for real (the
	// transient entry appears, then its description changes), so the
	// list_changed notification that follows is true.
	var toolChanges, promptChanges atomic.Int64
	p.AddTool(&mcp.Tool{
		Name:        "test_trigger_tool_change",
		Description: "Changes the tool list: adds " + transientTool + ", or changes its description if it is there, so that hosts get notifications/tools/list_changed.",
		InputSchema: noArgs,
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := toolChanges.Add(1)
		desc := fmt.Sprintf("Added to the tool list by test_trigger_tool_change (change %d); answers with that number.", n)
		p.AddTool(&mcp.Tool{Name: transientTool, Description: desc, InputSchema: noArgs},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text(fmt.Sprintf("%s, change %d", transientTool, n)), nil
			})
		return text(fmt.Sprintf("tool list changed (change %d)", n)), nil
	})
	p.AddTool(&mcp.Tool{
		Name:        "test_trigger_prompt_change",
		Description: "Changes the prompt list: adds " + transientPrompt + ", or changes its description if it is there, so that hosts get notifications/prompts/list_changed.",
		InputSchema: noArgs,
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := promptChanges.Add(1)
		desc := fmt.Sprintf("Added to the prompt list by test_trigger_prompt_change (change %d).", n)
		p.AddPrompt(&mcp.Prompt{Name: transientPrompt, Description: desc},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
					{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf("%s, change %d", transientPrompt, n)}},
				}}, nil
			})
		return text(fmt.Sprintf("prompt list changed (change %d)", n)), nil
	})

	p.AddTool(&mcp.Tool{
		Name: "test_x_mcp_header",
		Description: "Echoes its arguments. The region argument is mirrored into the Mcp-Param-Region header (x-mcp-header); " +
			"the Streamable HTTP server checks that the header matches the body.",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"region": {"type": "string", "description": "A region name, mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
				"level": {"type": "integer", "description": "A number that is not mirrored"}
			}
		}`),
	}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Region string `json:"region"`
			Level  int64  `json:"level"`
		}
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return errorResult(fmt.Sprintf("validating \"arguments\": %v", err)), nil
			}
		}
		return text(fmt.Sprintf("region=%s level=%d", in.Region, in.Level)), nil
	})
}
