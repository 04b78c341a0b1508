package junction

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/codemode/tsgen"
)

// Code mode: a view's script meta-tool (run_script) takes a short
// TypeScript or JavaScript script that calls the view's tools as async
// functions, one namespace per server, and returns only the script's
// answer (docs/code-mode.md). The hub keeps the tools, the bindings and
// every inner call; a [ScriptEngine] runs the script itself.

// A ScriptEngine runs code mode's scripts: in a sandbox with no file
// system, network, process or host object, within its own limits
// (internal/codemode's engine, QuickJS, is the one junction uses). It
// returns the script's output, or an error that says what to change; a
// failed run may return its output too (the console up to the failure).
type ScriptEngine interface {
	RunScript(ctx context.Context, run *ScriptRun) (*ScriptOutput, error)
}

// ScriptRun is one script and what it may call.
type ScriptRun struct {
	Source     string
	TypeScript bool // strip types before running
	// Funcs are the tools the script sees: namespace.name, and
	// tools[Tool].
	Funcs []ScriptFunc
	// Call calls a tool as the view does (selection, drift, timeouts,
	// audit, metrics); the result is the tool's own. Its error is a
	// protocol error (an unknown tool, say).
	Call func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error)
	// Progress is told of each inner call that ends.
	Progress func(calls int, msg string)
}

// ScriptFunc binds one tool into a script's scope.
type ScriptFunc struct {
	Namespace, Name string // the function is Namespace.Name
	Tool            string // the tool's exposed name: tools[Tool]
}

// ScriptOutput is what a script made.
type ScriptOutput struct {
	Value   json.RawMessage // its return value, as JSON (null when it returned nothing)
	Console string          // what it wrote with console.log and the like
	Calls   int             // the inner calls it made
}

// scriptBindings are the tools of a view as code mode binds them, for
// one table (rebuilt when the table or the view's tools change).
type scriptBindings struct {
	t      *table
	n      int // len(v.tools) when built
	binds  []tsgen.Binding
	byTool map[string]int // exposed name → index in binds
}

// bindings returns the view's tools as code mode binds them.
func (v *View) bindings() *scriptBindings {
	h := v.hub
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	v.mu.RLock()
	n := len(v.tools)
	if b := v.scripts.Load(); b != nil && b.t == t && b.n == n {
		v.mu.RUnlock()
		return b
	}
	var tools []tsgen.Tool
	for _, e := range t.tools {
		if v.tools[e.name] != e {
			continue
		}
		tools = append(tools, tsgen.Tool{Name: e.name, Server: e.source.name, LocalName: e.local, Title: e.tool.Title,
			Description: e.tool.Description, InputSchema: rawSchema(e.tool.InputSchema), OutputSchema: rawSchema(e.tool.OutputSchema)})
	}
	v.mu.RUnlock()
	b := &scriptBindings{t: t, n: n, binds: tsgen.Bind(tools), byTool: make(map[string]int, len(tools))}
	for i, bd := range b.binds {
		b.byTool[bd.Tool.Name] = i
	}
	v.scripts.Store(b)
	return b
}

// ToolSignature returns the tool's function in code mode, on one line
// (`github.create_issue(args: {...}): Promise<...>`), or "" for a tool
// the view does not serve.
func (v *View) ToolSignature(name string) string {
	b := v.bindings()
	i, ok := b.byTool[name]
	if !ok {
		return ""
	}
	return tsgen.Signature(b.binds[i])
}

// ToolDeclaration returns the tool's TypeScript declaration in code mode,
// with its documentation (a namespace holding its one function), or ""
// for a tool the view does not serve.
func (v *View) ToolDeclaration(name string) string {
	b := v.bindings()
	i, ok := b.byTool[name]
	if !ok {
		return ""
	}
	return tsgen.Declarations(b.binds[i:i+1], b.binds[i].Tool.Server)
}

