package codemode

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"modernc.org/quickjs"
)

//go:embed prelude.js
var preludeJS string

// Why the engine was interrupted; the first reason wins. (Cancelling is
// Run's: it ends the engine's process.)
const (
	stopNone int32 = iota
	stopWall
	stopCalls
	stopOutput
	stopArgsMemory
)

// stuckGrace is how long the engine may run on past a limit that has
// interrupted it before its process gives up on it: QuickJS looks for the
// interrupt between instructions of JavaScript, not inside a built-in,
// and a built-in can loop over an array-like's length (up to 2^53) without
// running a line of the script.
const stuckGrace = time.Second

// maxStackSlots bounds JavaScript recursion (QuickJS stack slots, about
// one per call frame) so that deep recursion throws a RangeError-like
// InternalError inside the script long before any Go stack is at risk.
// It is also kept low because the engine unwinds an interrupt slowly
// through frames that catch stack overflow and recurse again (about 4 ms
// a frame on a loaded 2-core machine): the depth bounds how far such a
// script overruns its CPU limit. Orchestration scripts need little depth.
const maxStackSlots = 1000

// completion is one finished inner call, as Run sends it to the engine's
// loop, which alone touches the engine.
type completion struct {
	ID      int    `json:"id"`
	OK      bool   `json:"ok"`
	Payload string `json:"payload"` // the value's JSON, or the error's {message, code, tool}
}

// run is the state of one script in the engine's process.
type run struct {
	vm    *quickjs.VM
	funcs []Func
	lim   Limits
	ctx   context.Context // done when the wall time is up
	out   *engineOut

	reason   atomic.Int32
	turnEnd  atomic.Int64 // while the engine runs, when its CPU budget is spent (Unix ns)
	cpuUsed  time.Duration
	console  strings.Builder
	calls    int
	argBytes int64
	nextID   int
	inflight int
	in       *engineIn

	finished bool
	ok       bool
	payload  string
	skipped  string // namespaces not bound
}

// warmEngine runs the engine once before the process is confined, so
// that what it reads from files on first use (the time zone's rules) is
// read while it can be.
func warmEngine() {
	vm, err := quickjs.NewVM()
	if err != nil {
		return
	}
	vm.Eval(`new Date(0).getTimezoneOffset()`, quickjs.EvalGlobal)
	vm.Close()
}

// runScript runs one script in this process (the engine's, see
// process.go) and returns what it reports to Run.
func runScript(s Script, funcs []Func, lim Limits, in *engineIn, out *engineOut) *doneMsg {
	c, err := compile(s)
	if err != nil {
		return doneWith(nil, err)
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return doneWith(nil, fmt.Errorf("code mode: starting the engine: %w", err))
	}
	runCtx, cancel := context.WithTimeout(context.Background(), lim.Wall)
	defer cancel()
	r := &run{vm: vm, funcs: funcs, lim: lim, ctx: runCtx, in: in, out: out}
	watchDone := make(chan struct{})
	watchExit := make(chan struct{})
	go r.watch(watchDone, watchExit)

	value, err := r.exec(c)

	// Stop the watcher, and only then close the engine (nothing else
	// touches it).
	close(watchDone)
	<-watchExit
	vm.Close()

	if err == nil && len(value)+r.console.Len() > lim.Output {
		value, err = nil, r.limitError(LimitOutput, fmt.Sprintf("the return value is %d bytes and the console output %d", len(value), r.console.Len()))
	}
	m := doneWith(value, err)
	m.Started = true
	m.Console = r.console.String()
	m.Skipped = r.skipped
	return m
}

// watch stops the engine when the wall time is up, and ends this process
// when a limit has interrupted the engine and it has not stopped within
// stuckGrace (a built-in that never looks at the interrupt). Interrupt is
// sticky only while Go is inside JavaScript, so it is repeated until the
// loop notices (the loop also checks between turns).
func (r *run) watch(done, exit chan struct{}) {
	defer close(exit)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	wall := r.ctx.Done()
	var wallAt time.Time
	for {
		select {
		case <-done:
			return
		case <-wall:
			wall = nil
			wallAt = time.Now()
			r.stop(stopWall)
		case now := <-tick.C:
			// Waiting for its calls, the engine reads Run's stop.
			if !wallAt.IsZero() && r.turnEnd.Load() != 0 {
				r.vm.Interrupt()
				if now.Sub(wallAt) > stuckGrace {
					r.abandon(LimitWall)
				}
			}
			if end := r.turnEnd.Load(); end != 0 && now.UnixNano() > end+int64(stuckGrace) {
				r.abandon(LimitCPU)
			}
		}
	}
}

// abandon reports that the engine went over limit and did not stop, and
// ends the process, which is the only way to stop a built-in mid-loop.
// What the script printed and made is the engine's goroutine's, which
// is still running: it is left out.
func (r *run) abandon(limit string) {
	r.out.send(fromEngine{Done: &doneMsg{Started: true, Ended: true,
		Limit: r.limitError(limit, "the engine was inside a built-in that does not stop for limits (such as an array method over a huge length), so its process was ended")}})
	os.Exit(0)
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
	funcs, err := json.Marshal(append([]Func{}, r.funcs...))
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
	r.skipped, _ = skipped.(string)

	for {
		err := r.turn(func() error {
			_, err := r.vm.ExecutePendingJobs()
			return err
		})
		if err != nil && !strings.HasPrefix(err.Error(), "quickjs: aborted draining") {
			return nil, r.engineError("running the script", err)
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
		comp, err := r.in.settle()
		if err != nil {
			// The wall limit struck while the script awaited its calls.
			r.reason.CompareAndSwap(stopNone, stopWall)
			return nil, r.stopError(nil)
		}
		r.inflight--
		err = r.turn(func() error {
			_, err := dispatch.Call(quickjs.UndefinedValue, "settle", comp.ID, comp.OK, comp.Payload)
			return err
		})
		if err != nil {
			return nil, r.engineError("settling a call", err)
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
		for _, f := range r.funcs {
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
	r.out.send(fromEngine{Call: &callMsg{ID: id, Tool: tool, Args: json.RawMessage(body)}})
	return id, nil
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
	r.turnEnd.Store(t.Add(left).UnixNano())
	err := f()
	r.turnEnd.Store(0)
	r.cpuUsed += time.Since(t)
	return err
}

// stopError turns why the engine stopped into the error Run returns; err
// is what the engine reported, if anything.
func (r *run) stopError(err error) error {
	switch r.reason.Load() {
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
