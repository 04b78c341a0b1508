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
// Each tool that may run as a task declares it (junction.SetTaskSupport)
// and calls junction.StartTask when it wants to go on as one: for a host
// at 2026-07-28 that declares the extension on the request, the hub then
// answers the call with the task at once and the rest of the handler is
// the task's work. For any other host StartTask reports false and the
// tool runs synchronously, or, when it runs only as a task (task support
// required), refuses the call with MissingRequiredClientCapabilityError
// (-32021) naming the extension, as the extension says.

// TasksExtension is the identifier of the tasks extension.
const TasksExtension = junction.TasksExtension

// maxComputeSeconds bounds slow_compute's pause.
const maxComputeSeconds = 3600

// taskRequired refuses a call to a tool that can only run as a task.
func taskRequired(tool string) error {
	return missingCapability(tool+" runs only as a task: it needs the tasks extension ("+TasksExtension+"), which the request's client capabilities do not declare",
		map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}})
}

// taskTool returns t declaring task support s.
func taskTool(t *mcp.Tool, s junction.TaskSupport) *mcp.Tool {
	junction.SetTaskSupport(t, s)
	return t
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
	junction.AddTool(p, taskTool(&mcp.Tool{
		Name: "slow_compute",
		Description: "Works for the given number of seconds, then reports it. It runs as a task for a client that declares " +
			"the tasks extension (tasks/cancel stops it), synchronously for any other (cancelling the call stops it).",
	}, junction.TaskOptional), func(ctx context.Context, _ *mcp.CallToolRequest, in computeIn) (*mcp.CallToolResult, any, error) {
		if in.Seconds < 0 || in.Seconds > maxComputeSeconds {
			return nil, nil, fmt.Errorf("seconds must be between 0 and %d, got %v", maxComputeSeconds, in.Seconds)
		}
		junction.StartTask(ctx)
		if err := sleep(ctx, time.Duration(in.Seconds*float64(time.Second))); err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("slow_compute %q finished after %vs", in.Label, in.Seconds)), nil, nil
	})

	p.AddTool(taskTool(&mcp.Tool{
		Name: "failing_job",
		Description: "Runs only as a task (task support required) and fails with a tool error after about a second; " +
			"a call from a client that does not declare the tasks extension is refused with -32021 naming it.",
		InputSchema: noArgs,
	}, junction.TaskRequired), func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !junction.StartTask(ctx) {
			return nil, taskRequired("failing_job")
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
		return errorResult("failing_job: the job failed, as it always does"), nil
	})

	p.AddTool(taskTool(&mcp.Tool{
		Name: "protocol_error_job",
		Description: "Always fails with a protocol error (JSON-RPC internal error, -32603) rather than a tool error: " +
			"as a task (failed) for a client that declares the tasks extension, synchronously for any other.",
		InputSchema: noArgs,
	}, junction.TaskOptional), func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		junction.StartTask(ctx)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "protocol_error_job: this job always fails with a protocol error"}
	})

	p.AddTool(taskTool(&mcp.Tool{
		Name: "confirm_delete",
		Description: `Asks the user to confirm deleting a file (elicitation "confirm"), then reports the decision; nothing is deleted. ` +
			"As a task (for a client that declares the tasks extension) it waits in input_required for tasks/update; otherwise it asks " +
			"with an input-required result (2026-07-28) or elicitation/create (older clients).",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string","description":"the file to delete"}},"required":["filename"]}`),
	}, junction.TaskOptional), legacyRounds("confirm_delete", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		junction.StartTask(ctx)
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

	p.AddTool(taskTool(&mcp.Tool{
		Name: "multi_input",
		Description: `Asks two questions at once (elicitation "first" and "second", each for a name and a confirmation) and completes when both are answered. ` +
			"As a task (for a client that declares the tasks extension) both wait in input_required, and may be answered one at a time.",
		InputSchema: noArgs,
	}, junction.TaskOptional), legacyRounds("multi_input",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			junction.StartTask(ctx)
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
		}))

	p.AddTool(taskTool(&mcp.Tool{
		Name: "test_tool_with_task",
		Description: `Gathers a name with an input-required result (elicitation "user_name"), then continues as a task that greets ` +
			"the name (task support required): a client that does not declare the tasks extension is refused with -32021 naming it, " +
			"before any input is asked for.",
		InputSchema: noArgs,
	}, junction.TaskRequired), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !junction.CanStartTask(ctx) {
			return nil, taskRequired("test_tool_with_task")
		}
		content, answered := accepted(req.Params.InputResponses, "user_name")
		if !answered {
			irs := mcp.InputRequestMap{"user_name": elicitForm("What is your name?", "name")}
			if err := checkCapabilities("test_tool_with_task", junction.RequestCapabilities(ctx, req), irs); err != nil {
				return nil, err
			}
			return ask(irs, ""), nil
		}
		if !junction.StartTask(ctx) {
			return nil, taskRequired("test_tool_with_task")
		}
		name, ok := stringField(content, "name")
		if !ok {
			name = "whoever you are (you declined to give a name)"
		}
		return text("Hello, " + name + "! (test_tool_with_task, finished as a task)"), nil
	})
}
