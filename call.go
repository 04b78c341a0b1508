package junction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// A Call is one tool call the hub routes. Every way a call reaches a
// source goes through the same sequence, so that selection, timeouts,
// metrics, error mapping and logs cannot differ between them:
//
//	Begin       resolve the exposed name to a source and the source's own
//	            name; check the view's selection; wait for a source that is
//	            still connecting; count the call in flight; bound it by the
//	            source's timeout ([View.Begin], [View.BeginRaw], or
//	            [Hub.Begin] outside any view)
//	call        the source's CallTool, or CallToolRaw for a [RawCaller]
//	Finish      map the outcome: a tool error stays a result with isError,
//	            a *jsonrpc.Error stays that protocol error, and anything
//	            else (the source down, a timeout, a cancellation, a panic)
//	            becomes a [ToolError] result; report it to Options.Observe,
//	            log failures, stop counting the call
//
// [Call.CallTool] and [Call.CallToolRaw] do the last two steps; a data
// plane that calls the source itself (asynchronously, say) ends with
// [Call.Finish] or [Call.FinishRaw], exactly once.
type Call struct {
	hub   *Hub
	st    *sourceState
	tool  *mcp.Tool // as the view serves it
	name  string    // exposed name
	local string    // the source's own name
	src   Source
	ctx   context.Context
	stop  context.CancelFunc // nil without a timeout
	start time.Time
	raw   bool
	done  atomic.Bool
	// answered: StartToolRaw's answer has been called (it is called
	// once, whoever ends the call); answer is that answer.
	answered atomic.Bool
	answer   RawAnswer
	// keepTasks: the call may come back as a task of its source's (see
	// View.CallToolTask); other calls do not offer the source tasks.
	keepTasks bool

	v       *View             // the view it was begun on; nil for Hub.Call
	decoded bool              // a raw call made through the source's CallTool (typedRaw)
	extra   *mcp.RequestExtra // for a decoded call: see SetRequestExtra

	// What the call's CallInfo reports (see observe).
	in      json.RawMessage // the typed call's arguments, or the raw call's params
	inRaw   bool
	res     *mcp.CallToolResult
	resJSON json.RawMessage
	resSize int   // a streamed result's size (see FinishStreamed)
	code    int64 // a protocol error's
	panic   bool
}

// Begin starts a call of the tool v serves as name. It fails with a
// *jsonrpc.Error (invalid params, "unknown tool") if v does not serve
// name: no source has it, or v's selection leaves it out. While a source
// that may provide it is still connecting (a [Readier] that is not ready)
// Begin waits for it, up to [Options.StartupBudget] or ctx.
func (v *View) Begin(ctx context.Context, name string) (*Call, error) {
	return v.hub.begin(ctx, v, name)
}

// Begin is [View.Begin] outside any view: every tool the hub has can be
// called. Packs that compose other tools (diagrams) use it through
// [Hub.Call].
func (h *Hub) Begin(ctx context.Context, name string) (*Call, error) {
	return h.begin(ctx, nil, name)
}

// BeginRaw begins a call of name, as [View.Begin], only if v serves it
// now; otherwise it returns nil, and the call is for the typed path. It
// never waits. The call is made with the returned RawCaller: the source
// itself if it forwards bytes ([RawCaller], and [RawChooser] agrees);
// for any other source one that decodes the params into the request its
// CallTool takes, with the host session ctx names ([HostSession]), and
// encodes its result, so that the data plane makes every call the same
// way.
func (v *View) BeginRaw(ctx context.Context, name string) (*Call, RawCaller) {
	h := v.hub
	h.mu.RLock()
	e := h.table.toolIndex[name]
	if e == nil || !v.allows(name) {
		h.mu.RUnlock()
		return nil, nil
	}
	c := h.newCall(ctx, v, e)
	h.mu.RUnlock()
	return c, c.rawCaller()
}

// AwaitRaw is [View.BeginRaw] for a tool v may not serve yet: it waits,
// as [View.Begin] does, for the sources still connecting (at most the
// hub's startup budget), and returns the protocol error a host gets for
// a tool still unknown then.
func (v *View) AwaitRaw(ctx context.Context, name string) (*Call, RawCaller, *jsonrpc.Error) {
	c, err := v.hub.route(ctx, v, name)
	if err != nil {
		return nil, nil, err
	}
	return c, c.rawCaller(), nil
}

