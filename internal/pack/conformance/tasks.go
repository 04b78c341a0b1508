package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fixtures the suite's tasks-* scenarios name (the tasks extension,
// io.modelcontextprotocol/tasks, SEP-2663).
//
// junction does not implement the extension: it does not advertise it
// and serves no tasks/get, tasks/update or tasks/cancel. Without
// negotiation the extension's own rules say what these tools do, and
// that is what they do: a tool that may run as a task runs synchronously
// and returns a plain result, and a tool that can only run as a task is
// refused with MissingRequiredClientCapabilityError (-32021) naming the
// extension. A client that declares the extension changes nothing, since
// negotiation needs both sides.

// TasksExtension is the identifier of the tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// maxComputeSeconds bounds slow_compute's pause.
const maxComputeSeconds = 3600

// taskRequired refuses a call to a tool that can only run as a task.
func taskRequired(tool string) error {
	return missingCapability(tool+" runs only as a task: it needs the tasks extension ("+TasksExtension+"), which is not in effect (this server does not offer it)",
		map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}})
}

func addTaskTools(p *junction.Pack) {
	type greetIn struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	junction.AddTool(p, &mcp.Tool{
		Name:        "greet",
		Description: "Answers Hello, {name}! at once. Never runs as a task.",
	}, func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
		return text("Hello, " + in.Name + "!"), nil, nil
	})

	type computeIn struct {
		Seconds float64 `json:"seconds" jsonschema:"how long to work, in seconds (0 to 3600)"`
		Label   string  `json:"label,omitempty" jsonschema:"a label echoed in the result"`
	}
	junction.AddTool(p, &mcp.Tool{
		Name: "slow_compute",
		Description: "Works for the given number of seconds, then reports it. It may run as a task; as the tasks extension " +
			"is not in effect here, it runs synchronously, and cancelling the call stops it.",
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in computeIn) (*mcp.CallToolResult, any, error) {
		if in.Seconds < 0 || in.Seconds > maxComputeSeconds {
			return nil, nil, fmt.Errorf("seconds must be between 0 and %d, got %v", maxComputeSeconds, in.Seconds)
		}
		if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("slow_compute %q finished after %vs", in.Label, in.Seconds)), nil, nil
	})

	p.AddTool(&mcp.Tool{
		Name:        "failing_job",
		Description: "Runs only as a task (task support required), where it would fail with a tool error; as the tasks extension is not in effect here, every call is refused with -32021 naming the extension.",
		InputSchema: noArgs,
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, taskRequired("failing_job")
	})

	p.AddTool(&mcp.Tool{
		Name:        "protocol_error_job",
		Description: "Always fails with a protocol error (JSON-RPC internal error, -32603) rather than a tool error. It may run as a task; here it runs synchronously.",
		InputSchema: noArgs,
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job: this job always fails with a protocol error"}
	})

	p.AddTool(&mcp.Tool{
		Name: "confirm_delete",
		Description: `Asks the user to confirm deleting a file (elicitation "confirm"), then reports the decision; nothing is deleted. ` +
			"It may run as a task; here it runs synchronously, asking with an input-required result (2026-07-28) or elicitation/create (older clients).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string","description":"the file to delete"}},"required":["filename"]}`),
	}, legacyRounds("confirm_delete", func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct {
			Filename string `json:"filename"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Filename == "" {
			return errorResult(`validating "arguments": filename (a non-empty string) is required`), nil
		}
		content, answered := accepted(req.Params.InputResponses, "confirm")
		if !answered {
			return ask(mcp.InputRequestMap{"confirm": elicitForm(fmt.Sprintf("Delete %s?", in.Filename), "boolean:confirm")}, ""), nil
		}
		if ok, _ := content["confirm"].(bool); ok {
			return text(fmt.Sprintf("Deleted %s (confirmed; the fixture deletes nothing)", in.Filename)), nil
		}
		return text(fmt.Sprintf("Kept %s: the user did not confirm", in.Filename)), nil
	}))

	mrtrTool(p, "multi_input",
		`Asks two questions at once (elicitation "first" and "second", each for a name and a confirmation) and completes when both are answered. `+
			"It may run as a task; here it runs synchronously.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			irs := mcp.InputRequestMap{}
			var got []string
			for _, key := range []string{"first", "second"} {
				content, answered := accepted(req.Params.InputResponses, key)
				if !answered {
					irs[key] = elicitForm(fmt.Sprintf("Question %s: your name, and do you confirm?", key), "name", "boolean:confirm")
					continue
				}
				got = append(got, key+"="+jsonText(content))
			}
			if len(irs) > 0 {
				return ask(irs, ""), nil
			}
			return text(fmt.Sprintf("multi_input complete: %s, %s", got[0], got[1])), nil
		})

	p.AddTool(&mcp.Tool{
		Name: "test_tool_with_task",
		Description: `Gathers a name (elicitation "user_name"), then would continue as a task (task support required); ` +
			"as the tasks extension is not in effect here, every call is refused with -32021 naming the extension, before any input is asked for.",
		InputSchema: noArgs,
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, taskRequired("test_tool_with_task")
	})
}
