package junction

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A script's call of a tool that runs only as a task of its own server
// (a [TaskSource]'s tool whose task support is required) is made as a
// task, which the hub then polls for the script, as a host would: the
// script awaits the tool's result and never sees the task.

// runsOnlyAsTask reports whether the view's tool name runs only as a
// task of its source's server.
func (v *View) runsOnlyAsTask(name string) bool {
	ts, _, ok := v.taskRoute(name)
	tool := v.ServedTool(name)
	return ok && ts != nil && tool != nil && ToolTaskSupport(tool) == TaskRequired
}

// scriptTaskOwner names the tasks the hub makes for one script's calls.
func scriptTaskOwner() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "script-" + hex.EncodeToString(b)
}

// Polling bounds of callAsTask: from the first to the longest pause.
const (
	taskPollFirst = 20 * time.Millisecond
	taskPollMax   = time.Second
)

// callAsTask makes the call params of tool as a task for owner and waits
// for its outcome. Cancelling ctx cancels the task.
func (v *View) callAsTask(ctx context.Context, owner, tool string, params json.RawMessage) (*mcp.CallToolResult, error) {
	res, werr, ok := v.CallToolTask(ctx, owner, tool, params)
	switch {
	case !ok:
		return nil, unknownTool(tool, 0)
	case werr != nil:
		return nil, werr
	}
	var head struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if err := json.Unmarshal(res, &head); err != nil {
		return nil, fmt.Errorf("tool %q: %w", tool, err)
	}
	if head.ResultType != "task" {
		return decodeToolResult(tool, res)
	}
	id, _ := json.Marshal(map[string]string{"taskId": head.TaskID})
	pause := taskPollFirst
	for {
		select {
		case <-ctx.Done():
			v.TaskRequest(context.WithoutCancel(ctx), owner, "tasks/cancel", id)
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, taskPollMax)
		got, werr := v.TaskRequest(ctx, owner, "tasks/get", id)
		if werr != nil {
			return nil, werr
		}
		var st struct {
			Status string          `json:"status"`
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal(got, &st); err != nil {
			return nil, fmt.Errorf("tool %q: its task: %w", tool, err)
		}
		switch st.Status {
		case taskCompleted:
			return decodeToolResult(tool, st.Result)
		case taskFailed:
			if st.Error != nil {
				return nil, st.Error
			}
			return nil, fmt.Errorf("tool %q: its task failed", tool)
		case taskCancelled:
			return nil, fmt.Errorf("tool %q: its task was cancelled", tool)
		case taskInputRequired:
			v.TaskRequest(context.WithoutCancel(ctx), owner, "tasks/cancel", id)
			return nil, fmt.Errorf("tool %q runs as a task that asks for input, which a script cannot give yet: call it directly", tool)
		}
	}
}

// decodeToolResult decodes a tools/call result.
func decodeToolResult(tool string, b json.RawMessage) (*mcp.CallToolResult, error) {
	var r mcp.CallToolResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("tool %q: its result: %w", tool, err)
	}
	return &r, nil
}
