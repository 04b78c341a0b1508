package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	engineStarted = engines.add
	goleak.VerifyTestMain(engines.check(m))
}

// engines are the engine processes the tests started: each must have
// ended, and been waited for, by the time its Run returned.
var engines processes

type processes struct {
	mu sync.Mutex
	ps []*os.Process
}

func (p *processes) add(proc *os.Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ps = append(p.ps, proc)
}

// check runs the tests, then fails them for any engine process left.
func (p *processes) check(m *testing.M) goleak.TestingM { return checked{m, p} }

type checked struct {
	m *testing.M
	p *processes
}

func (c checked) Run() int {
	code := c.m.Run()
	dropIdle()
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	for _, proc := range c.p.ps {
		if err := proc.Signal(syscall.Signal(0)); !errors.Is(err, os.ErrProcessDone) {
			fmt.Fprintf(os.Stderr, "engine process %d was left running or unwaited (signal 0: %v)\n", proc.Pid, err)
			code = 1
		}
	}
	return code
}

// Generous limits: tests that do not test a limit must not trip one on a
// loaded two-core machine (the race detector slows QuickJS a lot).
var roomy = Limits{Wall: 60 * time.Second, CPU: 30 * time.Second}

func echoCall(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
	return CallResult{Structured: args}, nil
}

var testFuncs = []Func{
	{Namespace: "github", Name: "create_issue", Tool: "github__create_issue"},
	{Namespace: "github", Name: "list_issues", Tool: "github__list_issues"},
	{Namespace: "slack", Name: "post", Tool: "slack.post-message"},
	{Tool: "odd name/with spaces"},
}

func runTest(t *testing.T, src string, env Env, lim Limits) (*Result, error) {
	t.Helper()
	if env.Funcs == nil {
		env.Funcs = testFuncs
	}
	if env.Call == nil {
		env.Call = echoCall
	}
	return Run(t.Context(), Script{Source: src, TypeScript: true}, env, lim)
}

func mustRun(t *testing.T, src string, env Env, lim Limits) *Result {
	t.Helper()
	res, err := runTest(t, src, env, lim)
	if err != nil {
		t.Fatalf("Run(%q): %v", src, err)
	}
	return res
}