// rawCaller marks c a raw call and returns what makes it: its source if
// the source forwards bytes ([RawCaller], and [RawChooser] agrees),
// otherwise typedRaw.
func (c *Call) rawCaller() RawCaller {
	c.raw = true
	if rc, ok := c.src.(RawCaller); ok {
		if p, ok := rc.(RawChooser); !ok || p.CanCallRaw(c.local) {
			return rc
		}
	}
	c.decoded = true
	return typedRaw{c}
}

// Decoded reports whether the call, begun with [View.BeginRaw], is made
// through its source's CallTool: the source does not forward bytes, so
// the params are decoded for it and its result encoded.
func (c *Call) Decoded() bool { return c.decoded }

// SetRequestExtra gives a call made through its source's CallTool
// ([Call.Decoded]) what the host's transport adds to the request: its
// HTTP header, its token, a way to close its response stream. The
// source's handler finds it in req.Extra, as go-sdk's server gives it.
// Call it before the call is made.
func (c *Call) SetRequestExtra(x *mcp.RequestExtra) { c.extra = x }

// viewName is the name of the view the call was begun on ("" for
// Hub.Call and the default view).
func (c *Call) viewName() string {
	if c.v == nil {
		return ""
	}
	return c.v.name
}

// sourceContext returns ctx for the source's CallTool: it names the view
// the call was begun on ([CallerView]).
func (c *Call) sourceContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, callerViewKey{}, c.v)
}

type callerViewKey struct{}

// CallerView returns the view whose host a source's CallTool is called
// for, or nil (a call through [Hub.Call], outside any view). A source that
// calls other tools on the host's behalf (a diagram's tool nodes) calls
// them through this view, so that they stay inside the host's selection.
func CallerView(ctx context.Context) *View {
	v, _ := ctx.Value(callerViewKey{}).(*View)
	return v
}

func (h *Hub) begin(ctx context.Context, v *View, name string) (*Call, error) {
	c, err := h.route(ctx, v, name)
	if err != nil {
		return nil, err // not a nil *jsonrpc.Error in an error
	}
	return c, nil
}

// newCall starts a call of e: it counts in flight, for the hub and for
// the source. Called with h.mu read-locked, so that a Replace or Remove
// that retires the source either happens before (and the call is not
// routed there) or sees the call in flight (and Drain waits for it).
func (h *Hub) newCall(ctx context.Context, v *View, e *toolEntry) *Call {
	c := &Call{hub: h, st: e.source, tool: e.tool, name: e.name, local: e.local, src: e.source.src, ctx: ctx, start: time.Now()}
	if v != nil {
		c.v = v
	}
	h.inflight.Add(1)
	e.source.inflight.Add(1)
	if d := e.source.opts.Timeout; d > 0 {
		c.ctx, c.stop = context.WithTimeout(ctx, d)
	}
	return c
}

// route starts a call of the tool v (or, with v nil, the hub) serves as
// name, waiting for sources that are not ready yet.
func (h *Hub) route(ctx context.Context, v *View, name string) (*Call, *jsonrpc.Error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		h.mu.RLock()
		e := h.table.toolIndex[name]
		if e != nil && (v == nil || v.allows(name)) {
			c := h.newCall(ctx, v, e)
			h.mu.RUnlock()
			return c, nil
		}
		pending, changed := h.pending, h.changed
		h.mu.RUnlock()
		if pending == 0 {
			return nil, unknownTool(name, 0)
		}
		if timer == nil {
			timer = time.NewTimer(h.opts.StartupBudget)
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, unknownTool(name, pending)
		case <-ctx.Done():
			return nil, unknownTool(name, pending)
		case <-h.done:
			return nil, unknownTool(name, 0)
		}
	}
}

