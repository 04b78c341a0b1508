package junction_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskPack is a pack with the kinds of tool the tasks extension meets:
// one that never runs as a task, one that becomes a task and waits for
// its context, one that asks two questions as a task, one that fails
// with a protocol error as a task, and one that asks before it becomes
// a task.
func taskPack(started chan<- struct{}) *junction.Pack {
	p := junction.NewPack("p")
	noArgs := json.RawMessage(`{"type":"object"}`)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	p.AddTool(&mcp.Tool{Name: "plain", InputSchema: noArgs}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text("plain"), nil
	})
	wait := &mcp.Tool{Name: "wait", InputSchema: noArgs}
	junction.SetTaskSupport(wait, junction.TaskOptional)
	p.AddTool(wait, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !junction.StartTask(ctx) {
			return text("not a task"), nil
		}
		if started != nil {
			started <- struct{}{}
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	quick := &mcp.Tool{Name: "quick", InputSchema: noArgs}
	junction.SetTaskSupport(quick, junction.TaskOptional)
	p.AddTool(quick, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		junction.StartTask(ctx)
		return text("done"), nil
	})
	broken := &mcp.Tool{Name: "broken", InputSchema: noArgs}
	junction.SetTaskSupport(broken, junction.TaskOptional)
	p.AddTool(broken, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		junction.StartTask(ctx)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "broken"}
	})
	two := &mcp.Tool{Name: "two", InputSchema: noArgs}
	junction.SetTaskSupport(two, junction.TaskOptional)
	p.AddTool(two, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		junction.StartTask(ctx)
		irs := mcp.InputRequestMap{}
		for _, k := range []string{"a", "b"} {
			if _, ok := req.Params.InputResponses[k]; !ok {
				irs[k] = &mcp.ElicitParams{Message: k, RequestedSchema: map[string]any{"type": "object"}}
			}
		}
		if len(irs) > 0 {
			return &mcp.CallToolResult{InputRequests: irs, RequestState: "s1"}, nil
		}
		if req.Params.RequestState != "s1" {
			return text("lost the request state"), nil
		}
		return text("both answered"), nil
	})
	askFirst := &mcp.Tool{Name: "ask_first", InputSchema: noArgs}
	junction.SetTaskSupport(askFirst, junction.TaskRequired)
	p.AddTool(askFirst, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := req.Params.InputResponses["q"]; !ok {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "q", RequestedSchema: map[string]any{"type": "object"}}}}, nil
		}
		if !junction.StartTask(ctx) {
			return nil, &jsonrpc.Error{Code: -32021, Message: "no task: the host declared no tasks"}
		}
		return text("asked, then a task"), nil
	})
	return p
}

func taskView(t *testing.T, started chan<- struct{}) (*junction.Hub, *junction.View) {
	t.Helper()
	h := newHub(t)
	add(t, h, "p", taskPack(started), junction.PrefixNever)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return h, v
}

// taskCall makes a tools/call of name for a host (owner) that declares
// the extension, and returns the answer decoded.
func taskCall(t *testing.T, v *junction.View, owner, name, extra string) (map[string]any, *jsonrpc.Error, bool) {
	t.Helper()
	params := `{"name":` + quote(name) + `,"arguments":{}` + extra + `}`
	res, werr, ok := v.CallToolTask(t.Context(), owner, name, json.RawMessage(params))
	if werr != nil || !ok {
		return nil, werr, ok
	}
	return decodeObject(t, res), nil, true
}

func taskReq(t *testing.T, v *junction.View, owner, method, params string) (map[string]any, *jsonrpc.Error) {
	t.Helper()
	res, werr := v.TaskRequest(t.Context(), owner, method, json.RawMessage(params))
	if werr != nil {
		return nil, werr
	}
	return decodeObject(t, res), nil
}

func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// pollTask polls tasks/get until the task has status want, or fails.
func pollTask(t *testing.T, v *junction.View, owner, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, werr := taskReq(t, v, owner, "tasks/get", `{"taskId":`+quote(id)+`}`)
		if werr != nil {
			t.Fatalf("tasks/get %s: %v", id, werr)
		}
		if got["status"] == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: status %v, want %s", id, got["status"], want)
		}
		time.Sleep(5 * time.Millisecond) // polling is what a host does; there is no signal to wait for
	}
}