func TestHappyPaths(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	env := Env{Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
		mu.Lock()
		seen = append(seen, tool+" "+string(args))
		mu.Unlock()
		switch tool {
		case "github__list_issues":
			return CallResult{Content: json.RawMessage(`[{"type":"text","text":"two issues"}]`)}, nil
		case "slack.post-message":
			return CallResult{Structured: json.RawMessage(`{"ok":true}`), Content: json.RawMessage(`[{"type":"text","text":"ignored"}]`)}, nil
		}
		return CallResult{Structured: args}, nil
	}}
	tests := []struct{ name, src, want string }{
		{"return value", `return {a: 1 + 1, b: [true, null, "x"]}`, `{"a":2,"b":[true,null,"x"]}`},
		{"undefined is null", `const x = 1`, `null`},
		{"explicit undefined", `return undefined`, `null`},
		{"typescript", `interface I { n: number }; const i: I = { n: 3 }; return i.n as number`, `3`},
		{"namespace structured", `return await github.create_issue({title: "t"})`, `{"title":"t"}`},
		{"content blocks when no structured", `return await github.list_issues({})`, `[{"type":"text","text":"two issues"}]`},
		{"structured wins over content", `return await slack.post({text: "hi"})`, `{"ok":true}`},
		{"tools by listed name", `return await tools["odd name/with spaces"]({k: 1})`, `{"k":1}`},
		{"tools[] has namespaced tools too", `return await tools["github__create_issue"]({})`, `{}`},
		{"no args means {}", `return await github.create_issue()`, `{}`},
		{"Promise.all", `return await Promise.all([1,2,3].map(i => github.create_issue({i})))`, `[{"i":1},{"i":2},{"i":3}]`},
		{"Date and Math.random work", `return typeof Date.now() === "number" && Math.random() < 1`, `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, tt.src, env, roomy)
			if string(res.Value) != tt.want {
				t.Errorf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestConsole(t *testing.T) {
	res := mustRun(t, `console.log("a", 1, {b: 2}); console.info("i"); console.warn("w"); console.error("e"); console.debug("d"); return 0`, Env{}, roomy)
	want := "a 1 {\"b\":2}\ni\n[warn] w\n[error] e\n[debug] d\n"
	if res.Console != want {
		t.Errorf("console = %q, want %q", res.Console, want)
	}
}

func TestToolErrors(t *testing.T) {
	env := Env{Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
		switch tool {
		case "github__create_issue":
			return CallResult{IsError: true, Code: 404, Message: "repo not found"}, nil
		case "github__list_issues":
			return CallResult{IsError: true, Content: json.RawMessage(`[{"type":"text","text":"rate limited"}]`)}, nil
		}
		return CallResult{}, errors.New("server down")
	}}
	res := mustRun(t, `
		const out = [];
		for (const f of [github.create_issue, github.list_issues, slack.post]) {
			try { await f({}) } catch (e) { out.push([e.name, e.message, e.code, e.tool, e instanceof Error]) }
		}
		return out`, env, roomy)
	want := `[["ToolError","repo not found",404,"github__create_issue",true],["ToolError","rate limited",0,"github__list_issues",true],["ToolError","server down",-32603,"slack.post-message",true]]`
	if string(res.Value) != want {
		t.Errorf("value = %s\nwant    %s", res.Value, want)
	}

	// Uncaught, it ends the script with a ScriptError that names the tool.
	_, err := runTest(t, "\nawait github.create_issue({})", env, roomy)
	var se *ScriptError
	if !errors.As(err, &se) || se.Name != "ToolError" || se.Tool != "github__create_issue" || se.Code != 404 || se.Line != 2 {
		t.Errorf("err = %#v", err)
	}
}

func TestConcurrencyCapped(t *testing.T) {
	const limit, total = 3, 10
	var inflight, maxInflight atomic.Int32
	started := make(chan struct{})
	release := make(chan struct{})
	env := Env{Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
		n := inflight.Add(1)
		for {
			m := maxInflight.Load()
			if n <= m || maxInflight.CompareAndSwap(m, n) {
				break
			}
		}
		started <- struct{}{}
		<-release
		inflight.Add(-1)
		return CallResult{Structured: args}, nil
	}}
	var progress []int
	env.Progress = func(calls int, msg string) { progress = append(progress, calls) }
	type out struct {
		res *Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := runTest(t, fmt.Sprintf(`return (await Promise.all(Array.from({length: %d}, (_, i) => github.create_issue({i})))).length`, total), env, Limits{Wall: 60 * time.Second, CPU: 30 * time.Second, Concurrent: limit})
		done <- out{res, err}
	}()
	// Let `limit` calls start before releasing any: the cap is reached.
	for range limit {
		<-started
	}
	for i := range total {
		release <- struct{}{}
		if i+limit < total {
			<-started
		}
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if string(o.res.Value) != fmt.Sprint(total) || o.res.Calls != total {
		t.Errorf("value %s, calls %d", o.res.Value, o.res.Calls)
	}
	if got := maxInflight.Load(); got != limit {
		t.Errorf("max in flight = %d, want %d", got, limit)
	}
	if len(progress) != total || progress[total-1] != total {
		t.Errorf("progress = %v", progress)
	}
}

func TestCancelMidCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	innerErr := make(chan error, 1)
	env := Env{Funcs: testFuncs, Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
		close(started)
		<-ctx.Done()
		innerErr <- ctx.Err()
		return CallResult{}, ctx.Err()
	}}
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, Script{Source: `await github.create_issue({}); return 1`}, env, roomy)
		done <- err
	}()
	<-started
	cancel()
	err := <-done
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want ErrCancelled wrapping context.Canceled", err)
	}
	if e := <-innerErr; !errors.Is(e, context.Canceled) {
		t.Errorf("inner ctx err = %v", e)
	}
}

// TestCancelDuringLoop: cancelling ends a script that is looping, in
// JavaScript or inside a built-in that never looks at the interrupt.
func TestCancelDuringLoop(t *testing.T) {
	for _, loop := range []string{`for(;;){}`, stuckBuiltin} {
		t.Run(loop, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			started := make(chan struct{})
			env := Env{Funcs: testFuncs, Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
				close(started)
				return CallResult{Structured: json.RawMessage(`1`)}, nil
			}}
			done := make(chan error, 1)
			go func() {
				_, err := Run(ctx, Script{Source: `await github.create_issue({}); ` + loop}, env, Limits{Wall: time.Hour, CPU: time.Hour})
				done <- err
			}()
			<-started
			cancel()
			if err := <-done; !errors.Is(err, ErrCancelled) {
				t.Errorf("err = %v, want ErrCancelled", err)
			}
		})
	}
}

// stuckBuiltin loops inside a built-in for days without running a line
// of JavaScript, so without looking at the engine's interrupt.
const stuckBuiltin = `return Array.prototype.includes.call({length: 2 ** 53 - 1}, 1)`

// TestStuckBuiltinWall: such a built-in is ended with its process at the
// wall limit too (the CPU limit is TestEscape's).
func TestStuckBuiltinWall(t *testing.T) {
	_, err := runTest(t, stuckBuiltin, Env{}, Limits{Wall: 300 * time.Millisecond, CPU: time.Hour})
	wantLimit(t, err, LimitWall)
	if !strings.Contains(err.Error(), "built-in") {
		t.Errorf("err = %v, want it to say a built-in did not stop", err)
	}
}

// TestEngineProcess: the engine's process refuses to run without a start
// message, and says so; it gets the hub's time zone and nothing else of
// its environment, and it is confined to computing.
func TestEngineProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, engineArg)
	cmd.Env = []string{engineEnv + "=1"}
	cmd.Stdin = strings.NewReader("not json\n")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "start message") {
		t.Errorf("engine without a start message: err %v, output %q", err, out)
	}
	if runtime.GOOS != "linux" {
		return // the environment check reads /proc
	}
	t.Setenv("JUNCTION_TEST_SECRET", "s3cret")
	t.Setenv("TZ", "Asia/Kolkata")
	var environ, status []byte
	env := Env{Funcs: testFuncs, Call: func(context.Context, string, json.RawMessage) (CallResult, error) {
		engines.mu.Lock()
		pid := engines.ps[len(engines.ps)-1].Pid
		engines.mu.Unlock()
		var rerr error
		environ, rerr = os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if rerr == nil {
			status, rerr = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		}
		return CallResult{Structured: json.RawMessage(`1`)}, rerr
	}}
	res := mustRun(t, `await github.create_issue({}); return new Date(0).getTimezoneOffset()`, env, roomy)
	if !strings.Contains(string(environ), engineEnv+"=1") || strings.Contains(string(environ), "s3cret") {
		t.Errorf("the engine's environment is %q: want %s=1 and nothing of the hub's", environ, engineEnv)
	}
	// Confined (sandbox.Compute): a seccomp filter, and no new privileges.
	if !regexp.MustCompile(`(?m)^Seccomp:\s+2$`).Match(status) || !regexp.MustCompile(`(?m)^NoNewPrivs:\s+1$`).Match(status) {
		t.Errorf("the engine's process is not confined; its status:\n%s", status)
	}
	if string(res.Value) != "-330" {
		t.Errorf("the time zone offset in a script is %s minutes, want the hub's TZ (Asia/Kolkata, -330)", res.Value)
	}
}

func wantLimit(t *testing.T, err error, limits ...string) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) {
		t.Fatalf("err = %v (%T), want *LimitError %v", err, err, limits)
	}
	for _, l := range limits {
		if le.Limit == l {
			if !strings.Contains(err.Error(), l) {
				t.Errorf("message %q does not name the limit %q", err, l)
			}
			return
		}
	}
	t.Fatalf("limit = %q (%v), want one of %v", le.Limit, err, limits)
}

func TestLimits(t *testing.T) {
	blocked := func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
		<-ctx.Done()
		return CallResult{}, ctx.Err()
	}
	tests := []struct {
		name  string
		src   string
		env   Env
		lim   Limits
		limit string
	}{
		{"wall while awaiting a tool", `await github.create_issue({})`, Env{Call: blocked}, Limits{Wall: 200 * time.Millisecond}, LimitWall},
		{"cpu", `for(;;){}`, Env{}, Limits{CPU: 100 * time.Millisecond, Wall: 60 * time.Second}, LimitCPU},
		{"memory", `return 'x'.repeat(1e9).length`, Env{}, roomy, LimitMemory},
		{"memory, smaller cap", `const a = []; for (;;) a.push('y'.repeat(1000) + a.length)`, Env{}, Limits{Memory: 8 << 20, CPU: 30 * time.Second, Wall: 60 * time.Second}, LimitMemory},
		{"memory of tool arguments", `const big = 'z'.repeat(1 << 20); for (let i = 0; i < 20; i++) await github.create_issue({big})`, Env{}, Limits{Memory: 8 << 20, Calls: 100, CPU: 30 * time.Second, Wall: 60 * time.Second}, LimitMemory},
		{"calls", `for (let i = 0; i < 10; i++) await github.create_issue({i})`, Env{}, Limits{Calls: 5, CPU: 30 * time.Second, Wall: 60 * time.Second}, LimitCalls},
		{"calls not catchable", `for (let i = 0; i < 10; i++) try { await github.create_issue({i}) } catch (e) {} return 1`, Env{}, Limits{Calls: 5, CPU: 30 * time.Second, Wall: 60 * time.Second}, LimitCalls},
		{"output: return value", `return 'x'.repeat(2 << 20)`, Env{}, roomy, LimitOutput},
		{"output: console", `for (;;) console.log('flood '.repeat(100))`, Env{}, roomy, LimitOutput},
		{"output: both together", `console.log('a'.repeat(600 << 10)); return 'b'.repeat(600 << 10)`, Env{}, roomy, LimitOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := runTest(t, tt.src, tt.env, tt.lim)
			wantLimit(t, err, tt.limit)
			if res != nil && res.Value != nil {
				t.Errorf("value %s with a limit error", res.Value)
			}
			if tt.limit == LimitOutput && res != nil && len(res.Console) > DefaultLimits.Output {
				t.Errorf("console %d bytes, over the limit", len(res.Console))
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		kind     string
		line     int
		contains string
	}{
		{"syntax error", "const a = 1;\nconst b = ;\n", KindSyntax, 2, "Unexpected"},
		{"syntax error in typescript", "let x: = 3", KindSyntax, 1, ""},
		{"type error", "const o = null;\n\no.field", KindRuntime, 3, "field"},
		{"type error in a function", "function f(x) {\n  return x.y.z\n}\nreturn f({})", KindRuntime, 2, ""},
		{"unknown tool in namespace", `await github.delete_repo({})`, KindRuntime, 1, `"create_issue", "list_issues"`},
		{"unknown listed name", `await tools["nope"]({})`, KindRuntime, 1, `tools["exact listed name"]`},
		{"unknown namespace", `await gitlab.create_issue({})`, KindRuntime, 1, "the tool namespaces are github, slack"},
		{"arguments not an object", `await github.create_issue("x")`, KindRuntime, 1, "object of named arguments"},
		{"arguments not JSON", `await github.create_issue({n: 1n})`, KindRuntime, 1, "not JSON"},
		{"BigInt result", `return {n: 10n}`, KindResult, 0, "BigInt"},
		{"cyclic result", `const a: any = {}; a.self = a; return a`, KindResult, 0, "cycle"},
		{"function result", `return {f() {}}`, KindResult, 0, "function"},
		{"never settles", `await new Promise(() => {})`, KindStalled, 0, "will ever settle"},
		{"throws a string", `throw "boom"`, KindRuntime, 0, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runTest(t, tt.src, Env{}, roomy)
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v (%T), want *ScriptError", err, err)
			}
			if se.Kind != tt.kind || (tt.line != 0 && se.Line != tt.line) || !strings.Contains(se.Error(), tt.contains) {
				t.Errorf("err = %v (kind %s line %d), want kind %s line %d containing %q", err, se.Kind, se.Line, tt.kind, tt.line, tt.contains)
			}
		})
	}
}

// TestNoToolsHint: in a view without tools, an unknown name says so
// rather than listing no namespaces.
func TestNoToolsHint(t *testing.T) {
	_, err := runTest(t, `await github.create_issue({})`, Env{Funcs: []Func{}}, roomy)
	if err == nil || !strings.Contains(err.Error(), "this view has no tools for a script to call") || strings.Contains(err.Error(), "namespaces are") {
		t.Errorf("err = %v, want the hint that there are no tools", err)
	}
}

// TestEscape is the hostile-script suite: each must end within the limits
// with the expected outcome, and leave the hub (this process) unharmed.
func TestEscape(t *testing.T) {
	// Scripts that spin run under a short CPU limit; the rest get a long
	// one, so that on a loaded machine (or under -race) they reach the
	// outcome they test rather than the CPU limit.
	spin := Limits{CPU: 300 * time.Millisecond, Wall: 60 * time.Second, Memory: 16 << 20}
	roomyMem := Limits{CPU: 60 * time.Second, Wall: 120 * time.Second, Memory: 16 << 20}
	type check func(t *testing.T, res *Result, err error)
	limit := func(limits ...string) check {
		return func(t *testing.T, _ *Result, err error) { wantLimit(t, err, limits...) }
	}
	value := func(want string) check {
		return func(t *testing.T, res *Result, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Value) != want {
				t.Errorf("value = %s, want %s", res.Value, want)
			}
		}
	}
	scriptErr := func(contains string) check {
		return func(t *testing.T, _ *Result, err error) {
			var se *ScriptError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), contains) {
				t.Errorf("err = %v, want a ScriptError containing %q", err, contains)
			}
		}
	}
	anyError := func(t *testing.T, _ *Result, err error) {
		if err == nil {
			t.Error("no error")
		}
	}
	spins := map[string]bool{
		"infinite loop": true, "catching the interrupt": true, "self-feeding microtasks": true,
		"recursion after catching stack overflow": true, "catching out of memory": true,
		"array join bomb": true, "catastrophic regexp": true, "toJSON loops": true,
		"array method over a huge length": true, "set of a huge sparse array": true,
		"proxy lying about its length": true, "huge length behind a getter": true,
		"proxy result loops": true, "thrown getter loops": true,
	}
	tests := []struct {
		name string
		src  string
		want check
	}{
		{"infinite loop", `for (;;) {}`, limit(LimitCPU)},
		{"catching the interrupt", `for (;;) { try { for (;;) {} } catch (e) {} finally { continue } }`, limit(LimitCPU)},
		{"self-feeding microtasks", `for (;;) await null`, limit(LimitCPU)},
		{"promise job flood", `const f = () => Promise.resolve().then(f); f(); f(); await new Promise(() => {})`, anyError},
		{"deep recursion", `function r(n) { return r(n + 1) + 1 } return r(0)`, scriptErr("stack overflow")},
		{"recursion after catching stack overflow", `function r() { try { return r() } catch (e) { return r() } } return r()`, limit(LimitCPU)},
		{"huge repeat", `return 'x'.repeat(1e9).length`, limit(LimitMemory)},
		{"huge array fill", `return new Array(1e9).fill(0).length`, limit(LimitMemory)},
		{"huge typed array", `return new Uint8Array(1e9).length`, limit(LimitMemory)},
		{"string doubling", `let s = 'x'; for (;;) s += s`, limit(LimitMemory)},
		{"string doubling flattened", `let s = 'x'; for (;;) { s += s; s.charCodeAt(s.length - 1); s = s.split('').join('') }`, limit(LimitMemory)},
		{"object flood", `const a = []; for (;;) a.push({a: [1, 2, 3]})`, limit(LimitMemory)},
		{"catching out of memory", `const a = []; for (;;) { try { a.push(new Array(1e5).fill(1)) } catch (e) {} }`, limit(LimitMemory, LimitCPU)},
		{"array join bomb", `return new Array(1e7).join('abcdefgh').length`, limit(LimitMemory, LimitCPU)},
		{"deeply nested result", `let a: any = []; for (let i = 0; i < 1e6; i++) a = [a]; return a`, anyError},
		{"catastrophic regexp", `return /(a+)+$/.test('a'.repeat(40) + 'b')`, limit(LimitCPU)},
		// Built-ins that loop over a length without running JavaScript do
		// not look at the interrupt: the engine's process is ended.
		{"array method over a huge length", stuckBuiltin, limit(LimitCPU)},
		{"set of a huge sparse array", `return new Set(new Array(2 ** 32 - 1)).size`, limit(LimitCPU)},
		{"proxy lying about its length", `return Array.prototype.indexOf.call(new Proxy([], {get: (t, k) => k === 'length' ? 2 ** 53 - 1 : undefined}), 1)`, limit(LimitCPU)},
		{"huge length behind a getter", `return Array.prototype.lastIndexOf.call({get length() { return 2 ** 53 - 1 }}, 1)`, limit(LimitCPU)},
		{"thousands of pending promises", `const ps = []; for (let i = 0; i < 10000; i++) ps.push(new Promise(() => {})); await Promise.race(ps)`, scriptErr("will ever settle")},
		{"a million pending promises", `const ps = []; for (let i = 0; i < 1e6; i++) ps.push(new Promise(() => {})); await Promise.race(ps)`, limit(LimitMemory)},
		{"breaking out of the function wrapper", "}); (async function () {", func(*testing.T, *Result, error) {}},
		{"breaking out and running at top level", "}); globalThis.x = 1; (async function () { return 2", func(t *testing.T, res *Result, err error) {
			// Harmless: top-level code has the same powers as the body.
			if err == nil && string(res.Value) != "2" {
				t.Errorf("value %s", res.Value)
			}
		}},
		{"thousands of tool calls", `await Promise.all(Array.from({length: 5000}, () => github.create_issue({})))`, limit(LimitCalls)},
		{"console flood", `for (;;) console.error('x'.repeat(1000))`, limit(LimitOutput)},
		{"toJSON loops", `return {toJSON() { for (;;) {} }}`, limit(LimitCPU)},
		{"proxy result loops", `return new Proxy({}, {ownKeys() { for (;;) {} }})`, limit(LimitCPU)},
		{"thrown getter loops", `throw {get message() { for (;;) {} }}`, limit(LimitCPU)},
		{"throw a symbol", `throw Symbol('s')`, scriptErr("Symbol")},
		{"no host functions left", `return [typeof __cm_hostCall, typeof __cm_hostLog, typeof __cm_hostDone, Object.getOwnPropertyNames(globalThis).filter(n => n.startsWith('__')).length]`, value(`["undefined","undefined","undefined",0]`)},
		{"no host APIs", `return ['require', 'process', 'std', 'os', 'fetch', 'XMLHttpRequest', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'performance', 'print', 'scriptArgs', 'Deno', 'Bun', 'SharedArrayBuffer', 'Atomics', 'WebAssembly', 'importScripts'].filter(n => typeof (globalThis as any)[n] !== 'undefined')`, value(`[]`)},
		{"Function constructor reaches only the sandbox", `return Function('return Object.getOwnPropertyNames(this).filter(n => n.startsWith("__")).length')()`, value(`0`)},
		{"constructor chain of a tool", `return github.create_issue.constructor('return typeof __cm_hostCall')()`, value(`"undefined"`)},
		{"eval", `return eval('typeof __cm_hostDone')`, value(`"undefined"`)},
		{"dynamic import", `await import('os')`, anyError},
		{"tool functions hide Go", `const f = github.create_issue as any; return [f.length, Object.getOwnPropertyNames(f).sort().join(), typeof f.call, Object.keys(github).sort().join()]`, value(`[1,"length,name,prototype","function","create_issue,list_issues"]`)},
		{"overriding intrinsics only hurts itself", `JSON.stringify = () => 'evil'; JSON.parse = () => ({evil: true}); Map.prototype.get = () => undefined; Promise.prototype.then = function () { return this }; return await github.create_issue({ok: 1})`, func(t *testing.T, res *Result, err error) {
			// Either outcome is fine as long as it ends: the script broke only itself.
			_ = res
			_ = err
		}},
		{"Atomics.wait cannot block", `const I = Int32Array; return typeof Atomics`, value(`"undefined"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "recursion after catching stack overflow" && raceEnabled {
				t.Skip("unwinding an interrupt through thousands of catching frames takes minutes under -race; scripts/test runs this case without it")
			}
			lim := roomyMem
			if spins[tt.name] {
				lim = spin
			}
			res, err := runTest(t, tt.src, Env{}, lim)
			tt.want(t, res, err)
		})
	}
}