// unknownTool is the protocol error for a tool name a view does not
// serve; pending counts the sources still connecting when the wait for
// them ended.
func unknownTool(name string, pending int) *jsonrpc.Error {
	msg := fmt.Sprintf("unknown tool %q", name)
	if pending > 0 {
		msg += fmt.Sprintf(" (%d source(s) still connecting)", pending)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// Name returns the tool's exposed name.
func (c *Call) Name() string { return c.name }

// Tool returns the tool as the hub serves it (with its exposed name). It
// must not be modified.
func (c *Call) Tool() *mcp.Tool { return c.tool }

// Local returns the source's own name for the tool.
func (c *Call) Local() string { return c.local }

// Source returns the source that serves the tool.
func (c *Call) Source() Source { return c.src }

// SourceName returns the name the source was added under.
func (c *Call) SourceName() string { return c.st.name }

// HostSession returns the host session the call is made for, or nil (a
// stateless HTTP request, [Hub.Call]). It is known once the call is
// handed to its source.
func (c *Call) HostSession() Host {
	return HostSession(c.ctx)
}

// Context returns the call's context: the one given to Begin, bounded by
// the source's [SourceOptions.Timeout], and, once the call is handed to
// its source, the one [Options.Trace] returned.
func (c *Call) Context() context.Context { return c.ctx }

// CallTool calls the source's CallTool with req (whose Params.Name is
// replaced by the source's own name; req is not modified) and finishes
// the call with the outcome (see [Call.Finish]). A panicking source is
// recovered.
func (c *Call) CallTool(req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	local := *req
	params := mcp.CallToolParamsRaw{Name: c.local}
	if req.Params != nil {
		params = *req.Params
		params.Name = c.local
	}
	local.Params = &params
	if !c.keepTasks {
		params.Meta = withoutTasksMeta(c.src, params.Meta)
	}
	c.ctx, _ = withRequestHost(c.ctx, req.Session)
	c.in = params.Arguments
	if c.hub.opts.Trace != nil {
		c.ctx = c.hub.opts.Trace(c.ctx, c, metaTraceContext(params.Meta))
	}
	res, err := safeCall(c.sourceContext(c.ctx), c.src, &local)
	return c.Finish(res, err)
}

// CallToolRaw calls rc (the call's source, as returned by
// [View.BeginRaw]) with params, a tools/call params object holding the
// source's own tool name, and finishes the call with the outcome (see
// [Call.FinishRaw]).
func (c *Call) CallToolRaw(rc RawCaller, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	if !c.keepTasks {
		params = withoutTasks(c.src, params)
	}
	c.startRaw(params)
	res, err := safeRawCall(c.ctx, rc, c.local, params)
	res, _, werr := c.FinishRaw(res, 0, err)
	return res, werr
}

// StartToolRaw starts the call on rs (the call's source, as returned by
// [View.BeginRaw]) with params, as [Call.CallToolRaw] does, without
// waiting: answer gets what the host receives (see [Call.FinishRaw]),
// exactly once, from the goroutine that ends the call. It returns what
// cancels the call at the source (see [RawStarter]); never nil.
func (c *Call) StartToolRaw(rs RawStarter, params json.RawMessage, answer RawAnswer) (cancel RawCancel) {
	c.answer = answer
	done := (*startedCall)(c)
	defer func() {
		if r := recover(); r != nil {
			done.RawDone(nil, 0, recovered(r))
		}
		if cancel == nil {
			cancel = NoCancel
		}
	}()
	params = withoutTasks(c.src, params)
	c.startRaw(params)
	return rs.StartToolRaw(c.ctx, c.local, params, done)
}

// A RawAnswer takes what the host receives of a call started with
// [Call.StartToolRaw]: the JSON of its result, with what the source
// learned of it (see [ResultFacts]), or a protocol error.
type RawAnswer interface {
	AnswerRaw(res json.RawMessage, facts ResultFacts, werr *jsonrpc.Error)
}

// startedCall is a Call started with StartToolRaw, as the RawDone its
// source ends it with: the call's record is its own callback.
type startedCall Call

// RawDone implements RawDone: it finishes the call with the source's
// outcome and hands what the host receives to the call's answer, once.
func (s *startedCall) RawDone(res json.RawMessage, facts ResultFacts, err error) {
	c := (*Call)(s)
	if !c.answered.Swap(true) {
		c.answer.AnswerRaw(c.FinishRaw(res, facts, err))
	}
}

// startRaw notes a raw call's params, for its CallInfo, and starts its
// trace (see Options.Trace).
func (c *Call) startRaw(params json.RawMessage) {
	c.in, c.inRaw = params, true
	if c.hub.opts.Trace != nil {
		c.ctx = c.hub.opts.Trace(c.ctx, c, paramsTraceContext(params))
	}
}

// Finish ends the call with what the source returned and returns what
// the host receives: res itself, a *jsonrpc.Error from the source as it
// is, or a tool-error result for any other failure. It reports the call
// to Options.Observe and logs failures. Only the first Finish or
// FinishRaw of a call counts; later ones return their arguments.
func (c *Call) Finish(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if !c.end() {
		return res, err
	}
	if err == nil && res == nil {
		err = &ToolError{Code: CodeInternal, Message: "source returned no result"}
	}
	if err != nil {
		werr, te := c.fail(err)
		if werr != nil {
			return nil, werr
		}
		c.res = te.Result()
		c.observe(strings.ToLower(te.Code))
		return c.res, nil
	}
	outcome := "ok"
	if res.IsError {
		outcome = "tool_error"
	}
	c.res = res
	c.observe(outcome)
	return res, nil
}

// FinishRaw is [Call.Finish] for the raw path: res is the JSON of the
// source's result object, with what the source learned of it (zero if
// nothing), and the answer is the JSON of the result the host receives,
// with the facts that hold of it, or a protocol error. Invalid UTF-8 and
// lone surrogate escapes in res become U+FFFD, as they do when the typed
// path decodes a result, so both paths give the host the same text.
func (c *Call) FinishRaw(res json.RawMessage, facts ResultFacts, err error) (json.RawMessage, ResultFacts, *jsonrpc.Error) {
	if !c.end() {
		var werr *jsonrpc.Error
		errors.As(err, &werr)
		return res, facts, werr
	}
	if err == nil && len(res) == 0 {
		err = &ToolError{Code: CodeInternal, Message: "source returned no result"}
	}
	if err != nil {
		werr, te := c.fail(err)
		if werr != nil {
			return nil, 0, werr
		}
		b, merr := json.Marshal(te.Result())
		if merr != nil { // cannot happen: strings and a bool
			return nil, 0, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: merr.Error()}
		}
		c.resJSON = b
		c.observe(strings.ToLower(te.Code))
		return b, 0, nil
	}
	isError := facts.Has(ResultIsError)
	if facts&ResultRead == 0 {
		isError = resultIsError(res) // the source did not say
	}
	outcome := "ok"
	if isError {
		outcome = "tool_error"
	}
	// Text the typed path would decode to U+FFFD (invalid UTF-8, lone
	// surrogate escapes) reads the same on this path. That changes no
	// key into another, so the facts still hold.
	res = rawjson.FixText(res)
	c.resJSON = res
	c.observe(outcome)
	return res, facts, nil
}

// FinishStreamed is [Call.FinishRaw] for a result the data plane wrote
// to the host while it arrived from the source, rewritten as FinishRaw
// rewrites a result (its text fixed as rawjson.FixText fixes it): size is
// the result's length as the host received it and isError its isError
// member, which stand for the bytes in what the call reports. It reports
// false if the call had already ended.
func (c *Call) FinishStreamed(size int, isError bool) bool {
	if !c.end() {
		return false
	}
	outcome := "ok"
	if isError {
		outcome = "tool_error"
	}
	c.resSize = size
	c.observe(outcome)
	return true
}

// Release drops a call that was begun but will not be made (a data
// plane that found, after [View.BeginRaw], that the call must take the
// typed path): nothing is observed or logged, and it stops counting.
func (c *Call) Release() { c.end() }

// end marks the call finished and stops counting it; it reports false if
// it was already.
func (c *Call) end() bool {
	if c.done.Swap(true) {
		return false
	}
	if c.stop != nil {
		c.stop()
	}
	c.hub.inflight.Add(-1)
	if c.st.inflight.Add(-1) == 0 && c.st.retired.Load() {
		c.st.drainedOnce()
	}
	return true
}

// fail maps a failed call's error: a protocol error is returned as it
// is (and observed), anything else as a tool error, which is logged, and
// which the caller observes with its result.
func (c *Call) fail(err error) (*jsonrpc.Error, *ToolError) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		c.code = werr.Code
		c.observe("protocol_error")
		return werr, nil
	}
	if c.ctx.Err() == context.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
	}
	te := asToolError(c.name, err)
	attrs := []any{LogKeySource, c.st.name, LogKeyTool, c.name, "code", te.Code, "error", err}
	var panicked *panicError
	if errors.As(err, &panicked) {
		c.panic = true
		attrs = append(attrs, "stack", panicked.stack)
	}
	c.hub.logger.Warn("tool call failed", attrs...)
	return nil, te
}

