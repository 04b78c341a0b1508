package junction

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/rawjson"
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

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

func terminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// task is one task of a hub.
type task struct {
	id, owner string
	view      *View
	name      string          // the tool's exposed name
	params    json.RawMessage // the host's tools/call params, for later rounds
	created   time.Time
	cancel    context.CancelFunc // ends the task's calls
	ctx       context.Context    // the task's calls' context
	remote    *remoteTask        // a task of a TaskSource; nil for the hub's own
	hubRun    bool               // the hub made the call a task (the source does not decide)
	expire    *time.Timer

	// Guarded by taskStore.mu.
	status  string
	message string
	updated time.Time
	result  json.RawMessage            // completed
	err     *jsonrpc.Error             // failed
	inputs  map[string]json.RawMessage // input_required: the questions not answered yet
	answers map[string]json.RawMessage // input_required: the answers so far
	state   string                     // the request state for the next round
	size    int                        // bytes of params, result and err, counted in taskStore.bytes
	gone    bool                       // expired or evicted
}

// remoteTask is where a task of a TaskSource lives.
type remoteTask struct {
	src TaskSource
	id  string // the source's task id
}

// taskStore keeps a hub's tasks.
type taskStore struct {
	h    *Hub
	ctx  context.Context // the tasks' calls' parent; cancelled by close
	stop context.CancelFunc
	wg   sync.WaitGroup // the goroutines running tasks' calls

	mu       sync.Mutex
	closed   bool
	tasks    map[string]*task
	owners   map[string]*holding // what each owner holds; no entry for none
	bytes    int
	watchers map[*taskWatcher]struct{}
}

// holding is what one owner has in a task store.
type holding struct {
	live  int // tasks not finished
	kept  int // tasks, finished or not
	bytes int
}

// taskWatcher gets the status changes of one owner's tasks of a view.
type taskWatcher struct {
	v     *View
	owner string
	fn    func(json.RawMessage)
}

func newTaskStore(h *Hub) *taskStore {
	ctx, stop := context.WithCancel(context.Background())
	return &taskStore{h: h, ctx: ctx, stop: stop, tasks: make(map[string]*task), owners: make(map[string]*holding),
		watchers: make(map[*taskWatcher]struct{})}
}

// close cancels every task's calls and waits for them; tasks are not
// kept after. Idempotent.
func (st *taskStore) close() {
	st.mu.Lock()
	st.closed = true
	for id, t := range st.tasks {
		t.expire.Stop()
		delete(st.tasks, id)
	}
	st.mu.Unlock()
	st.stop()
	st.wg.Wait()
}

// goRun runs f in a goroutine the store waits for, unless the store is
// closed.
func (st *taskStore) goRun(f func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	st.wg.Add(1)
	go func() {
		defer st.wg.Done()
		f()
	}()
	return true
}

func newTaskID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// create adds a task of v for owner, working; remote is where it runs,
// if not in the hub. ctx and cancel are its calls' context.
func (st *taskStore) create(v *View, owner, name string, params json.RawMessage, remote *remoteTask, ctx context.Context, cancel context.CancelFunc) (*task, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, errors.New("the hub is shutting down")
	}
	if hd := st.owners[owner]; hd != nil && hd.live >= MaxLiveTasksPerOwner {
		return nil, fmt.Errorf("%w: %d tasks of this user are running; wait for one to end, or cancel one (tasks/cancel)", ErrTooManyTasks, MaxLiveTasksPerOwner)
	}
	if !st.evictLocked(owner, 1, len(params)) {
		return nil, fmt.Errorf("%w: the hub keeps as many unfinished tasks as it may; try again when one has ended", ErrTooManyTasks)
	}
	now := time.Now()
	t := &task{id: newTaskID(), owner: owner, view: v, name: name, params: params, created: now, updated: now,
		remote: remote, ctx: ctx, cancel: cancel, status: taskWorking}
	t.expire = time.AfterFunc(TaskTTL, func() { st.expireTask(t) })
	st.tasks[t.id] = t
	hd := st.owners[owner]
	if hd == nil {
		hd = &holding{}
		st.owners[owner] = hd
	}
	hd.live++
	hd.kept++
	st.growLocked(t, len(params))
	return t, nil
}

// growLocked counts size more bytes kept for t.
func (st *taskStore) growLocked(t *task, size int) {
	t.size += size
	st.bytes += size
	st.owners[t.owner].bytes += size
}