func TestTaskLifecycle(t *testing.T) {
	_, v := taskView(t, nil)

	if _, _, ok := taskCall(t, v, "o", "plain", ""); ok {
		t.Error("a tool without task support was taken for tasks")
	}
	created, werr, _ := taskCall(t, v, "o", "quick", "")
	if werr != nil {
		t.Fatal(werr)
	}
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || len(id) != 32 || created["ttlMs"] != float64(junction.TaskTTL.Milliseconds()) {
		t.Fatalf("CreateTaskResult = %v", created)
	}
	for _, k := range []string{"result", "error", "inputRequests", "requestState"} {
		if _, ok := created[k]; ok {
			t.Errorf("CreateTaskResult has %q", k)
		}
	}
	got := pollTask(t, v, "o", id, "completed")
	if got["resultType"] != "complete" || !strings.Contains(mustJSON(t, got["result"]), `"text":"done"`) {
		t.Errorf("completed task = %v", got)
	}
	if ack, werr := taskReq(t, v, "o", "tasks/cancel", `{"taskId":`+quote(id)+`}`); werr != nil || len(ack) != 1 || ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel of a finished task = %v, %v", ack, werr)
	}

	created, _, _ = taskCall(t, v, "o", "broken", "")
	got = pollTask(t, v, "o", created["taskId"].(string), "failed")
	if e, _ := got["error"].(map[string]any); e["code"] != float64(jsonrpc.CodeInternalError) || got["result"] != nil {
		t.Errorf("failed task = %v", got)
	}
}

func TestTaskCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	h, v := taskView(t, started)
	created, werr, _ := taskCall(t, v, "o", "wait", "")
	if werr != nil {
		t.Fatal(werr)
	}
	<-started
	id := created["taskId"].(string)
	if got := pollTask(t, v, "o", id, "working"); got["result"] != nil {
		t.Errorf("working task = %v", got)
	}
	if _, werr := taskReq(t, v, "o", "tasks/cancel", `{"taskId":`+quote(id)+`}`); werr != nil {
		t.Fatal(werr)
	}
	pollTask(t, v, "o", id, "cancelled")
	// The handler saw its context end: the call is no longer in flight.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.WaitIdle(ctx); err != nil {
		t.Errorf("WaitIdle after tasks/cancel: %v", err)
	}
}

func TestTaskInputPartial(t *testing.T) {
	_, v := taskView(t, nil)
	created, _, _ := taskCall(t, v, "o", "two", "")
	id := created["taskId"].(string)
	got := pollTask(t, v, "o", id, "input_required")
	irs, _ := got["inputRequests"].(map[string]any)
	if len(irs) != 2 {
		t.Fatalf("inputRequests = %v", got["inputRequests"])
	}
	answer := `{"action":"accept","content":{}}`
	ack, werr := taskReq(t, v, "o", "tasks/update", `{"taskId":`+quote(id)+`,"inputResponses":{"a":`+answer+`,"nope":{"x":1}}}`)
	if werr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update = %v, %v", ack, werr)
	}
	got = pollTask(t, v, "o", id, "input_required")
	if irs, _ := got["inputRequests"].(map[string]any); len(irs) != 1 || irs["b"] == nil {
		t.Errorf("after answering a: inputRequests = %v", got["inputRequests"])
	}
	if _, werr := taskReq(t, v, "o", "tasks/update", `{"taskId":`+quote(id)+`,"inputResponses":{"b":{"neither":1}}}`); werr == nil || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/update with an answer of no known shape: %v, want -32602", werr)
	}
	if _, werr := taskReq(t, v, "o", "tasks/update", `{"taskId":`+quote(id)+`,"inputResponses":[]}`); werr == nil || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/update with inputResponses not an object: %v, want -32602", werr)
	}
	taskReq(t, v, "o", "tasks/update", `{"taskId":`+quote(id)+`,"inputResponses":{"b":`+answer+`}}`)
	got = pollTask(t, v, "o", id, "completed")
	if !strings.Contains(mustJSON(t, got["result"]), "both answered") {
		t.Errorf("result = %v", got["result"])
	}
}

func TestTaskAskFirst(t *testing.T) {
	_, v := taskView(t, nil)
	round1, werr, _ := taskCall(t, v, "o", "ask_first", "")
	if werr != nil || round1["resultType"] != "input_required" || round1["taskId"] != nil {
		t.Fatalf("round 1 = %v, %v; want an input-required result", round1, werr)
	}
	round2, werr, _ := taskCall(t, v, "o", "ask_first", `,"inputResponses":{"q":{"action":"accept","content":{}}}`)
	if werr != nil || round2["resultType"] != "task" {
		t.Fatalf("round 2 = %v, %v; want a task", round2, werr)
	}
	got := pollTask(t, v, "o", round2["taskId"].(string), "completed")
	if !strings.Contains(mustJSON(t, got["result"]), "asked, then a task") {
		t.Errorf("result = %v", got["result"])
	}
}