func (c *Call) observe(outcome string) {
	if c.hub.opts.Observe == nil {
		return
	}
	ss := c.HostSession()
	c.hub.opts.Observe(CallInfo{
		Source: c.st.name, Tool: c.name, Start: c.start, Duration: time.Since(c.start), Outcome: outcome,
		Code: c.code, Panicked: c.panic, Raw: c.raw, View: c.viewName(), Session: ss, Context: c.ctx, Via: viaOf(c.ctx),
		in: c.in, inRaw: c.inRaw, res: c.res, resJSON: c.resJSON, resSize: c.resSize,
	})
}

// resultIsError reports whether the JSON object res has a top-level
// member "isError" whose value is true (the first, if there are several).
// Values are skipped with the scanner, so a megabyte of text costs one
// pass.
func resultIsError(res []byte) bool {
	if !rawjson.Contains(res, []byte(`"isError"`)) {
		return false // most results: found without walking them
	}
	isErr, seen := false, false
	rawjson.Object(res, func(key, val []byte) {
		if !seen && string(key) == "isError" {
			seen, isErr = true, string(val) == "true"
		}
	})
	return isErr
}

// panicError is a source's panic, turned into an error.
type panicError struct {
	value any
	stack string
}

func (e *panicError) Error() string { return fmt.Sprintf("source panicked: %v", e.value) }