// evictLocked drops the oldest finished tasks until n more tasks of
// owner, and need more bytes of theirs, fit: first the owner's own (an
// owner at its share makes room among its own tasks, never another's),
// then anyone's. It reports whether they fit.
func (st *taskStore) evictLocked(owner string, n, need int) bool {
	over := func() bool {
		hd := st.owners[owner]
		return hd != nil && (hd.kept+n > MaxTasksPerOwner || hd.bytes+need > maxTaskBytesPerOwner)
	}
	for over() {
		if !st.dropOldestLocked(owner, true) {
			return false
		}
	}
	for len(st.tasks)+n > MaxTasks || st.bytes+need > maxTaskBytes {
		if !st.dropOldestLocked("", false) {
			return false
		}
	}
	return true
}

// dropOldestLocked drops the finished task updated longest ago (of
// owner alone, if mine), and reports whether there was one.
func (st *taskStore) dropOldestLocked(owner string, mine bool) bool {
	var oldest *task
	for _, t := range st.tasks {
		if terminal(t.status) && (!mine || t.owner == owner) && (oldest == nil || t.updated.Before(oldest.updated)) {
			oldest = t
		}
	}
	if oldest == nil {
		return false
	}
	st.dropLocked(oldest)
	return true
}

// dropLocked forgets t.
func (st *taskStore) dropLocked(t *task) {
	if t.gone {
		return
	}
	t.gone = true
	t.expire.Stop()
	delete(st.tasks, t.id)
	st.bytes -= t.size
	hd := st.owners[t.owner]
	hd.kept--
	hd.bytes -= t.size
	if !terminal(t.status) {
		hd.live--
	}
	if hd.kept <= 0 {
		delete(st.owners, t.owner)
	}
	t.cancel()
}

// expireTask drops t once its TTL has passed; its calls are cancelled.
func (st *taskStore) expireTask(t *task) {
	st.mu.Lock()
	st.dropLocked(t)
	st.mu.Unlock()
	if t.remote != nil {
		st.cancelRemote(t)
	}
}

// cancelRemote asks t's source to cancel it (best effort, bounded).
func (st *taskStore) cancelRemote(t *task) {
	st.goRun(func() {
		ctx, cancel := context.WithTimeout(st.ctx, 10*time.Second)
		defer cancel()
		params, _ := json.Marshal(map[string]string{"taskId": t.remote.id})
		t.remote.src.TaskRequest(ctx, "tasks/cancel", params)
	})
}

// lookup returns the task id of v and owner, or nil.
func (st *taskStore) lookup(v *View, owner, id string) *task {
	st.mu.Lock()
	defer st.mu.Unlock()
	t := st.tasks[id]
	if t == nil || t.view != v || t.owner != owner {
		return nil
	}
	return t
}

// setLocked moves t to status and returns the notification to send
// (after unlocking, with notify).
func (st *taskStore) setLocked(t *task, status string) []func() {
	if !terminal(t.status) && terminal(status) {
		st.owners[t.owner].live--
		defer t.cancel()
	}
	t.status = status
	t.updated = time.Now()
	if status != taskInputRequired {
		t.inputs, t.answers = nil, nil
	}
	var calls []func()
	for w := range st.watchers {
		// A source's task is what its server says (tasks/get, forwarded);
		// the hub's record of it is not news for the host.
		if t.remote == nil && w.v == t.view && w.owner == t.owner {
			msg := t.wire("")
			fn := w.fn
			calls = append(calls, func() { fn(msg) })
		}
	}
	return calls
}

func notify(calls []func()) {
	for _, f := range calls {
		f()
	}
}

// taskWire is a task on the wire: a CreateTaskResult, a tasks/get result
// (DetailedTask) or the params of notifications/tasks.
type taskWire struct {
	ResultType     string          `json:"resultType,omitempty"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          int64           `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	InputRequests  json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *jsonrpc.Error  `json:"error,omitempty"`
}

const wireTime = "2006-01-02T15:04:05.000Z07:00"