func TestTaskIsolation(t *testing.T) {
	h, v := taskView(t, nil)
	other, err := h.NewView("other", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	created, _, _ := taskCall(t, v, "o", "quick", "")
	id := created["taskId"].(string)
	for _, c := range []struct {
		v      *junction.View
		owner  string
		method string
		params string
	}{
		{v, "someone else", "tasks/get", `{"taskId":` + quote(id) + `}`},
		{v, "someone else", "tasks/cancel", `{"taskId":` + quote(id) + `}`},
		{other, "o", "tasks/get", `{"taskId":` + quote(id) + `}`},
		{v, "o", "tasks/get", `{"taskId":"nope"}`},
		{v, "o", "tasks/get", `{}`},
		{v, "o", "tasks/get", `{"taskId":7}`},
		{v, "o", "tasks/get", `[]`},
		{v, "o", "tasks/get", ``},
	} {
		if _, werr := taskReq(t, c.v, c.owner, c.method, c.params); werr == nil || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s %s by %q: %v, want -32602", c.method, c.params, c.owner, werr)
		}
	}
	pollTask(t, v, "o", id, "completed")
}

func TestTaskLimit(t *testing.T) {
	started := make(chan struct{}, junction.MaxLiveTasksPerOwner+1)
	_, v := taskView(t, started)
	for range junction.MaxLiveTasksPerOwner {
		if created, werr, _ := taskCall(t, v, "o", "wait", ""); werr != nil || created["resultType"] != "task" {
			t.Fatalf("task: %v, %v", created, werr)
		}
	}
	// One more for the same host runs synchronously (the handler sees
	// StartTask refuse); another host still gets a task.
	got, werr, _ := taskCall(t, v, "o", "wait", "")
	if werr != nil || got["resultType"] == "task" || !strings.Contains(mustJSON(t, got), "not a task") {
		t.Errorf("over the limit: %v, %v; want the synchronous answer", got, werr)
	}
	if created, _, _ := taskCall(t, v, "other", "wait", ""); created["resultType"] != "task" {
		t.Errorf("another host: %v, want a task", created)
	}
	// A tool that runs only as a task, refused one over the limit, fails
	// with the reason (not its own "no task", which reads as if the host
	// had declared no tasks).
	_, werr, _ = taskCall(t, v, "o", "ask_first", `,"inputResponses":{"q":{"action":"accept","content":{}}}`)
	if werr == nil || !strings.Contains(werr.Message, "too many tasks") {
		t.Errorf("a task-only tool over the limit: %v; want the store's reason (too many tasks)", werr)
	}
	// Closing the hub (taskView's cleanup) cancels the waiting handlers
	// and waits for them.
}

// TestTaskUnlistedInSearchMode: in discovery search mode a tool that is
// not listed (only the meta-tools are) still runs as a task when called
// by its name.
func TestTaskUnlistedInSearchMode(t *testing.T) {
	_, v := taskView(t, nil)
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(v.ListedToolNames(), "quick") {
		t.Fatalf("quick is listed in search mode: %v", v.ListedToolNames())
	}
	created, werr, handled := taskCall(t, v, "o", "quick", "")
	if !handled || werr != nil || created["resultType"] != "task" {
		t.Fatalf("quick as a task in search mode: %v, %v, handled %v; want a task", created, werr, handled)
	}
	pollTask(t, v, "o", created["taskId"].(string), "completed")
}

