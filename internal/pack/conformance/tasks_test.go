package conformance

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTaskFixturesWithoutTasks checks what the task fixtures do for a
// client that does not declare the tasks extension, so that no task can
// be started: tools that may run as tasks answer synchronously, tools
// that must run as tasks are refused with -32021 naming the extension.
// Tasks themselves are tested in the core (tasks_test.go) and end to end
// (TestConformanceRequirements).
func TestTaskFixturesWithoutTasks(t *testing.T) {
	plain := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	for _, version := range []string{legacy, modern} {
		t.Run(version, func(t *testing.T) {
			cs := connectVersion(t, &mcp.ClientOptions{Capabilities: plain, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, version)
			res, err := callRound(t, cs, "greet", map[string]any{"name": "World"}, nil, "")
			mustText(t, res, err, "Hello, World!")
			res, err = callRound(t, cs, "slow_compute", map[string]any{"seconds": 0, "label": "now"}, nil, "")
			mustText(t, res, err, `slow_compute "now" finished after 0s`)
			res, err = callRound(t, cs, "slow_compute", map[string]any{"seconds": 0.01}, nil, "")
			mustText(t, res, err, `slow_compute "" finished after 0.01s`)
			res, err = callRound(t, cs, "slow_compute", map[string]any{"seconds": -1}, nil, "")
			if err != nil || !res.IsError {
				t.Errorf("slow_compute -1 s: %v, %v; want a tool error", res, err)
			}
			_, err = callRound(t, cs, "protocol_error_job", nil, nil, "")
			rpcError(t, err, jsonrpc.CodeInternalError)
			for _, tool := range []string{"failing_job", "test_tool_with_task"} {
				_, err := callRound(t, cs, tool, nil, nil, "")
				want := decodeJSON(t, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`)
				if diff := cmp.Diff(want, requiredCapabilities(t, err)); diff != "" {
					t.Errorf("%s: requiredCapabilities (-want +got):\n%s", tool, diff)
				}
			}
		})
	}
}

func TestConfirmDelete(t *testing.T) {
	cs := connectModern(t, allCaps())
	args := map[string]any{"filename": "a.txt"}
	res, err := callRound(t, cs, "confirm_delete", args, nil, "")
	mustAsk(t, res, err, map[string]string{"confirm": "elicitation/create"})
	res, err = callRound(t, cs, "confirm_delete", args, mcp.InputResponseMap{"confirm": elicited(map[string]any{"confirm": false})}, "")
	mustText(t, res, err, "Kept a.txt: the user did not confirm")
	res, err = callRound(t, cs, "confirm_delete", args, mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "cancel"}}, "")
	mustText(t, res, err, "Kept a.txt: the user did not confirm")
	res, err = callRound(t, cs, "confirm_delete", map[string]any{}, nil, "")
	if err != nil || !res.IsError {
		t.Errorf("confirm_delete without filename: %v, %v; want a tool error", res, err)
	}
}