// wire returns t as JSON, called with the store locked: with resultType
// "task", a CreateTaskResult (no result, error or input requests);
// "complete", a tasks/get result; "", the params of notifications/tasks.
func (t *task) wire(resultType string) json.RawMessage {
	w := taskWire{
		ResultType: resultType, TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(wireTime), LastUpdatedAt: t.updated.UTC().Format(wireTime),
		TTLMs: TaskTTL.Milliseconds(), PollIntervalMs: TaskPollInterval.Milliseconds(),
	}
	if resultType != "task" {
		switch t.status {
		case taskInputRequired:
			w.InputRequests, _ = json.Marshal(t.inputs) // raw messages: cannot fail
		case taskCompleted:
			w.Result = t.result
		case taskFailed:
			w.Error = t.err
		}
	}
	b, _ := json.Marshal(w) // strings, numbers and valid JSON: cannot fail
	return b
}

// finishRound records what a round of t's call came to: a protocol
// error fails the task, an input-required result asks the host
// (input_required), any other result completes it. A task that ended
// meanwhile (cancelled, expired) keeps its status.
func (st *taskStore) finishRound(t *task, res *mcp.CallToolResult, err error) {
	var inputs map[string]json.RawMessage
	var result json.RawMessage
	var werr *jsonrpc.Error
	switch {
	case err != nil:
		if !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	case res == nil:
		werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the tool returned no result"}
	case len(res.InputRequests) > 0:
		b, merr := json.Marshal(res.InputRequests)
		if merr == nil {
			merr = json.Unmarshal(b, &inputs)
		}
		if merr != nil {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the tool's input requests: " + merr.Error()}
		}
	default:
		b, merr := json.Marshal(res)
		if merr != nil {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the tool's result: " + merr.Error()}
		}
		result = b
	}
	st.mu.Lock()
	if terminal(t.status) || t.gone {
		st.mu.Unlock()
		return
	}
	var calls []func()
	switch {
	case werr != nil:
		size := len(werr.Message) + len(werr.Data)
		if !st.evictLocked(t.owner, 0, size) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the error is too large to keep"}
			size = len(werr.Message)
		}
		t.err, t.message = werr, werr.Message
		st.growLocked(t, size)
		calls = st.setLocked(t, taskFailed)
	case inputs != nil:
		t.inputs, t.answers, t.state, t.message = inputs, make(map[string]json.RawMessage), res.RequestState, ""
		calls = st.setLocked(t, taskInputRequired)
	default:
		if !st.evictLocked(t.owner, 0, len(result)) {
			t.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the result (%d bytes) is too large to keep", len(result))}
			t.message = t.err.Message
			st.growLocked(t, len(t.err.Message))
			calls = st.setLocked(t, taskFailed)
			break
		}
		t.result, t.message = result, ""
		st.growLocked(t, len(result))
		calls = st.setLocked(t, taskCompleted)
	}
	st.mu.Unlock()
	notify(calls)
}

// declineAll returns answers with every outstanding question of inputs
// answered "cancel", or nil if one of them is not an elicitation (only
// an elicitation has such an answer).
func declineAll(inputs, answers map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(inputs)+len(answers))
	for k, a := range answers {
		out[k] = a
	}
	for k, q := range inputs {
		var head struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(q, &head) != nil || head.Method != "elicitation/create" {
			return nil
		}
		out[k] = json.RawMessage(`{"action":"cancel"}`)
	}
	return out
}

// endRound calls the tool of t, a task of the hub's that was cancelled
// while its source waited for answers, once more with answers that
// decline every question, so that the source's call ends (an upstream
// before 2026-07-28 holds it open, bridged, until it is answered) rather
// than wait for its own timeout. The outcome is dropped: t stays
// cancelled. Bounded by taskRequestTimeout.
func (st *taskStore) endRound(t *task, answers map[string]json.RawMessage, state string) {
	st.goRun(func() {
		req, err := taskRequest(t.params, answers, state)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(st.ctx, endRoundTimeout)
		defer cancel()
		if call, err := t.view.Begin(ctx, t.name); err == nil {
			call.CallTool(req)
		}
	})
}

// endRoundTimeout bounds endRound's call.
const endRoundTimeout = 30 * time.Second

// runRound calls t's tool again with the answers to its questions.
func (st *taskStore) runRound(t *task, answers map[string]json.RawMessage, state string) {
	ok := st.goRun(func() {
		req, err := taskRequest(t.params, answers, state)
		if err != nil {
			st.finishRound(t, nil, err)
			return
		}
		ctx := context.WithValue(t.ctx, taskStarterKey{}, &taskStarter{t: t})
		call, err := t.view.beginTaskCall(ctx, t.name)
		if err != nil {
			st.finishRound(t, nil, err)
			return
		}
		res, err := call.CallTool(req)
		st.finishRound(t, res, err)
	})
	if !ok {
		st.finishRound(t, nil, errors.New("the hub is shutting down"))
	}
}

