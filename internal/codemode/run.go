package codemode

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/quickjs"
)

//go:embed prelude.js
var preludeJS string

// Why the engine was interrupted; the first reason wins.
const (
	stopNone int32 = iota
	stopWall
	stopCancel
	stopCalls
	stopOutput
	stopArgsMemory
)

// maxStackSlots bounds JavaScript recursion (QuickJS stack slots, about
// one per call frame) so that deep recursion throws a RangeError-like
// InternalError inside the script long before any Go stack is at risk.
// It is also kept low because the engine unwinds an interrupt slowly
// through frames that catch stack overflow and recurse again (about 4 ms
// a frame on a loaded 2-core machine): the depth bounds how far such a
// script overruns its CPU limit. Orchestration scripts need little depth.
const maxStackSlots = 1000

// completion is one finished inner call, sent from its goroutine to the
// loop, which alone touches the engine.
type completion struct {
	id      int
	tool    string
	ok      bool
	payload string // the value's JSON, or the error's {message, code, tool}
}

// run is the state of one script.
type run struct {
	vm     *quickjs.VM
	env    Env
	lim    Limits
	ctx    context.Context // cancelled when the script ends: inner calls use it
	parent context.Context // the caller's: done means cancelled, not the wall limit
	start  time.Time

	reason   atomic.Int32
	cpuUsed  time.Duration
	console  strings.Builder
	calls    int
	argBytes int64
	nextID   int
	inflight int
	done     chan completion
	sem      chan struct{}
	wg       sync.WaitGroup

	finished bool
	ok       bool
	payload  string
	hostErr  error // a Go-side failure inside a host function
}

// Run runs one script to completion and returns its result. The error is
// a *ScriptError (the script's own fault), a *LimitError (it went over a
// limit), ErrCancelled wrapping ctx's cause, or another error for a
// failure of the engine itself. See Result for when it is non-nil.
func Run(ctx context.Context, s Script, env Env, lim Limits) (*Result, error) {
	lim = lim.withDefaults()
	start := time.Now()
	c, err := compile(s)
	if err != nil {
		return nil, err
	}
	if env.Call == nil {
		env.Call = func(context.Context, string, json.RawMessage) (CallResult, error) {
			return CallResult{}, errors.New("no tools are available")
		}
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("code mode: starting the engine: %w", err)
	}
	runCtx, cancel := context.WithTimeout(ctx, lim.Wall)
	r := &run{
		vm: vm, env: env, lim: lim, ctx: runCtx, parent: ctx, start: start,
		done: make(chan completion, lim.Calls),
		sem:  make(chan struct{}, lim.Concurrent),
	}
	// Stop the engine when the wall time is up or the caller cancels.
	// Interrupt is sticky only while Go is inside JavaScript, so it is
	// repeated until the loop notices (the loop also checks between turns).
	watchDone := make(chan struct{})
	watchExit := make(chan struct{})
	go func() {
		defer close(watchExit)
		select {
		case <-runCtx.Done():
		case <-watchDone:
			return
		}
		if ctx.Err() != nil {
			r.stop(stopCancel)
		} else {
			r.stop(stopWall)
		}
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-watchDone:
				return
			case <-t.C:
				vm.Interrupt()
			}
		}
	}()

	value, err := r.exec(c)

	// Tear down: cancel the inner calls, wait for them, stop the watcher,
	// and only then close the engine (nothing else touches it).
	cancel()
	r.wg.Wait()
	close(watchDone)
	<-watchExit
	vm.Close()

	res := &Result{Value: value, Console: r.console.String(), Calls: r.calls, Duration: time.Since(start)}
	if err != nil {
		res.Value = nil
		return res, err
	}
	if len(value)+r.console.Len() > lim.Output {
		res.Value = nil
		return res, r.limitError(LimitOutput, fmt.Sprintf("the return value is %d bytes and the console output %d", len(value), r.console.Len()))
	}
	return res, nil
}

// stop records why the engine must stop and interrupts it.
func (r *run) stop(why int32) {
	r.reason.CompareAndSwap(stopNone, why)
	r.vm.Interrupt()
}