// ScriptDeclarations returns the TypeScript declarations of code mode
// for the view's tools of server (a source name), with the prelude
// (ContentBlock, ToolError, tools) when prelude is set; "" when the view
// serves no tool of server.
func (v *View) ScriptDeclarations(server string, prelude bool) string {
	d := tsgen.Declarations(v.bindings().binds, server)
	if d == "" {
		return ""
	}
	if prelude {
		return tsgen.Prelude() + "\n" + d
	}
	return d
}

// scriptDescription sums up what a script can call, for the script
// tool: the namespaces and how many tools each. Called with v.mu held.
func (v *View) scriptDescription(t *table) string {
	type group struct {
		name string
		n    int
	}
	var groups []*group
	for _, e := range t.tools {
		if v.tools[e.name] != e {
			continue
		}
		if len(groups) == 0 || groups[len(groups)-1].name != e.source.name {
			groups = append(groups, &group{name: e.source.name})
		}
		groups[len(groups)-1].n++
	}
	var b strings.Builder
	b.WriteString("Runs a TypeScript script in the hub and returns only its return value and console output. " +
		"The script is an async function body (await, return). Each tool is an async function namespace.tool(args), " +
		"also tools[\"listed name\"](args); it resolves to the structured content, or else the content blocks, " +
		"and throws ToolError(code, message) on failure. Use it to chain, loop and filter calls without passing their results through the conversation. " +
		"No file system, network or timers: only the tools.")
	if len(groups) > 0 {
		b.WriteString(" Namespaces: ")
		const shown = 20
		for i, g := range groups {
			if i == shown {
				fmt.Fprintf(&b, "; and %d more", len(groups)-shown)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			unit := "tools"
			if g.n == 1 {
				unit = "tool"
			}
			fmt.Fprintf(&b, "%s (%d %s)", tsgen.Ident(g.name, "server"), g.n, unit)
		}
		b.WriteString(".")
	}
	if v.disc.d.Mode == DiscoverySearch {
		fmt.Fprintf(&b, " %s results give each tool's signature.", v.disc.names.Search)
	} else {
		b.WriteString(" Arguments are as each tool's input schema.")
	}
	if len(groups) > 0 {
		fmt.Fprintf(&b, " Types: resource %s.", DeclarationsURI("SERVER"))
	}
	return b.String()
}

// isScriptTool reports whether name is the view's script meta-tool (code
// mode on).
func (v *View) isScriptTool(name string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.disc.d.CodeMode && name == v.disc.names.Script
}

// scriptTaskAfter is how long a script runs before its call becomes a
// task, for a host that takes tasks.
const scriptTaskAfter = time.Second

func (v *View) scriptToolDef(desc string) *mcp.Tool {
	t := v.scriptToolDefOf(desc)
	SetTaskSupport(t, TaskOptional) // a long script becomes a task
	return t
}

func (v *View) scriptToolDefOf(desc string) *mcp.Tool {
	return &mcp.Tool{
		Name:        v.disc.names.Script,
		Title:       "Run a script",
		Description: desc,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"script":{"type":"string"},` +
			`"language":{"type":"string","enum":["typescript","javascript"],"default":"typescript"}},` +
			`"required":["script"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"value":{},"console":{"type":"string"},"calls":{"type":"integer"}},"required":["value","calls"]}`),
	}
}

// scriptResult is the structured result of the script tool.
type scriptResult struct {
	Value   json.RawMessage `json:"value"`
	Console string          `json:"console,omitempty"`
	Calls   int             `json:"calls"`
}

// scriptHandler runs a script. Each inner call is a call of the view,
// with the outer request's session (so that an upstream's elicitation or
// sampling reaches the host) and values, but without its progress token:
// the script reports its own progress, one step per finished call. A
// call that needs the host's input pauses the script (see
// codemode_pause.go); the host's retry resumes it.
func (v *View) scriptHandler(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	if isScriptState(req.Params.RequestState) {
		ps, err := v.hub.paused.resume(req.Params.RequestState, scriptOwner(ctx))
		if err != nil {
			return nil, err
		}
		// The retry gets the progress of the call it answers, which may
		// end before finishScript runs.
		ps.run.reportTo(ctx, req)
		ps.ask.answers <- req.Params.InputResponses
		return v.finishScript(ctx, req, start, ps.run)
	}
	var in struct {
		Script   string `json:"script"`
		Language string `json:"language"`
	}
	if err := decodeArgs(req.Params.Arguments, &in); err != nil {
		return metaError("%v", err), nil
	}
	if strings.TrimSpace(in.Script) == "" {
		return metaError("script is required: the body of an async function that calls tools and returns the answer"), nil
	}
	ts := true
	switch strings.ToLower(in.Language) {
	case "", "typescript", "ts":
	case "javascript", "js":
		ts = false
	default:
		return metaError("language %q: want typescript or javascript", in.Language), nil
	}
	b := v.bindings()
	funcs := make([]ScriptFunc, len(b.binds))
	for i, bd := range b.binds {
		funcs[i] = ScriptFunc{Namespace: bd.Namespace, Name: bd.Func, Tool: bd.Tool.Name}
	}
	// The script may outlive this request, paused for its host (see
	// codemode_pause.go): its context keeps the request's values, not its
	// cancellation, which await passes on while a request waits for it.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pauseWait)
	stopWithHub := context.AfterFunc(v.hub.life, cancel) // and ends with the hub
	run := &scriptRun{owner: scriptOwner(ctx), cancel: cancel, asks: make(chan scriptAsk), done: make(chan scriptDone, 1)}
	// What each inner call's _meta carries of the request's.
	var innerMeta mcp.Meta
	if tc := metaTraceContext(req.Params.Meta); tc.Parent != "" {
		innerMeta = mcp.Meta{MetaKeyTraceParent: tc.Parent}
		if tc.State != "" {
			innerMeta[MetaKeyTraceState] = tc.State
		}
	}
	// A request of 2026-07-28 or later names the host's revision and
	// capabilities in its _meta (it stands alone; an older host's request
	// names none): each call goes on with them, so that an upstream that
	// asks the host something is answered as this host can be.
	for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo} {
		if v, ok := req.Params.Meta[k]; ok {
			if innerMeta == nil {
				innerMeta = mcp.Meta{}
			}
			innerMeta[k] = v
		}
	}
	var done atomic.Int64
	taskOwner := scriptTaskOwner() // the tasks the hub makes for this script's calls (callAsTask)
	script := &ScriptRun{
		Source: in.Script, TypeScript: ts, Funcs: funcs,
		Call: func(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
			// The host's trace context goes on: each call's span is a child
			// of the request that ran the script.
			params := &mcp.CallToolParamsRaw{Name: tool, Arguments: args, Meta: innerMeta}
			if v.runsOnlyAsTask(tool) {
				raw, err := json.Marshal(params)
				if err != nil {
					return nil, err
				}
				return v.callAsTask(withVia(ctx, req.Params.Name), taskOwner, tool, raw)
			}
			for {
				inner := *req
				inner.Params = params
				c, err := v.Begin(withVia(ctx, req.Params.Name), tool)
				if err != nil {
					return nil, err
				}
				res, err := c.CallTool(&inner)
				if err != nil || res == nil || len(res.InputRequests) == 0 {
					return res, err
				}
				answers := run.askHost(ctx, res.InputRequests)
				if answers == nil {
					return nil, fmt.Errorf("tool %q needs the host's input, and the script ended before it came", tool)
				}
				params = &mcp.CallToolParamsRaw{Name: tool, Arguments: args, Meta: innerMeta, InputResponses: answers, RequestState: res.RequestState}
			}
		},
		Progress: func(calls int, msg string) {
			n := done.Add(1)
			if p := run.progress.Load(); p != nil {
				NotifyProgress(p.ctx, p.session, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: float64(n), Message: msg})
			}
		},
	}
	// The request gets the script's progress from its first call on,
	// which may end before finishScript runs.
	run.reportTo(ctx, req)
	go func() {
		out, err := v.hub.opts.Scripts.RunScript(runCtx, script)
		stopWithHub()
		cancel()
		v.hub.paused.forget(run)
		run.done <- scriptDone{out, err}
	}()
	if h := testHookScriptStarted.Load(); h != nil {
		(*h)()
	}
	return v.finishScript(ctx, req, start, run)
}

// testHookScriptStarted, if set, runs once a script has been started,
// before its request waits for it (tests).
var testHookScriptStarted atomic.Pointer[func()]

// finishScript waits for run for the request of ctx, and answers it: the
// script's result, its error as a tool error, or the input its call
// needs from the host.
func (v *View) finishScript(ctx context.Context, req *mcp.CallToolRequest, start time.Time, run *scriptRun) (*mcp.CallToolResult, error) {
	// Progress goes to the request waiting now (a resumed script's is the
	// host's retry).
	defer run.reportTo(ctx, req)()
	paused, out, err := v.await(ctx, run)
	if paused != nil {
		return paused, nil
	}
	var res *mcp.CallToolResult
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		msg := err.Error()
		if out != nil && out.Console != "" {
			msg += "\n\nConsole output before the failure:\n" + out.Console
		}
		res = metaError("%s", msg)
	default:
		r := scriptResult{Value: out.Value, Console: out.Console, Calls: out.Calls}
		if r.Value == nil {
			r.Value = json.RawMessage("null")
		}
		text, jerr := json.Marshal(r)
		if jerr != nil {
			return nil, jerr
		}
		res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: r}
	}
	v.observeMeta(ctx, req, start, res, "", nil)
	return res, nil
}

// viaKey marks the context of a call a meta-tool makes for its caller
// (a code-mode script's inner call): the value is the meta-tool's name,
// reported as [CallInfo.Via].
var viaKey rareKey[string]

func withVia(ctx context.Context, metaTool string) context.Context {
	return viaKey.with(ctx, metaTool)
}

// viaOf returns the meta-tool that made the call of ctx, or "".
func viaOf(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	return viaKey.of(ctx)
}

// DeclarationsURI is the URI of the resource that holds code mode's
// TypeScript declarations for a server's tools (with the shared prelude:
// ContentBlock, ToolError, tools).
func DeclarationsURI(server string) string {
	return "junction://code-mode/" + url.PathEscape(server) + ".d.ts"
}

// syncDeclarations registers one declarations resource per server the
// view serves tools of, and removes those of servers gone. Called by
// syncMeta with v.mu held.
func (v *View) syncDeclarations(t *table) {
	ds := &v.disc
	want := map[string]string{} // URI → server
	for _, e := range t.tools {
		if v.tools[e.name] == e {
			want[DeclarationsURI(e.source.name)] = e.source.name
		}
	}
	var keep []*mcp.Resource
	var drop []string
	for _, r := range ds.decls {
		if _, ok := want[r.URI]; ok {
			keep = append(keep, r)
			delete(want, r.URI)
		} else {
			drop = append(drop, r.URI)
		}
	}
	if len(drop) > 0 {
		v.listChanged(listResources)
	}
	for uri, server := range want {
		r := &mcp.Resource{URI: uri, Name: server + ".d.ts", Title: "TypeScript declarations of " + server + "'s tools in code mode",
			Description: "The functions a code-mode script calls for the tools of " + server + ", with their argument and result types.",
			MIMEType:    "text/plain"}
		v.listChanged(listResources)
		keep = append(keep, r)
	}
	slices.SortFunc(keep, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
	ds.decls = keep
}

// readDeclarations answers a resources/read of a declarations resource.
func (v *View) readDeclarations(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name, ok := strings.CutPrefix(uri, "junction://code-mode/")
	if ok {
		name, ok = strings.CutSuffix(name, ".d.ts")
	}
	server, err := url.PathUnescape(name)
	if !ok || err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	d := v.ScriptDeclarations(server, true)
	if d == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: d}}}, nil
}