// taskRequest builds a tools/call request from the host's params, with
// answers (keyed as the tool asked) and state, if any.
func taskRequest(params json.RawMessage, answers map[string]json.RawMessage, state string) (*mcp.CallToolRequest, error) {
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call params: " + err.Error()}
	}
	if answers != nil {
		b, _ := json.Marshal(answers) // raw messages: cannot fail
		p.InputResponses = nil
		if err := json.Unmarshal(b, &p.InputResponses); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		p.RequestState = state
	}
	return &mcp.CallToolRequest{Params: &p}, nil
}

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

// taskParams returns the host's params without the answers of a retry
// (a task's later rounds carry their own).
func taskParams(params json.RawMessage) json.RawMessage {
	out := make([]byte, 0, len(params))
	out = append(out, '{')
	rawjson.Object(params, func(key, val []byte) {
		if k := string(key); k != "inputResponses" && k != "requestState" {
			out = appendMember(out, key, val)
		}
	})
	return append(out, '}')
}

// toolResultJSON is res as a host at 2026-07-28 gets it: a result with
// input requests says so ("resultType":"input_required").
func toolResultJSON(res *mcp.CallToolResult) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil || len(res.InputRequests) == 0 || len(b) < 2 {
		return b, err
	}
	var has bool
	rawjson.Object(b, func(key, _ []byte) { has = has || string(key) == "resultType" })
	if has {
		return b, nil
	}
	out := append([]byte(`{"resultType":"input_required"`), b[1:]...)
	if len(b) > 2 {
		out = append([]byte(`{"resultType":"input_required",`), b[1:]...)
	}
	return out, nil
}

// asWireError returns err as the protocol error a host gets.
func asWireError(err error) *jsonrpc.Error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// forwardTaskCall passes a call to a source that runs tasks itself; a
// task it creates gets an id of the hub's.
func (v *View) forwardTaskCall(ctx context.Context, owner, name string, params json.RawMessage, ts TaskSource) (json.RawMessage, *jsonrpc.Error, bool) {
	call, rc := v.BeginRaw(ctx, name)
	if call == nil {
		return nil, nil, false // the typed path: no task
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

// update takes the answers to some of t's questions; once all are
// answered, the tool is called again with them.
func (st *taskStore) update(t *task, responses map[string]json.RawMessage) *jsonrpc.Error {
	st.mu.Lock()
	if t.status != taskInputRequired {
		st.mu.Unlock()
		return nil // answers to nothing outstanding are ignored
	}
	for k, r := range responses {
		if _, ok := t.inputs[k]; !ok {
			continue // not outstanding: ignored, as the extension says
		}
		var check mcp.InputResponseMap
		if err := json.Unmarshal(append(append([]byte(`{"k":`), r...), '}'), &check); err != nil {
			st.mu.Unlock()
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tasks/update: inputResponses[%q]: %v", k, err)}
		}
	}
	for k, r := range responses {
		if _, ok := t.inputs[k]; ok {
			t.answers[k] = r
			delete(t.inputs, k)
		}
	}
	t.updated = time.Now()
	if len(t.inputs) > 0 {
		st.mu.Unlock()
		return nil
	}
	answers, state := t.answers, t.state
	calls := st.setLocked(t, taskWorking)
	st.mu.Unlock()
	notify(calls)
	st.runRound(t, answers, state)
	return nil
}

// forward sends a tasks/* request for a task of a TaskSource there, with
// the source's task id, and gives the answer the hub's id.
func (st *taskStore) forward(ctx context.Context, t *task, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	res, err := t.remote.src.TaskRequest(ctx, method, withMember(params, "taskId", mustString(t.remote.id)))
	if err != nil {
		return nil, asWireError(err)
	}
	if method != "tasks/get" {
		return res, nil
	}
	var head struct {
		Status string `json:"status"`
	}
	json.Unmarshal(res, &head)
	st.mu.Lock()
	if head.Status != "" && head.Status != t.status && !terminal(t.status) {
		calls := st.setLocked(t, head.Status)
		st.mu.Unlock()
		notify(calls)
	} else {
		st.mu.Unlock()
	}
	return withMember(res, "taskId", mustString(t.id)), nil
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

// withMember returns the JSON object obj with member key set to val (in
// place of the first one of that name, or first).
func withMember(obj json.RawMessage, key string, val []byte) json.RawMessage {
	out := make([]byte, 0, len(obj)+len(val)+len(key)+4)
	out = append(out, '{')
	done := false
	rawjson.Object(obj, func(k, v []byte) {
		if string(k) == key {
			if done {
				return
			}
			done, v = true, val
		}
		out = appendMember(out, k, v)
	})
	if !done {
		head := append(append(append([]byte(`{"`), key...), `":`...), val...)
		if len(out) > 1 {
			head = append(head, ',')
		}
		out = append(head, out[1:]...)
	}
	return append(out, '}')
}

// appendMember appends the member key (as read, without quotes) and val
// to out, a JSON object's text being written ("{" and the members so
// far).
func appendMember(out, key, val []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, `":`...)
	return append(out, val...)
}

// mustString is s as a JSON string.
func mustString(s string) []byte {
	b, _ := json.Marshal(s) // a string: cannot fail
	return b
}

// OfferTasks makes the view offer the tasks extension to hosts at
// 2026-07-28 (server/discover, capabilities.extensions). A data plane
// that takes the extension's requests for the view (see
// [View.CallToolTask]) calls it; without one, go-sdk alone serves the
// view, which knows no tasks, and the extension is not offered.
func (v *View) OfferTasks() { v.tasksOffered.Store(true) }

// advertiseTasks is a receiving middleware of the view's server: once
// the view offers the extension (OfferTasks), a server/discover result
// (protocol 2026-07-28) says so, and so does an initialize result of a
// revision from 2026-07-28 on; older clients are not told, since the
// extension is defined for 2026-07-28 only.
func (v *View) advertiseTasks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || !v.tasksOffered.Load() {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.DiscoverResult:
			r.Capabilities = withTasks(r.Capabilities)
		case *mcp.InitializeResult:
			if ParseRevision(r.ProtocolVersion).Tasks() {
				r.Capabilities = withTasks(r.Capabilities)
			}
		}
		return res, err
	}
}