// exec sets the engine up, runs the script and its event loop, and returns
// the return value's JSON.
func (r *run) exec(c *compiled) (json.RawMessage, error) {
	vm := r.vm
	vm.SetMemoryLimit(uintptr(r.lim.Memory))
	vm.SetMaxStackSize(maxStackSlots)
	vm.SetCanBlock(false)

	for name, fn := range map[string]quickjs.HostFunc{
		"__cm_hostCall": r.hostCall,
		"__cm_hostLog":  r.hostLog,
		"__cm_hostDone": r.hostDone,
	} {
		if err := vm.RegisterHostFunc(name, fn); err != nil {
			return nil, fmt.Errorf("code mode: registering %s: %w", name, err)
		}
	}
	funcs, err := json.Marshal(append([]Func{}, r.env.Funcs...))
	if err != nil {
		return nil, err
	}
	// The prelude captures the host functions and deletes them from the
	// global object before any of the script runs; its value is the
	// dispatcher through which Go starts the script and settles calls.
	boot := preludeJS + `(globalThis.__cm_hostCall, globalThis.__cm_hostLog, globalThis.__cm_hostDone, ` +
		quote(string(funcs)) + `, ` + fmt.Sprint(r.lim.Output) + `)`
	dispatch, err := r.evalValue(boot)
	if err != nil {
		return nil, r.engineError("starting the prelude", err)
	}
	defer dispatch.Free()
	fn, err := r.evalValue(c.js)
	if err != nil {
		return nil, r.scriptError(c, err)
	}
	defer fn.Free()
	var skipped any
	err = r.turn(func() (err error) {
		skipped, err = dispatch.Call(quickjs.UndefinedValue, "start", fn)
		return err
	})
	if err != nil {
		return nil, r.engineError("starting the script", err)
	}
	if s, _ := skipped.(string); s != "" && r.env.Logger != nil {
		r.env.Logger.Warn("code mode: namespaces not bound, as they would hide a global of the engine; their tools are in tools[...]", "namespaces", s)
	}

	completed := 0
	for {
		err := r.turn(func() error {
			_, err := r.vm.ExecutePendingJobs()
			return err
		})
		if err != nil && !strings.HasPrefix(err.Error(), "quickjs: aborted draining") {
			return nil, r.engineError("running the script", err)
		}
		if r.hostErr != nil {
			return nil, r.hostErr
		}
		if r.finished {
			return r.outcome(c)
		}
		if r.reason.Load() != stopNone {
			return nil, r.stopError(nil)
		}
		if err != nil {
			continue // a self-feeding microtask loop: the CPU limit ends it
		}
		if r.inflight == 0 {
			return nil, &ScriptError{Kind: KindStalled, Name: "Error",
				Message: "the script is awaiting a promise that nothing will ever settle (no tool call is running); await only tool calls and promises built from them"}
		}
		var comp completion
		select {
		case comp = <-r.done:
		case <-r.ctx.Done():
			if r.parent.Err() != nil {
				r.reason.CompareAndSwap(stopNone, stopCancel)
			} else {
				r.reason.CompareAndSwap(stopNone, stopWall)
			}
			return nil, r.stopError(nil)
		}
		r.inflight--
		completed++
		err = r.turn(func() error {
			_, err := dispatch.Call(quickjs.UndefinedValue, "settle", comp.id, comp.ok, comp.payload)
			return err
		})
		if err != nil {
			return nil, r.engineError("settling a call", err)
		}
		if r.env.Progress != nil {
			r.env.Progress(completed, comp.tool+" done")
		}
	}
}

// outcome turns what the script finished with (hostDone) into the result.
func (r *run) outcome(c *compiled) (json.RawMessage, error) {
	if r.ok {
		if !json.Valid([]byte(r.payload)) {
			return nil, &ScriptError{Kind: KindResult, Name: "TypeError", Message: "the return value did not serialise to valid JSON (was JSON.stringify replaced?)"}
		}
		return json.RawMessage(r.payload), nil
	}
	var info struct {
		Name, Message, Stack string
		Code                 any
		Tool                 string
		Result, Thrown       bool
		Limit                string
		Size                 int
	}
	_ = json.Unmarshal([]byte(r.payload), &info)
	switch {
	case info.Limit == LimitOutput:
		return nil, r.limitError(LimitOutput, fmt.Sprintf("the return value is %d characters of JSON", info.Size))
	case info.Result:
		return nil, &ScriptError{Kind: KindResult, Name: info.Name, Message: info.Message}
	}
	if info.Thrown && info.Name == "" && info.Message == "the script threw null" {
		// QuickJS throws null when it runs out of memory while making the
		// "out of memory" error itself.
		return nil, r.limitError(LimitMemory, "the engine ran out of memory (reported as a thrown null)")
	}
	if lim := engineLimit(info.Message); lim != "" {
		return nil, r.limitError(LimitMemory, info.Message)
	}
	se := &ScriptError{Kind: KindRuntime, Name: info.Name, Message: info.Message, Tool: info.Tool}
	if f, ok := info.Code.(float64); ok {
		se.Code = int(f)
	}
	se.Line, se.Column = c.locate(info.Stack)
	r.hint(se)
	return nil, se
}

