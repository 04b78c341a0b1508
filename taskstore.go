package junction

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The hub's store of tasks (see tasks.go): each task's state, its rounds
// of input, the bounds per owner and in all, expiry and eviction, and
// the task object as the wire gives it.

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