// withTasks returns a copy of c that offers the tasks extension.
func withTasks(c *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	var cp mcp.ServerCapabilities
	if c != nil {
		cp = *c
		cp.Extensions = maps.Clone(c.Extensions)
	}
	cp.AddExtension(TasksExtension, map[string]any{})
	return &cp
}

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

// withoutTasks returns params (a tools/call params object) without the
// tasks extension in its client capabilities, when src runs tasks of its
// own now: a call the hub does not make through [View.CallToolTask] cannot
// map a task the source would create, so the source must not be offered
// one. Params that do not name the extension are returned as they are,
// unread.
func withoutTasks(src Source, params json.RawMessage) json.RawMessage {
	if ts, ok := src.(TaskSource); !ok || !ts.OffersTasks() || !bytes.Contains(params, []byte(TasksExtension)) {
		return params
	}
	return withoutPath(params, "_meta", mcp.MetaKeyClientCapabilities, "extensions", TasksExtension)
}

// withoutPath returns the JSON object obj without the member at path (a
// member of a member ...), as it is otherwise.
func withoutPath(obj []byte, path ...string) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	rawjson.Object(obj, func(k, v []byte) {
		if string(k) == path[0] {
			if len(path) == 1 {
				return
			}
			if len(v) > 0 && v[0] == '{' {
				v = withoutPath(v, path[1:]...)
			}
		}
		out = appendMember(out, k, v)
	})
	return append(out, '}')
}

// withoutTasksMeta is withoutTasks for a typed request's _meta: a copy
// without the extension, or meta itself.
func withoutTasksMeta(src Source, meta mcp.Meta) mcp.Meta {
	if _, ok := meta[mcp.MetaKeyClientCapabilities]; !ok {
		return meta
	}
	if ts, ok := src.(TaskSource); !ok || !ts.OffersTasks() {
		return meta
	}
	b, err := json.Marshal(meta)
	if err != nil || !bytes.Contains(b, []byte(TasksExtension)) {
		return meta
	}
	var out mcp.Meta
	if json.Unmarshal(withoutPath(append([]byte(`{"_meta":`), append(b, '}')...), "_meta", mcp.MetaKeyClientCapabilities, "extensions", TasksExtension), &struct {
		Meta *mcp.Meta `json:"_meta"`
	}{&out}) != nil {
		return meta
	}
	return out
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
