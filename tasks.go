package junction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tasks extension (io.modelcontextprotocol/tasks, SEP-2663, protocol
// 2026-07-28): a tools/call may be answered with a task handle
// (CreateTaskResult, "resultType":"task") instead of its result, and the
// host follows the task with tasks/get, answers the questions it asks
// with tasks/update, and stops it with tasks/cancel.
//
// go-sdk v1.8 knows nothing of tasks, so the data plane hands the
// requests of hosts that declare the extension to the view
// ([View.CallToolTask], [View.TaskRequest]) before go-sdk sees them, and
// the hub keeps the tasks (one store per hub, see taskStore):
//
//   - a pack's tool decides for itself: its handler calls [StartTask]
//     when the call should go on as a task, and what the handler returns
//     then becomes the task's outcome;
//   - a tool of any other source that declares task support
//     ([ToolTaskSupport]) runs as a task of the hub: the hub makes the
//     call in the background;
//   - a source whose own server runs tasks (a [TaskSource], an upstream
//     that offers the extension) gets the call as it came; a task it
//     creates is given a task id of the hub's, and tasks/* for it are
//     forwarded there.
//
// A task id is 128 random bits, and a task answers only the view and the
// owner (the host, as the data plane names it) that created it.

// TasksExtension is the identifier of the tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// TaskSupportKey is the key in a tool's _meta under which junction
// declares whether the tool may run as a task ("optional") or runs only
// as one ("required"). Protocol 2026-07-28 has no field for it (the
// server alone decides); the key carries the declaration across hubs.
const TaskSupportKey = "dev.junction/taskSupport"

// TaskSupport says whether a tool may run as a task.
type TaskSupport string

// The values of [TaskSupport].
const (
	TaskForbidden TaskSupport = ""         // never a task (the default)
	TaskOptional  TaskSupport = "optional" // a task for a host that declares the extension
	TaskRequired  TaskSupport = "required" // only ever a task: refused (-32021) without the extension
)

// SetTaskSupport declares on t (in its _meta) whether it may run as a
// task.
func SetTaskSupport(t *mcp.Tool, s TaskSupport) {
	if s == TaskForbidden {
		delete(t.Meta, TaskSupportKey)
		return
	}
	if t.Meta == nil {
		t.Meta = mcp.Meta{}
	}
	t.Meta[TaskSupportKey] = string(s)
}

// ToolTaskSupport returns what t declares (see [SetTaskSupport]).
func ToolTaskSupport(t *mcp.Tool) TaskSupport {
	if t == nil {
		return TaskForbidden
	}
	s, _ := t.Meta[TaskSupportKey].(string)
	if ts := TaskSupport(s); ts == TaskOptional || ts == TaskRequired {
		return ts
	}
	return TaskForbidden
}

// Limits of a hub's tasks.
const (
	// TaskTTL is how long a task is kept after it was created (ttlMs);
	// one still running then is cancelled.
	TaskTTL = time.Hour
	// TaskPollInterval is the polling interval suggested to hosts.
	TaskPollInterval = 500 * time.Millisecond
	// MaxLiveTasksPerOwner bounds the tasks one owner (an authenticated
	// user, or one stdio connection) has running or waiting for input.
	MaxLiveTasksPerOwner = 64
	// MaxTasksPerOwner bounds the tasks a hub keeps for one owner,
	// finished ones included: the owner's oldest finished ones make room
	// for its new ones, so no one owner fills the hub's store.
	MaxTasksPerOwner = MaxTasks / 8
	// MaxTasks bounds the tasks a hub keeps, finished ones included; the
	// oldest finished ones make room for new ones.
	MaxTasks = 4096
	// maxTaskBytes bounds the bytes a hub keeps for its tasks: the
	// requests (for later rounds), results and errors.
	maxTaskBytes = 64 << 20
	// maxTaskBytesPerOwner bounds those bytes for one owner.
	maxTaskBytesPerOwner = maxTaskBytes / 4
)

// ErrTooManyTasks is the error when a task cannot be created because its
// host, or the hub, has as many as it may.
var ErrTooManyTasks = errors.New("too many tasks")

// A TaskSource is a source whose own server runs tasks: the hub passes
// a host's calls to it as they came, and forwards tasks/get, tasks/update
// and tasks/cancel for the tasks it creates.
type TaskSource interface {
	Source
	// OffersTasks reports whether the source's server offers the tasks
	// extension now.
	OffersTasks() bool
	// TaskRequest sends the request method (tasks/get, tasks/update or
	// tasks/cancel) with params (the taskId the source gave) and returns
	// its result object as the server sent it; a *jsonrpc.Error from the
	// server is returned as it is.
	TaskRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// TaskDecider is implemented by sources whose tool handlers decide for
// themselves whether a call becomes a task (they call [StartTask]), as
// packs do. For other sources, a call to a tool that declares task
// support becomes a task at once.
type TaskDecider interface {
	DecidesTasks() bool
}

// DecidesTasks implements [TaskDecider]: a pack's handlers call
// [StartTask].
func (p *Pack) DecidesTasks() bool { return true }

// taskStarterKey is the context key of a call's *taskStarter.
type taskStarterKey struct{}

// taskStarter lets the handler of a call that may become a task start
// it (see [StartTask]).
type taskStarter struct {
	st          *taskStore
	v           *View
	owner, name string
	params      json.RawMessage
	ctx         context.Context
	cancel      context.CancelFunc

	hubRun  bool // the hub starts the task, not the handler (see task.hubRun)
	mu      sync.Mutex
	t       *task         // the task, once started
	started chan struct{} // closed when t is set
	over    bool          // the handler returned without starting one
	refused error         // why the store refused the task, if it did
}

// StartTask, called by a tool handler, turns the call into a task, if
// the host declared the tasks extension for it and the tool declares
// task support ([SetTaskSupport]): the host is answered at once with the
// task, and what the handler returns becomes the task's outcome (a
// protocol error fails it, a result with input requests asks the host,
// and the handler is called again with the answers, as on a retry;
// anything else completes it). The handler's context then lives as long
// as the task: tasks/cancel, the task's TTL and the hub's Close cancel
// it. StartTask reports whether the call is a task; false (the host did
// not declare the extension, or has too many tasks) means the handler
// answers the call as usual. Calling it again returns the same answer.
func StartTask(ctx context.Context) bool {
	s := starterOf(ctx)
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t != nil {
		return true
	}
	if s.over || s.st == nil {
		return false
	}
	t, err := s.st.create(s.v, s.owner, s.name, s.params, nil, s.ctx, s.cancel)
	if err != nil {
		s.st.h.logger.Warn("task not created", LogKeyTool, s.name, "error", err)
		s.refused = err
		return false
	}
	s.st.mu.Lock()
	t.hubRun = s.hubRun
	s.st.mu.Unlock()
	s.t = t
	close(s.started)
	return true
}

// CallToolTask calls the tool v serves as name with params (the host's
// tools/call params object, as sent) for a host that declared the tasks
// extension; owner names the host (tasks answer only their owner). It
// reports false, doing nothing, when the call is not one for tasks (the
// tool declares no task support and its source runs no tasks): the data
// plane then makes the call as usual. Otherwise the answer is the result
// to send (a CreateTaskResult, or the tool's own result when it did not
// become a task) or a protocol error.
func (v *View) CallToolTask(ctx context.Context, owner, name string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error, bool) {
	ts, decides, ok := v.taskRoute(name)
	switch {
	case !ok:
		return nil, nil, false
	case ts != nil:
		return v.forwardTaskCall(ctx, owner, name, params, ts)
	}
	res, werr := v.runTaskCall(ctx, owner, name, params, !decides)
	return res, werr, true
}

// taskRoute says how a call of name for a host that declared the
// extension goes: to ts, a source that runs tasks itself; or, with ok
// and no ts, as a task of the hub's that the tool's handler starts
// (decides) or the hub starts at once; not ok: as an ordinary call.
func (v *View) taskRoute(name string) (ts TaskSource, decides, ok bool) {
	if v.isScriptTool(name) {
		return nil, true, true // a long script becomes a task (scriptHandler)
	}
	h := v.hub
	h.mu.RLock()
	e := h.table.toolIndex[name]
	served := e != nil && v.allows(name)
	h.mu.RUnlock()
	if !served {
		return nil, false, false
	}
	if ts, isTS := e.source.src.(TaskSource); isTS && ts.OffersTasks() {
		return ts, false, true
	}
	decides = decidesTasks(e.source.src)
	return nil, decides, takesTask(ToolTaskSupport(e.tool), decides)
}

// decidesTasks reports whether src's tool handlers decide when a call
// becomes a task (see [TaskDecider]).
func decidesTasks(src Source) bool {
	d, ok := src.(TaskDecider)
	return ok && d.DecidesTasks()
}

// takesTask reports whether a call to a tool declaring support s, of a
// source that decides (or not), may become a task of the hub's. A tool
// of another source that runs only as a task is left to its source: a
// source that does not run tasks itself (an upstream without the
// extension) refuses such a call (-32021), and that is the answer.
func takesTask(s TaskSupport, decides bool) bool {
	return s == TaskOptional || s == TaskRequired && decides
}

// runTaskCall calls a tool that may become a task of the hub's; with
// now, it does at once, otherwise when its handler calls StartTask.
func (v *View) runTaskCall(ctx context.Context, owner, name string, params json.RawMessage, now bool) (json.RawMessage, *jsonrpc.Error) {
	st := v.hub.tasks
	req, err := taskRequest(params, nil, "")
	if err != nil {
		return nil, asWireError(err)
	}
	runCtx, cancel := context.WithCancel(st.ctx)
	s := &taskStarter{st: st, v: v, owner: owner, name: name, params: taskParams(params), ctx: runCtx, cancel: cancel, started: make(chan struct{})}
	// Until it is a task, the call ends with the host's request.
	stopWatch := context.AfterFunc(ctx, cancel)
	call, err := v.beginTaskCall(context.WithValue(runCtx, taskStarterKey{}, s), name)
	if err != nil {
		stopWatch()
		cancel()
		return nil, asWireError(err)
	}
	if now {
		s.hubRun = true
		StartTask(call.Context())
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	sync := make(chan outcome, 1)
	if !st.goRun(func() {
		res, err := call.CallTool(req)
		s.mu.Lock()
		t := s.t
		s.over = t == nil
		s.mu.Unlock()
		if t == nil {
			sync <- outcome{res, err}
			return
		}
		st.finishRound(t, res, err)
	}) {
		call.Release()
		stopWatch()
		cancel()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the hub is shutting down"}
	}
	select {
	case <-s.started:
		stopWatch()
		st.mu.Lock()
		res := s.t.wire("task")
		st.mu.Unlock()
		return res, nil
	case o := <-sync:
		stopWatch()
		cancel()
		s.mu.Lock()
		refused := s.refused
		s.mu.Unlock()
		if o.err != nil && refused != nil {
			// The handler failed after the store refused its task: a
			// tool that runs only as a task says the host declared no
			// tasks (-32021), which is not why. Say why.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: refused.Error()}
		}
		if o.err != nil {
			return nil, asWireError(o.err)
		}
		res, err := toolResultJSON(o.res)
		if err != nil {
			return nil, asWireError(err)
		}
		return res, nil
	}
}

// forwardTaskCall passes a call to a source that runs tasks itself; a
// task it creates gets an id of the hub's.
func (v *View) forwardTaskCall(ctx context.Context, owner, name string, params json.RawMessage, ts TaskSource) (json.RawMessage, *jsonrpc.Error, bool) {
	call, rc := v.BeginRaw(ctx, name)
	if call == nil {
		return nil, nil, false // not served now: the typed path answers it
	}
	call.keepTasks = true
	res, werr := call.CallToolRaw(rc, withMember(params, "name", mustString(call.Local())))
	if werr != nil {
		return nil, werr, true
	}
	var head struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
	}
	if json.Unmarshal(res, &head) != nil || head.ResultType != "task" {
		return res, nil, true
	}
	if head.TaskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("source %q answered with a task without a taskId", call.SourceName())}, true
	}
	st := v.hub.tasks
	tctx, cancel := context.WithCancel(st.ctx)
	remote := &remoteTask{src: ts, id: head.TaskID}
	t, err := st.create(v, owner, name, nil, remote, tctx, cancel)
	if err != nil {
		cancel()
		st.cancelRemote(&task{remote: remote})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}, true
	}
	st.mu.Lock()
	if head.Status != "" {
		calls := st.setLocked(t, head.Status)
		defer notify(calls)
	}
	st.mu.Unlock()
	return withMember(res, "taskId", mustString(t.id)), nil, true
}

