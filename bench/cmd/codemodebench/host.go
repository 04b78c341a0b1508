package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// obj is a JSON object: a tool's arguments.
type obj = map[string]any

// A call is one tools/call of the direct variant.
type call struct {
	tool string // the name the hub lists (server__tool)
	args obj
}

// A host plays the host and the model of the direct variant: it makes
// tools/call requests one round at a time and keeps everything that
// enters the model's context. The task's Go code does what the model
// would do with the results (parse, filter, decide the next calls).
type host struct {
	ctx    context.Context
	hub    *hub
	rounds int             // model turns that made tool calls
	calls  int             // tool calls
	used   map[string]bool // tools called (their definitions enter the context)
	pieces [][]byte        // every call's {name, arguments} and every full result, in order
	wall   time.Duration   // time spent in rounds (the model's own time is not counted)
}

func newHost(ctx context.Context, h *hub) *host {
	return &host{ctx: ctx, hub: h, used: map[string]bool{}}
}

// round is one model turn: the calls, issued at once (a host may run
// them in parallel, as a model may emit several independent calls in one
// turn), and all their full results. A tool error fails the task.
func (h *host) round(calls ...call) ([]*mcp.CallToolResult, error) {
	h.rounds++
	h.calls += len(calls)
	start := time.Now()
	results := make([]*mcp.CallToolResult, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.hub.cs.CallTool(h.ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err == nil {
				err = toolError(c.tool, res)
			}
			results[i], errs[i] = res, err
		}()
	}
	wg.Wait()
	h.wall += time.Since(start)
	for i, c := range calls {
		if errs[i] != nil {
			return nil, fmt.Errorf("round %d, %s: %w", h.rounds, c.tool, errs[i])
		}
		h.used[c.tool] = true
		h.pieces = append(h.pieces, callBytes(c.tool, c.args), resultBytes(results[i]))
	}
	return results, nil
}

// one is a round of a single call, returning its result.
func (h *host) one(tool string, args obj) (*mcp.CallToolResult, error) {
	res, err := h.round(call{tool, args})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// texts is a round of calls, returning the text of each result.
func (h *host) texts(calls ...call) ([]string, error) {
	res, err := h.round(calls...)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = textOf(r)
	}
	return out, nil
}

// usedNames returns the tools called, sorted.
func (h *host) usedNames() []string {
	var names []string
	for n := range h.used {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// context is what entered the model's context in the direct variant:
// the definitions of the tools used, then every call and result.
func (h *host) context() [][]byte {
	var out [][]byte
	for _, n := range h.usedNames() {
		out = append(out, h.hub.defs[n])
	}
	return append(out, h.pieces...)
}

// scriptTool is the name of code mode's meta-tool.
const scriptTool = "run_script"

// A scriptRun is the code-mode variant: one run_script call.
type scriptRun struct {
	value      json.RawMessage
	calls      int      // inner calls the script made
	namespaces []string // namespaces the script uses (their declarations enter the context)
	context    [][]byte // declarations, the run_script definition, the call, the result
	wall       time.Duration
}

// runScript calls run_script with script and keeps what enters the
// model's context: the TypeScript declarations of the namespaces the
// script names, the run_script definition, the call and its full result.
func runScript(ctx context.Context, h *hub, script string, namespaces []string) (*scriptRun, error) {
	args := obj{"script": script}
	start := time.Now()
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: scriptTool, Arguments: args})
	wall := time.Since(start)
	if err != nil {
		return nil, err
	}
	if err := toolError(scriptTool, res); err != nil {
		return nil, err
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, err
	}
	var out struct {
		Value json.RawMessage `json:"value"`
		Calls int             `json:"calls"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("run_script structuredContent %s: %w", b, err)
	}
	r := &scriptRun{value: out.Value, calls: out.Calls, wall: wall}
	for _, ns := range namespaces {
		if usesNamespace(script, ns) {
			r.namespaces = append(r.namespaces, ns)
			r.context = append(r.context, h.decl[ns])
		}
	}
	r.context = append(r.context, h.defs[scriptTool], callBytes(scriptTool, args), resultBytes(res))
	return r, nil
}

// usesNamespace reports whether script calls a function of namespace ns,
// as ns.fn(...) or tools["ns__fn"](...).
func usesNamespace(script, ns string) bool {
	re := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(ns) + `\.\w|tools\[["']` + regexp.QuoteMeta(ns) + `__`)
	return re.MatchString(script)
}

// sameJSON reports whether two JSON values are equal (object key order
// and number spelling aside).
func sameJSON(a, b []byte) (bool, error) {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &y); err != nil {
		return false, err
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb), nil
}