// TestTaskOwnerShare: one owner making tasks without end keeps at most
// its share (its oldest finished ones make room for its new ones), and
// never pushes out another owner's task.
func TestTaskOwnerShare(t *testing.T) {
	_, v := taskView(t, nil)
	created, werr, _ := taskCall(t, v, "b", "quick", "")
	if werr != nil || created["resultType"] != "task" {
		t.Fatalf("b's task: %v, %v", created, werr)
	}
	bid := created["taskId"].(string)
	pollTask(t, v, "b", bid, "completed")
	var first string
	for i := range junction.MaxTasks + 8 {
		created, werr, _ := taskCall(t, v, "a", "quick", "")
		if werr != nil || created["resultType"] != "task" {
			t.Fatalf("a's task %d: %v, %v", i, created, werr)
		}
		if i == 0 {
			first = created["taskId"].(string)
			pollTask(t, v, "a", first, "completed")
		}
	}
	if _, werr := taskReq(t, v, "b", "tasks/get", `{"taskId":`+quote(bid)+`}`); werr != nil {
		t.Errorf("b's task after a's %d: %v; want it kept", junction.MaxTasks+8, werr)
	}
	if _, werr := taskReq(t, v, "a", "tasks/get", `{"taskId":`+quote(first)+`}`); werr == nil || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("a's first task after %d more: %v; want it gone (-32602), over a's share of %d", junction.MaxTasks+8, werr, junction.MaxTasksPerOwner)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// remoteTasks is a source whose own server runs tasks (a TaskSource):
// every call becomes task "up-1", and tasks/* requests are recorded.
type remoteTasks struct {
	mu   sync.Mutex
	sent []string // method and params of each tasks/* request
}

func (r *remoteTasks) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{Tools: []*mcp.Tool{{Name: "far", InputSchema: json.RawMessage(`{"type":"object"}`)}}}, nil
}

func (r *remoteTasks) CallTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("only raw calls")
}

func (r *remoteTasks) CallToolRaw(_ context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	if !strings.Contains(string(params), `"name":"far"`) {
		return nil, fmt.Errorf("params %s do not name the source's own tool", params)
	}
	return json.RawMessage(`{"resultType":"task","taskId":"up-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttlMs":1000}`), nil
}

func (r *remoteTasks) OffersTasks() bool { return true }

func (r *remoteTasks) TaskRequest(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	r.sent = append(r.sent, method+" "+string(params))
	r.mu.Unlock()
	if method == "tasks/get" {
		return json.RawMessage(`{"resultType":"complete","taskId":"up-1","status":"completed","result":{"content":[]}}`), nil
	}
	return json.RawMessage(`{"resultType":"complete"}`), nil
}

func (r *remoteTasks) ReadResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("none")
}

func (r *remoteTasks) GetPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("none")
}

func (r *remoteTasks) Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{}, nil
}

func TestTaskForwarded(t *testing.T) {
	h := newHub(t)
	src := &remoteTasks{}
	add(t, h, "up", src, junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	created, werr, ok := taskCall(t, v, "o", "up__far", "")
	if !ok || werr != nil {
		t.Fatalf("CallToolTask = %v, %v, %v", created, werr, ok)
	}
	id, _ := created["taskId"].(string)
	if id == "up-1" || len(id) != 32 || created["status"] != "working" {
		t.Fatalf("CreateTaskResult = %v; want the hub's own task id", created)
	}
	got, werr := taskReq(t, v, "o", "tasks/get", `{"taskId":`+quote(id)+`}`)
	if werr != nil || got["taskId"] != id || got["status"] != "completed" {
		t.Errorf("tasks/get = %v, %v; want the source's answer under the hub's id", got, werr)
	}
	if _, werr := taskReq(t, v, "other", "tasks/cancel", `{"taskId":`+quote(id)+`}`); werr == nil || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/cancel by another host: %v, want -32602", werr)
	}
	taskReq(t, v, "o", "tasks/update", `{"taskId":`+quote(id)+`,"inputResponses":{}}`)
	src.mu.Lock()
	defer src.mu.Unlock()
	want := []string{`tasks/get {"taskId":"up-1"}`, `tasks/update {"taskId":"up-1","inputResponses":{}}`}
	if strings.Join(src.sent, "\n") != strings.Join(want, "\n") {
		t.Errorf("sent to the source:\n%s\nwant:\n%s", strings.Join(src.sent, "\n"), strings.Join(want, "\n"))
	}
}

func TestTaskNotOfferedOutsideCallToolTask(t *testing.T) {
	h := newHub(t)
	var got []string
	src := &remoteTasks{}
	add(t, h, "up", &seenParams{remoteTasks: src, seen: &got}, junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	params := `{"name":"far","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"x":{}},"sampling":{}}}}`
	call, rc := v.BeginRaw(t.Context(), "up__far")
	if call == nil {
		t.Fatal("BeginRaw: not raw")
	}
	call.CallToolRaw(rc, json.RawMessage(params))
	want := `{"name":"far","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"x":{}},"sampling":{}}}}`
	if len(got) != 1 || got[0] != want {
		t.Errorf("the source got %q, want %s", got, want)
	}
}

// seenParams records the params of the raw calls it gets.
type seenParams struct {
	*remoteTasks
	seen *[]string
}

func (s *seenParams) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	*s.seen = append(*s.seen, string(params))
	return s.remoteTasks.CallToolRaw(ctx, name, params)
}
