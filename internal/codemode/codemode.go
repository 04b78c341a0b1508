// Package codemode runs the scripts of code mode: the model sends one short
// TypeScript or JavaScript script to the run_script meta-tool, the script
// calls many of the hub's tools, and only its return value (and
// what it printed) goes back to the model.
//
// The script is the BODY of an async function: top-level await and return
// work, and what it returns is the result. Returning nothing gives null.
//
//	const issues = await github.list_issues({ repo: "a/b" });
//	const open = issues.filter((i) => i.state === "open");
//	await Promise.all(open.map((i) => tools["slack__post"]({ text: i.title })));
//	return open.length;
//
// Each tool is an async function taking one object of named arguments. It
// resolves to the tool's structured content when the tool gives one, else
// to its array of content blocks, and rejects with an Error whose name is
// "ToolError" and which carries .code, .message and .tool when the tool
// fails. Tools are reachable two ways, both bound by the caller (Env.Funcs):
// as a function of a namespace object per server (github.create_issue) and
// as tools["exact listed name"].
//
// Scripts run in QuickJS (modernc.org/quickjs, pure Go; docs/design.md, "Code mode", has the
// measurements that chose it), one fresh engine per script in a process of
// its own (this program started again, see process.go), with a hard memory
// cap, an interrupt for CPU, wall time and cancellation, the end of its
// process for a built-in that does not stop for the interrupt, and nothing
// of the host reachable: no file system, network, process, timers,
// performance clock, modules or Go objects. Date stays (tool results hold
// dates and scripts compute "a week ago"); it gives only the wall clock at
// millisecond resolution, which tells a script nothing the tools do not.
// Math.random stays.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Script is what the model sent.
type Script struct {
	// Source is the body of an async function (see the package doc).
	Source string
	// TypeScript: strip types before running. Plain JavaScript parses as
	// TypeScript too, so a caller that does not know may set it; it is a
	// field only because a few JavaScript expressions (a < b > c) parse
	// differently as TypeScript.
	TypeScript bool
}

// Func binds one tool into the script. The caller computes the names (the
// same ones it shows the model in the generated type declarations), so this
// package never has to agree with another one on how to turn a tool name
// into an identifier.
type Func struct {
	// Namespace is the global object the function hangs on (one per
	// server, e.g. "github"); empty to bind the tool only in tools[...].
	// A namespace that would hide a global of the engine (JSON, Math,
	// console, tools ...) is skipped with a warning on Env.Logger.
	Namespace string
	// Name is the function's name in Namespace, e.g. "create_issue".
	Name string
	// Tool is the name the tool is listed under: the key in tools[...]
	// and what Call receives.
	Tool string
}

// CallResult is the outcome of one tool call, as the caller got it.
type CallResult struct {
	// Structured is the tool's structured content, nil if none. When
	// present the script gets it (parsed) rather than Content.
	Structured json.RawMessage
	// Content is the array of content blocks.
	Content json.RawMessage
	// IsError reports a tool-level failure: the script's await throws.
	IsError bool
	// Code is the error code the script sees as err.code (for example a
	// JSON-RPC code); 0 for none.
	Code int
	// Message is the error text the script sees as err.message; when
	// empty, the text blocks of Content are used.
	Message string
}

// Env is how a script reaches the hub.
type Env struct {
	Funcs []Func
	// Call runs one tool. It runs on its own goroutine, up to
	// Limits.Concurrent at a time, and must return soon after ctx is
	// done: Run cancels ctx when the script ends, for whatever reason,
	// and waits for every Call to return before it does (so no call
	// outlives the run_script that made it). A non-nil error is thrown in
	// the script like a tool error, with .code from an ErrorCode() int
	// method if the error has one, else -32603.
	Call func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error)
	// Progress, if set, is called each time an inner call completes, with
	// the number completed so far: from that call's goroutine, one call
	// at a time, in order.
	Progress func(calls int, msg string)
	// Logger, if set, gets debug records of the run and warnings about
	// bindings that were skipped.
	Logger *slog.Logger
}