// TestEscapePrototypePollution: what one script does to the intrinsics
// does not reach the next (a fresh engine per script) nor the host.
func TestEscapePrototypePollution(t *testing.T) {
	mustRun(t, `
		Object.prototype.polluted = 'yes';
		Array.prototype.map = () => 'evil';
		(globalThis as any).leftover = 1;
		Object.defineProperty(Object.prototype, 'toJSON', {value: () => 'hijacked', configurable: true});
		return 1`, Env{}, roomy)
	res := mustRun(t, `return [({} as any).polluted, [1].map(x => x + 1), typeof (globalThis as any).leftover, {a: 1}]`, Env{}, roomy)
	if want := `[null,[2],"undefined",{"a":1}]`; string(res.Value) != want {
		t.Errorf("value = %s, want %s", res.Value, want)
	}
	// A result built from a polluted prototype is still plain JSON to Go.
	res = mustRun(t, `Object.prototype.toJSON = function () { return {hijacked: true} }; return {a: 1}`, Env{}, roomy)
	var v any
	if err := json.Unmarshal(res.Value, &v); err != nil {
		t.Errorf("value %s: %v", res.Value, err)
	}
}

// FuzzRun: random script text never panics and always ends, with a value
// or one of the package's errors.
func FuzzRun(f *testing.F) {
	for _, s := range []string{
		`return 1`,
		`await github.create_issue({a: 1})`,
		`for(;;){}`,
		`throw new Error("x")`,
		`return [1, {a: "b"}, null]`,
		`let x: number = 1; return x as any`,
		`})`,
		`console.log(1); return tools["odd name/with spaces"]()`,
	} {
		f.Add(s)
	}
	lim := Limits{CPU: 50 * time.Millisecond, Wall: 5 * time.Second, Memory: 8 << 20, Calls: 10, Output: 64 << 10}
	env := Env{Funcs: testFuncs, Call: echoCall}
	f.Fuzz(func(t *testing.T, src string) {
		res, err := Run(t.Context(), Script{Source: src, TypeScript: true}, env, lim)
		var se *ScriptError
		var le *LimitError
		switch {
		case err == nil:
			if !json.Valid(res.Value) {
				t.Fatalf("invalid JSON value %q", res.Value)
			}
		case errors.As(err, &se), errors.As(err, &le):
		default:
			t.Fatalf("unexpected error %T: %v", err, err)
		}
		if res != nil && len(res.Value)+len(res.Console) > lim.Output {
			t.Fatalf("output %d bytes over the limit", len(res.Value)+len(res.Console))
		}
	})
}