// engineLimit reports whether an engine error message is the memory cap.
func engineLimit(msg string) string {
	if msg == "out of memory" || strings.HasSuffix(msg, "out of memory") || msg == "string too long" || strings.HasSuffix(msg, "string too long") {
		return LimitMemory
	}
	return ""
}

// hint adds what the model needs to fix common mistakes.
func (r *run) hint(se *ScriptError) {
	switch {
	case se.Name == "ReferenceError" && strings.HasSuffix(se.Message, "is not defined"):
		ns := map[string]bool{}
		var names []string
		for _, f := range r.env.Funcs {
			if f.Namespace != "" && !ns[f.Namespace] {
				ns[f.Namespace] = true
				names = append(names, f.Namespace)
			}
		}
		if len(names) == 0 {
			se.Message += "; this view has no tools for a script to call"
			break
		}
		se.Message += "; the tool namespaces are " + strings.Join(names, ", ") + ", and tools[\"exact listed name\"] reaches any tool"
	case strings.Contains(se.Message, "stack overflow"):
		se.Message += " (recursion too deep)"
	}
}

// scriptError is an error from evaluating the compiled script, which
// esbuild accepted: a syntax error only the engine catches, or a limit.
func (r *run) scriptError(c *compiled, err error) error {
	if r.reason.Load() != stopNone || isInterrupted(err) {
		return r.stopError(err)
	}
	var qe *quickjs.Error
	if errors.As(err, &qe) {
		if engineLimit(qe.Message) != "" {
			return r.limitError(LimitMemory, qe.Message)
		}
		se := &ScriptError{Kind: KindRuntime, Name: qe.Name, Message: qe.Message}
		if qe.Name == "SyntaxError" {
			se.Kind = KindSyntax
			se.Line, se.Column = c.mapPos(qe.LineNumber, qe.ColumnNumber)
		} else {
			se.Line, se.Column = c.locate(qe.Stack)
		}
		return se
	}
	return err
}

// engineError is an error from the plumbing: a limit that struck while it
// ran, or a failure of the engine.
func (r *run) engineError(what string, err error) error {
	if r.hostErr != nil {
		return r.hostErr
	}
	if r.reason.Load() != stopNone || isInterrupted(err) {
		return r.stopError(err)
	}
	var le *LimitError
	if errors.As(err, &le) {
		return err
	}
	var qe *quickjs.Error
	if errors.As(err, &qe) && engineLimit(qe.Message) != "" {
		return r.limitError(LimitMemory, qe.Message)
	}
	if errors.As(err, &qe) && strings.Contains(qe.Message, "stack overflow") {
		return &ScriptError{Kind: KindRuntime, Name: qe.Name, Message: qe.Message + " (recursion too deep)"}
	}
	return fmt.Errorf("code mode: %s: %w", what, err)
}

// hostCall is __cm_hostCall(tool, argsJSON): it starts an inner call and
// returns its id, which the prelude settles when the call completes.
func (r *run) hostCall(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("hostCall: want 2 arguments")
	}
	tool, ok1 := args[0].(string)
	body, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, errors.New("hostCall: want strings")
	}
	if r.calls >= r.lim.Calls {
		r.stop(stopCalls)
		return 0, nil // the interrupt ends the script as this returns
	}
	r.argBytes += int64(len(body))
	if r.argBytes > r.lim.Memory {
		r.stop(stopArgsMemory)
		return 0, nil
	}
	r.calls++
	id := r.nextID
	r.nextID++
	r.inflight++
	r.wg.Add(1)
	go r.callTool(id, tool, json.RawMessage(body))
	return id, nil
}

// callTool runs one inner call on its own goroutine, waiting its turn
// under the concurrency limit, and hands the outcome to the loop.
func (r *run) callTool(id int, tool string, args json.RawMessage) {
	defer r.wg.Done()
	comp := completion{id: id, tool: tool}
	select {
	case r.sem <- struct{}{}:
		res, err := r.env.Call(r.ctx, tool, args)
		<-r.sem
		comp.ok, comp.payload = callPayload(tool, res, err)
	case <-r.ctx.Done():
		comp.payload = errPayload(tool, -32603, "cancelled: "+context.Cause(r.ctx).Error())
	}
	r.done <- comp // buffered for every call: never blocks
}