// Limits bound one script. A zero field takes the default (DefaultLimits).
// Going over any of them ends the script with a *LimitError naming it.
type Limits struct {
	// Wall is the whole run, waiting on tools included. Default 30s.
	Wall time.Duration
	// CPU is the time spent running JavaScript (summed over the engine's
	// turns; it is measured on the clock, so on a loaded host it counts
	// time the goroutine waited for a processor too). Default 10s.
	CPU time.Duration
	// Memory caps the engine's heap, enforced by its allocator: an
	// allocation over it fails with "out of memory" inside the script.
	// The JSON arguments the script passes to tools count too, as the hub
	// holds them while the calls run. Default 64 MiB.
	Memory int64
	// Calls is the number of inner tool calls. Default 100.
	Calls int
	// Concurrent is how many inner calls run at once; more wait their
	// turn (this one is a cap, not an error). Default 4.
	Concurrent int
	// Output caps the bytes of the return value's JSON plus the console
	// output. Default 1 MiB.
	Output int
}

// DefaultLimits are the limits a zero Limits field takes.
var DefaultLimits = Limits{
	Wall:       30 * time.Second,
	CPU:        10 * time.Second,
	Memory:     64 << 20,
	Calls:      100,
	Concurrent: 4,
	Output:     1 << 20,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.Wall > 0 {
		d.Wall = l.Wall
	}
	if l.CPU > 0 {
		d.CPU = l.CPU
	}
	if l.Memory > 0 {
		d.Memory = l.Memory
	}
	if l.Calls > 0 {
		d.Calls = l.Calls
	}
	if l.Concurrent > 0 {
		d.Concurrent = l.Concurrent
	}
	if l.Output > 0 {
		d.Output = l.Output
	}
	return d
}

// Result is what a script produced. Run returns one whenever the script
// started, also with an error, so the caller can show the console output
// that led up to a failure.
type Result struct {
	// Value is the return value as JSON; null when the script returned
	// nothing. Nil when the script failed.
	Value json.RawMessage
	// Console is what the script printed: one line per console call,
	// warn, error and debug prefixed with "[warn] " and so on.
	Console string
	// Calls is the number of inner tool calls the script made.
	Calls int
	// Duration is the wall time of the run.
	Duration time.Duration
}

// Limit names, the values of LimitError.Limit.
const (
	LimitWall       = "wall"
	LimitCPU        = "cpu"
	LimitMemory     = "memory"
	LimitCalls      = "calls"
	LimitOutput     = "output"
	LimitConcurrent = "concurrent" // never an error: calls wait their turn
)

// LimitError ends a script that went over one of its Limits.
type LimitError struct {
	// Limit is one of the Limit* names.
	Limit string
	// Max is the limit as set, in its unit: a duration for wall and cpu,
	// bytes for memory and output, a count for calls.
	Max string
	// Detail says what went over, when known.
	Detail string
}

func (e *LimitError) Error() string {
	s := fmt.Sprintf("script exceeded the %s limit (%s)", e.Limit, e.Max)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Kinds of ScriptError.
const (
	KindSyntax  = "syntax"  // the script does not parse
	KindRuntime = "runtime" // it threw, or awaited a tool that failed, and did not catch it
	KindResult  = "result"  // its return value is not JSON
	KindStalled = "stalled" // it awaits a promise nothing can settle
)

// ScriptError is the script's own failure.
type ScriptError struct {
	Kind string
	// Name is the JavaScript error's name: SyntaxError, TypeError,
	// ToolError (an uncaught tool failure) ...
	Name    string
	Message string
	// Line and Column locate the error in the script as sent (1-based);
	// 0 when unknown.
	Line, Column int
	// Tool and Code are set for an uncaught ToolError.
	Tool string
	Code int
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	switch {
	case e.Kind == KindSyntax:
		b.WriteString("syntax error")
	case e.Name != "":
		b.WriteString(e.Name)
	default:
		b.WriteString("error")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " at line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ", column %d", e.Column)
		}
	}
	if e.Tool != "" {
		fmt.Fprintf(&b, " (tool %q", e.Tool)
		if e.Code != 0 {
			fmt.Fprintf(&b, ", code %d", e.Code)
		}
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Message)
	return b.String()
}

// ErrCancelled wraps the context's cause when the caller cancelled Run.
var ErrCancelled = errors.New("script cancelled")
