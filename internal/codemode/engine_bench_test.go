package codemode

// Engine comparison benchmarks (see docs/design.md, "Code mode"). They measure the two
// candidate engines directly, without this package's machinery, so the
// figures that chose the engine can be re-run:
//
//	go test -run '^$' -bench BenchmarkEngine -benchmem ./internal/codemode/

import (
	"strings"
	"testing"

	"github.com/dop251/goja"
	"modernc.org/quickjs"
)

// BenchmarkEngineStartup: a fresh runtime plus one trivial script, the fixed
// cost every run_script call pays (one runtime per script, for isolation).
func BenchmarkEngineStartupGoja(b *testing.B) {
	for b.Loop() {
		vm := goja.New()
		if _, err := vm.RunString(`(function(){ return {a: 1+1} })()`); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEngineStartupQuickJS(b *testing.B) {
	for b.Loop() {
		vm, err := quickjs.NewVM()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := vm.Eval(`(function(){ return {a: 1+1} })()`, quickjs.EvalGlobal); err != nil {
			b.Fatal(err)
		}
		vm.Close()
	}
}

const innerCalls = 1000

// BenchmarkEngineCall: per inner call, an async Go-backed function awaited
// from script; ns/op divided by innerCalls is the per-call overhead over a
// direct Go call (which costs a few ns).
func BenchmarkEngineCallGoja(b *testing.B) {
	vm := goja.New()
	vm.Set("call", func(name string, args string) *goja.Promise {
		p, resolve, _ := vm.NewPromise()
		resolve(args)
		return p
	})
	prog := goja.MustCompile("", `(async function(){ for (let i=0;i<1000;i++) { await call("t", JSON.stringify({i})) } })()`, false)
	for b.Loop() {
		if _, err := vm.RunProgram(prog); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEngineCallQuickJS(b *testing.B) {
	vm, err := quickjs.NewVM()
	if err != nil {
		b.Fatal(err)
	}
	defer vm.Close()
	// The shape this package uses: the Go function starts the call and
	// returns an id, JS parks the resolver, Go settles it from the loop.
	var queue []int
	if err := vm.RegisterHostFunc("start", func(args []any) (any, error) {
		queue = append(queue, len(queue))
		return len(queue) - 1, nil
	}); err != nil {
		b.Fatal(err)
	}
	settle, err := vm.EvalValue(`
		const pending = new Map();
		globalThis.call = (name, args) => new Promise((res, rej) => pending.set(start(name, args), res));
		(id, json) => { const r = pending.get(id); pending.delete(id); r(JSON.parse(json)); }`, quickjs.EvalGlobal)
	if err != nil {
		b.Fatal(err)
	}
	defer settle.Free()
	for b.Loop() {
		queue = queue[:0]
		if _, err := vm.Eval(`(async function(){ for (let i=0;i<1000;i++) { await call("t", JSON.stringify({i})) } })(); undefined`, quickjs.EvalGlobal); err != nil {
			b.Fatal(err)
		}
		for done := 0; done < innerCalls; done++ {
			if _, err := settle.Call(quickjs.UndefinedValue, queue[done], `{"i":1}`); err != nil {
				b.Fatal(err)
			}
			if _, err := vm.ExecutePendingJobs(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestEngineMemoryCap records how each engine treats a huge allocation.
func TestEngineMemoryCapQuickJS(t *testing.T) {
	vm, err := quickjs.NewVM()
	if err != nil {
		t.Fatal(err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(64 << 20)
	for _, src := range []string{
		`'x'.repeat(1e9).length`,
		`new Array(1e9).fill(0).length`,
		`let s='x'; for(;;) s+=s`,
		`let a=[]; for(;;) a.push({a:[1,2,3]})`,
	} {
		_, err := vm.Eval(src, quickjs.EvalGlobal)
		t.Logf("%s -> %v", src, err)
		if err == nil || !strings.Contains(err.Error(), "out of memory") && !strings.Contains(err.Error(), "too long") {
			t.Errorf("%s: %v", src, err)
		}
	}
}

// BenchmarkEngineStartupPackage: the whole of Run for a trivial script:
// the engine, the prelude, TypeScript stripping and JSON of the result.
func BenchmarkEngineStartupPackage(b *testing.B) {
	env := Env{Funcs: []Func{{Namespace: "gh", Name: "x", Tool: "gh__x"}}, Call: echoCall}
	for b.Loop() {
		if _, err := Run(b.Context(), Script{Source: `return {a: 1+1}`}, env, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunCalls: a script awaiting 100 tool calls one after another,
// each a round trip between the engine's process and the hub's.
func BenchmarkRunCalls(b *testing.B) {
	env := Env{Funcs: []Func{{Namespace: "gh", Name: "x", Tool: "gh__x"}}, Call: echoCall}
	for b.Loop() {
		if _, err := Run(b.Context(), Script{Source: `for (let i = 0; i < 100; i++) await gh.x({i}); return 1`}, env, Limits{Calls: 100}); err != nil {
			b.Fatal(err)
		}
	}
}