// callPayload is what the script's await gets: the structured content,
// else the content blocks, or the error.
func callPayload(tool string, res CallResult, err error) (bool, string) {
	if err != nil {
		code := -32603
		var ec interface{ ErrorCode() int }
		if errors.As(err, &ec) {
			code = ec.ErrorCode()
		}
		return false, errPayload(tool, code, err.Error())
	}
	if res.IsError {
		msg := res.Message
		if msg == "" {
			msg = contentText(res.Content)
		}
		if msg == "" {
			msg = "the tool reported an error"
		}
		return false, errPayload(tool, res.Code, msg)
	}
	if len(res.Structured) > 0 {
		return true, string(res.Structured)
	}
	if len(res.Content) > 0 {
		return true, string(res.Content)
	}
	return true, "[]"
}

func errPayload(tool string, code int, msg string) string {
	b, _ := json.Marshal(map[string]any{"message": msg, "code": code, "tool": tool})
	return string(b)
}

// contentText joins the text blocks of a content array.
func contentText(content json.RawMessage) string {
	var blocks []struct{ Type, Text string }
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// hostLog is __cm_hostLog(level, text): console output, bounded by the
// output limit.
func (r *run) hostLog(args []any) (any, error) {
	if len(args) != 2 {
		return nil, nil
	}
	level, _ := args[0].(string)
	text, _ := args[1].(string)
	prefix := ""
	if level != "log" && level != "info" {
		prefix = "[" + level + "] "
	}
	line := prefix + text + "\n"
	if room := r.lim.Output - r.console.Len(); len(line) > room {
		r.console.WriteString(line[:max(room, 0)])
		r.stop(stopOutput)
		return nil, nil
	}
	r.console.WriteString(line)
	return nil, nil
}

// hostDone is __cm_hostDone(ok, payload): the script finished.
func (r *run) hostDone(args []any) (any, error) {
	if r.finished || len(args) != 2 {
		return nil, nil
	}
	r.finished = true
	r.ok, _ = args[0].(bool)
	r.payload, _ = args[1].(string)
	return nil, nil
}

// quote makes a JavaScript string literal.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// evalValue evaluates JavaScript on the engine, counting its time against
// the CPU limit.
func (r *run) evalValue(src string) (quickjs.Value, error) {
	var v quickjs.Value
	err := r.turn(func() (err error) {
		v, err = r.vm.EvalValue(src, quickjs.EvalGlobal)
		return err
	})
	return v, err
}

// turn runs one entry into the engine with what is left of the CPU
// budget as its timeout.
func (r *run) turn(f func() error) error {
	left := r.lim.CPU - r.cpuUsed
	if left <= 0 {
		return r.limitError(LimitCPU, "")
	}
	if r.reason.Load() != stopNone {
		return r.stopError(nil)
	}
	r.vm.SetEvalTimeout(left)
	t := time.Now()
	err := f()
	r.cpuUsed += time.Since(t)
	return err
}

// stopError turns why the engine stopped into the error Run returns; err
// is what the engine reported, if anything.
func (r *run) stopError(err error) error {
	switch r.reason.Load() {
	case stopCancel:
		return fmt.Errorf("%w: %w", ErrCancelled, context.Cause(r.ctx))
	case stopWall:
		return r.limitError(LimitWall, "")
	case stopCalls:
		return r.limitError(LimitCalls, fmt.Sprintf("the script tried to make call %d", r.calls+1))
	case stopOutput:
		return r.limitError(LimitOutput, "console output")
	case stopArgsMemory:
		return r.limitError(LimitMemory, "the arguments passed to tools")
	}
	if r.cpuUsed >= r.lim.CPU || isInterrupted(err) {
		return r.limitError(LimitCPU, "")
	}
	return err
}

func isInterrupted(err error) bool {
	var qe *quickjs.Error
	return errors.As(err, &qe) && qe.Message == "interrupted"
}

func (r *run) limitError(limit, detail string) *LimitError {
	var max string
	switch limit {
	case LimitWall:
		max = r.lim.Wall.String()
	case LimitCPU:
		max = r.lim.CPU.String()
	case LimitMemory:
		max = byteSize(r.lim.Memory)
	case LimitOutput:
		max = byteSize(int64(r.lim.Output))
	case LimitCalls:
		max = fmt.Sprintf("%d calls", r.lim.Calls)
	}
	return &LimitError{Limit: limit, Max: max, Detail: detail}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