// recovered turns the value of a recovered panic into the error a [Call]
// maps to an INTERNAL tool error, with the stack kept for the log.
func recovered(r any) error {
	pe := &panicError{value: r, stack: string(debug.Stack())}
	return &ToolError{Code: CodeInternal, Message: pe.Error(), Err: pe}
}

// safeCall calls src.CallTool and turns a panic into an error, so one
// broken source cannot take the hub down.
func safeCall(ctx context.Context, src Source, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, recovered(r)
		}
	}()
	return src.CallTool(ctx, req)
}

func safeRawCall(ctx context.Context, rc RawCaller, name string, params json.RawMessage) (res json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, recovered(r)
		}
	}()
	return rc.CallToolRaw(ctx, name, params)
}

// Call calls the tool the hub serves as name, outside any host session
// and selection: for packs that compose other tools (diagrams). The
// request's Session is nil, so the source cannot send progress or ask the
// host anything; sources must allow for that. An unknown name is an error
// wrapping [ErrUnknownTool]; a protocol error from the source is
// returned as the error; any other failure is a tool-error result.
func (h *Hub) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, err := h.Begin(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return c.CallTool(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
}

// Call is [Hub.Call] limited to the tools the view serves: a name outside
// the view's selection is an unknown tool.
func (v *View) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, err := v.Begin(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return c.CallTool(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name, Arguments: args}})
}

// Drain waits until no call routed to src (through any view, or
// [Hub.Call]) is in flight, or ctx is done. A reload that replaces or
// removes a source calls it before stopping the old source, so calls
// already routed there finish there. Sources the hub still serves may
// get new calls at any time; Drain is meant for sources that were
// replaced or removed, and returns at once for a source the hub never
// had.
func (h *Hub) Drain(ctx context.Context, src Source) error {
	h.mu.Lock()
	var states []*sourceState
	for _, s := range h.retired {
		if s.src == src {
			states = append(states, s)
		}
	}
	for _, s := range h.sources {
		if s.src == src {
			states = append(states, s)
		}
	}
	h.mu.Unlock()
	for _, s := range states {
		if !s.retired.Load() {
			return fmt.Errorf("source %q: still served by the hub; remove or replace it first", s.name)
		}
		select {
		case <-s.drained():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	h.mu.Lock()
	for _, s := range states {
		h.forgetRetired(s)
	}
	h.mu.Unlock()
	return nil
}

// retire marks s as no longer served: once no call to it is in flight,
// its drained channel closes. Called with h.mu held.
func (h *Hub) retire(s *sourceState) {
	s.retired.Store(true)
	h.retired = append(h.retired, s)
	if s.inflight.Load() == 0 {
		s.drainedOnce()
	}
	// Keep only the retired sources whose calls may still be waited for.
	kept := h.retired[:0]
	for _, r := range h.retired {
		select {
		case <-r.drained():
			if r != s {
				continue
			}
		default:
		}
		kept = append(kept, r)
	}
	clear(h.retired[len(kept):])
	h.retired = kept
}

// forgetRetired drops s from h.retired; called with h.mu held.
func (h *Hub) forgetRetired(s *sourceState) {
	for i, r := range h.retired {
		if r == s {
			h.retired = append(h.retired[:i], h.retired[i+1:]...)
			return
		}
	}
}

// drain state of a source, for Hub.Drain.
type drainState struct {
	inflight atomic.Int64 // calls routed to the source and not finished
	retired  atomic.Bool  // the hub no longer routes new calls to it
	once     sync.Once
	ch       chan struct{} // closed once retired and idle; made by drained
	chMu     sync.Mutex
}

func (d *drainState) drained() <-chan struct{} {
	d.chMu.Lock()
	defer d.chMu.Unlock()
	if d.ch == nil {
		d.ch = make(chan struct{})
	}
	return d.ch
}

func (d *drainState) drainedOnce() {
	d.once.Do(func() {
		d.chMu.Lock()
		if d.ch == nil {
			d.ch = make(chan struct{})
		}
		close(d.ch)
		d.chMu.Unlock()
	})
}