// TaskRequest answers a host's tasks/get, tasks/update or tasks/cancel
// (params as sent) for a host that declared the tasks extension; owner
// names the host, as for [View.CallToolTask]. A task of another view or
// owner, like one that never was or has expired, is unknown (-32602).
func (v *View) TaskRequest(ctx context.Context, owner, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var p struct {
		TaskID         *string         `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.TaskID == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params must be an object with a string taskId"}
	}
	st := v.hub.tasks
	t := st.lookup(v, owner, *p.TaskID)
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown task %q (it never existed, has expired, or belongs to another host)", method, *p.TaskID)}
	}
	var responses map[string]json.RawMessage
	if method == "tasks/update" {
		if json.Unmarshal(p.InputResponses, &responses) != nil || responses == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/update: inputResponses must be an object"}
		}
	}
	if t.remote != nil {
		return st.forward(ctx, t, method, params)
	}
	switch method {
	case "tasks/get":
		st.mu.Lock()
		res := t.wire("complete")
		st.mu.Unlock()
		return res, nil
	case "tasks/update":
		if werr := st.update(t, responses); werr != nil {
			return nil, werr
		}
	case "tasks/cancel":
		st.mu.Lock()
		var calls []func()
		var decline map[string]json.RawMessage
		if !terminal(t.status) {
			if t.status == taskInputRequired && t.hubRun {
				decline, t.answers = declineAll(t.inputs, t.answers), nil
			}
			t.message = "cancelled by the host"
			calls = st.setLocked(t, taskCancelled)
		}
		state := t.state
		st.mu.Unlock()
		notify(calls)
		if decline != nil {
			st.endRound(t, decline, state)
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + method}
	}
	return json.RawMessage(`{"resultType":"complete"}`), nil
}

// WatchTasks calls fn with the params of a notifications/tasks (the task
// as tasks/get would give it) whenever a task of v and owner changes
// status, until stop is called. fn is called without locks held, from
// the goroutine that changed the task, and must not block for long.
func (v *View) WatchTasks(owner string, fn func(params json.RawMessage)) (stop func()) {
	st := v.hub.tasks
	w := &taskWatcher{v: v, owner: owner, fn: fn}
	st.mu.Lock()
	st.watchers[w] = struct{}{}
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		delete(st.watchers, w)
		st.mu.Unlock()
	}
}

// OfferTasks makes the view offer the tasks extension to hosts at
// 2026-07-28 (server/discover, capabilities.extensions). A data plane
// that takes the extension's requests for the view (see
// [View.CallToolTask]) calls it; without one, go-sdk alone serves the
// view, which knows no tasks, and the extension is not offered.
func (v *View) OfferTasks() { v.tasksOffered.Store(true) }

// TakesTaskCall reports whether [View.CallToolTask] would take a call
// of name now (the tool may become a task, or its source runs tasks),
// without making it; a data plane that answers on a goroutine of its own
// asks first.
func (v *View) TakesTaskCall(name string) bool {
	_, _, ok := v.taskRoute(name)
	return ok
}

// ServedTool returns the tool v serves as name now, or nil.
func (v *View) ServedTool(name string) *mcp.Tool {
	if v.isScriptTool(name) {
		return v.metaTool(name)
	}
	h := v.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	if e := h.table.toolIndex[name]; e != nil && v.allows(name) {
		return e.tool
	}
	return nil
}

// CanStartTask reports whether [StartTask] may turn the call of ctx into
// a task: the host declared the extension and the tool declares task
// support. A handler that must ask before it starts one (a tool that
// runs only as a task) uses it to refuse a host that cannot take tasks
// before asking anything.
func CanStartTask(ctx context.Context) bool {
	if s := starterOf(ctx); s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.t != nil || s.st != nil && !s.over
	}
	return false
}

// starterOf returns the call's taskStarter, or nil.
func starterOf(ctx context.Context) *taskStarter {
	s, _ := ctx.Value(taskStarterKey{}).(*taskStarter)
	return s
}

// EndTasks drops the tasks of v and owner, cancelling their calls: a
// data plane calls it when the host can no longer reach them (its stdio
// connection ended).
func (v *View) EndTasks(owner string) {
	st := v.hub.tasks
	st.mu.Lock()
	var remote []*task
	for _, t := range st.tasks {
		if t.view == v && t.owner == owner {
			if t.remote != nil && !terminal(t.status) {
				remote = append(remote, t)
			}
			st.dropLocked(t)
		}
	}
	st.mu.Unlock()
	for _, t := range remote {
		st.cancelRemote(t)
	}
}

// A taskCall is a call that may become a task of the hub's: a tool's
// routed [Call], or a call of the script meta-tool, which runs in the
// view (see beginTaskCall).
type taskCall interface {
	Context() context.Context
	CallTool(*mcp.CallToolRequest) (*mcp.CallToolResult, error)
	Release()
}

// beginTaskCall begins a call of name that may become a task: the script
// meta-tool's runs its handler; any other is [View.Begin]'s.
func (v *View) beginTaskCall(ctx context.Context, name string) (taskCall, error) {
	if v.isScriptTool(name) {
		return &metaCall{ctx: ctx, run: v.scriptHandler}, nil
	}
	return v.Begin(ctx, name)
}

// metaCall is a call of a meta-tool as a taskCall.
type metaCall struct {
	ctx context.Context
	run func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error)
}

func (m *metaCall) Context() context.Context { return m.ctx }

func (m *metaCall) CallTool(req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return m.run(m.ctx, req)
}

func (m *metaCall) Release() {}
