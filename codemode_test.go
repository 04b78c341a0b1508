package junction_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	junction "github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/codemode"
)

// codeModeHub is discoveryHub's two packs behind a view in list mode
// with code mode on, the real script engine, and the calls observed.
func codeModeHub(t *testing.T) (*junction.View, *mcp.ClientSession, func() []junction.CallInfo) {
	t.Helper()
	var mu sync.Mutex
	var seen []junction.CallInfo
	opts := &junction.Options{Scripts: &codemode.Engine{}, Observe: func(ci junction.CallInfo) {
		mu.Lock()
		seen = append(seen, ci)
		mu.Unlock()
	}}
	h, v, _ := discoveryHub(t, opts, junction.Selection{})
	fail := junction.NewPack("flaky")
	fail.AddTool(&mcp.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk on fire"}}}, nil
		})
	add(t, h, "flaky", fail, junction.PrefixAlways)
	if err := v.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	return v, connect(t, v, nil), func() []junction.CallInfo {
		mu.Lock()
		defer mu.Unlock()
		return append([]junction.CallInfo(nil), seen...)
	}
}

func runScript(t *testing.T, cs *mcp.ClientSession, script string) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": script}})
	if err != nil {
		t.Fatalf("run_script: %v", err)
	}
	var out map[string]any
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
	}
	return res, out
}

// TestCodeMode: in list mode with code mode on, run_script is listed
// beside the tools; a TypeScript script calls tools by namespace and by
// listed name, catches a tool's error, and only its answer comes back;
// each inner call is a call of the view, marked as the script's.
func TestCodeMode(t *testing.T) {
	_, cs, seen := codeModeHub(t)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(list)
	if !slices.Contains(names, "run_script") || !slices.Contains(names, "fs__read_file") {
		t.Fatalf("tools/list = %v, want run_script beside the tools", names)
	}
	res, out := runScript(t, cs, `
const a: any = await fs.read_file({path: "a.txt"});
const b = await tools["github__create_issue"]({repo: "x"});
let failed = "";
try { await flaky.broken({}); } catch (e: any) { failed = e.message; }
console.log("done");
return {a: a[0].text, b: b[0].text, failed};`)
	if res.IsError {
		t.Fatalf("run_script failed: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	value, _ := out["value"].(map[string]any)
	if value["a"] != `fs/read_file:{"path":"a.txt"}` || value["b"] != "github/create_issue" || !strings.Contains(value["failed"].(string), "disk on fire") {
		t.Errorf("value = %v", value)
	}
	if out["console"] != "done\n" || out["calls"] != float64(3) {
		t.Errorf("console %q, calls %v", out["console"], out["calls"])
	}
	via := map[string]string{}
	for _, ci := range seen() {
		via[ci.Tool] = ci.Via
	}
	for _, tool := range []string{"fs__read_file", "github__create_issue", "flaky__broken"} {
		if via[tool] != "run_script" {
			t.Errorf("call of %s observed with Via %q, want run_script", tool, via[tool])
		}
	}
	if v, ok := via["run_script"]; !ok || v != "" {
		t.Errorf("run_script itself observed: %v (Via %q)", ok, v)
	}
}

// TestCodeModeErrors: what a script gets wrong is a tool error that says
// what to change, and the hub goes on serving.
func TestCodeModeErrors(t *testing.T) {
	_, cs, _ := codeModeHub(t)
	for _, c := range []struct{ script, want string }{
		{"return 1 +", "line"},
		{"return await nosuch.tool({})", "nosuch"},
		{`return await tools["github__nope"]({})`, "github__nope"},
		{"return () => 1", "JSON"},
		{"", "script is required"},
	} {
		res, _ := runScript(t, cs, c.script)
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, c.want) {
			t.Errorf("run_script %q = %+v, want a tool error mentioning %q", c.script, res.Content, c.want)
		}
	}
	if res, out := runScript(t, cs, "return 42"); res.IsError || out["value"] != float64(42) {
		t.Errorf("after the errors: %+v %v", res, out)
	}
}

// TestCodeModeNeedsEngine: a hub without a script engine refuses code
// mode.
func TestCodeModeNeedsEngine(t *testing.T) {
	_, v, _ := discoveryHub(t, nil, junction.Selection{})
	if err := v.SetDiscovery(junction.Discovery{CodeMode: true}); err == nil || !strings.Contains(err.Error(), "script engine") {
		t.Errorf("SetDiscovery(CodeMode) without an engine = %v", err)
	}
}

// TestCodeModeInSearchMode: with search mode too, run_script is listed
// beside the search meta-tools, and search results and describe_tools
// give each tool's TypeScript signature.
func TestCodeModeInSearchMode(t *testing.T) {
	_, v, _ := discoveryHub(t, &junction.Options{Scripts: &codemode.Engine{}}, junction.Selection{})
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch, CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if names := toolNames(list); !slices.Equal(names, []string{"call_tool", "describe_tools", "run_script", "search_tools"}) {
		t.Errorf("tools/list = %v, want the three meta-tools and run_script", names)
	}
	_, r := search(t, cs, map[string]any{"query": "read a file"})
	if len(r.Tools) == 0 || r.Tools[0].Name != "fs__read_file" || !strings.HasPrefix(r.Tools[0].Signature, "fs.read_file(args") {
		t.Errorf("search hits = %+v, want fs__read_file with its signature", r.Tools)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"fs__read_file"}}})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"typescript":"fs.read_file(args`) {
		t.Errorf("describe_tools = %v, %v; want the TypeScript signature", res, err)
	}
}

// TestCodeModeDeclarations: each server's TypeScript declarations are a
// resource, listed and read like any other, and gone with code mode.
func TestCodeModeDeclarations(t *testing.T) {
	v, cs, _ := codeModeHub(t)
	list, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	want := []string{junction.DeclarationsURI("flaky"), junction.DeclarationsURI("fs"), junction.DeclarationsURI("github")}
	for _, w := range want {
		if !slices.Contains(uris, w) {
			t.Errorf("resources/list = %v, want %s", uris, w)
		}
	}
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: junction.DeclarationsURI("fs")})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Contents[0].Text; !strings.Contains(text, "declare namespace fs") || !strings.Contains(text, "function read_file(") || !strings.Contains(text, "ToolError") {
		t.Errorf("fs declarations:\n%s", text)
	}
	if err := v.SetDiscovery(junction.Discovery{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: junction.DeclarationsURI("fs")}); err == nil {
		t.Error("the declarations are still read with code mode off")
	}
}

// TestCodeModePause: a tool that needs the host's input pauses the
// script for a host at 2026-07-28: run_script asks the host, and the
// host's retry resumes the script with the answer.
func TestCodeModePause(t *testing.T) {
	p := junction.NewPack("asker")
	p.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if ans, ok := req.Params.InputResponses["q"]; ok && req.Params.RequestState == "asked" {
				b, _ := json.Marshal(ans)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer: " + string(b)}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}, RequestState: "asked", InputRequests: mcp.InputRequestMap{
				"q": &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
			}}, nil
		})
	h := junction.New(&junction.Options{Scripts: &codemode.Engine{}})
	t.Cleanup(func() { h.Close() })
	add(t, h, "asker", p, junction.PrefixAlways)
	view, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if err := view.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	asked := 0
	cs := connect(t, view, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
	}})
	res, out := runScript(t, cs, `const r: any = await asker.ask({}); return r[0].text`)
	if res.IsError || asked != 1 {
		t.Fatalf("run_script = %+v (asked %d times)", res.Content, asked)
	}
	if s, _ := out["value"].(string); !strings.Contains(s, "Ada") {
		t.Errorf("value = %v, want the host's answer", out["value"])
	}
}

// TestCodeModeTraceContext: each inner call's span is started with the
// trace context of the request that ran the script.
func TestCodeModeTraceContext(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var mu sync.Mutex
	parents := map[string]string{}
	opts := &junction.Options{Scripts: &codemode.Engine{}, Trace: func(ctx context.Context, c *junction.Call, tc junction.TraceContext) context.Context {
		mu.Lock()
		parents[c.Name()] = tc.Parent
		mu.Unlock()
		return ctx
	}}
	_, v, _ := discoveryHub(t, opts, junction.Selection{})
	if err := v.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Meta: mcp.Meta{junction.MetaKeyTraceParent: parent},
		Arguments: map[string]any{"script": `await fs.read_file({path: "x"}); return 1`}})
	if err != nil || res.IsError {
		t.Fatalf("run_script: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if parents["fs__read_file"] != parent {
		t.Errorf("inner call's trace parent = %q, want the request's %q", parents["fs__read_file"], parent)
	}
}

// BenchmarkCodeModeCall compares a tool call made by a script with a
// direct in-process call of the hub: script-N runs one script of N
// calls, and reports the cost of each (ns/call), script and engine
// start shared among them.
func BenchmarkCodeModeCall(b *testing.B) {
	h := junction.New(&junction.Options{Scripts: &codemode.Engine{}})
	defer h.Close()
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if err := h.Add(b.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		b.Fatal(err)
	}
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		b.Fatal(err)
	}
	if err := v.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := h.Call(b.Context(), "p__echo", json.RawMessage(`{}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("script-%d", n), func(b *testing.B) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), dataplane.New(v, nil).Transport(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			script := fmt.Sprintf("for (let i = 0; i < %d; i++) await p.echo({}); return 1", n)
			for b.Loop() {
				res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": script, "language": "javascript"}})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
		})
	}
}

// TestCodeModeTask: for a host that takes tasks, a script that is still
// running after a second becomes a task, whose outcome is the script's
// result; a quick script is answered as it is.
func TestCodeModeTask(t *testing.T) {
	release := make(chan struct{})
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	h := junction.New(&junction.Options{Scripts: &codemode.Engine{}})
	t.Cleanup(func() { h.Close() })
	add(t, h, "p", p, junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	if !v.TakesTaskCall("run_script") {
		t.Fatal("run_script is not taken for tasks")
	}
	call := func(script string) map[string]any {
		params, _ := json.Marshal(map[string]any{"name": "run_script", "arguments": map[string]any{"script": script}})
		res, werr, ok := v.CallToolTask(t.Context(), "o", "run_script", params)
		if werr != nil || !ok {
			t.Fatalf("CallToolTask(%q) = %v, %v", script, werr, ok)
		}
		return decodeObject(t, res)
	}
	if quick := call("return 7"); quick["resultType"] == "task" || !strings.Contains(mustJSON(t, quick), `"value":7`) {
		t.Errorf("a quick script's answer = %v, want its result", quick)
	}
	created := call(`const r: any = await p.slow({}); return r[0].text`)
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("a long script's answer = %v, want a task", created)
	}
	close(release)
	got := pollTask(t, v, "o", id, "completed")
	if !strings.Contains(mustJSON(t, got["result"]), `"value":"done"`) {
		t.Errorf("completed task = %v", got)
	}
}

// taskOnly is remoteTasks with its tool declaring that it runs only as a
// task of its server.
type taskOnly struct{ remoteTasks }

func (r *taskOnly) Catalog(ctx context.Context) (*junction.Catalog, error) {
	c, err := r.remoteTasks.Catalog(ctx)
	if err == nil {
		junction.SetTaskSupport(c.Tools[0], junction.TaskRequired)
	}
	return c, err
}

// TestCodeModeInnerTask: a script's call of a tool that runs only as a
// task of its server is made as a task, which the hub polls; the script
// gets the tool's result.
func TestCodeModeInnerTask(t *testing.T) {
	h := junction.New(&junction.Options{Scripts: &codemode.Engine{}})
	t.Cleanup(func() { h.Close() })
	src := &taskOnly{}
	add(t, h, "up", src, junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	res, out := runScript(t, cs, `const r = await up.far({}); return r`)
	if res.IsError {
		t.Fatalf("run_script: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	if v, ok := out["value"].([]any); !ok || len(v) != 0 {
		t.Errorf("value = %#v, want the task's result (no content)", out["value"])
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.sent) == 0 || !strings.HasPrefix(src.sent[0], "tasks/get ") {
		t.Errorf("the hub sent %q to the source; want it to poll the task", src.sent)
	}
}

// TestDescribeTypeScript: with code mode on, describe_tools answers each
// tool's declaration for scripts, documentation and all, in the
// typescript format; with it off, that format is refused.
func TestDescribeTypeScript(t *testing.T) {
	_, v, _ := discoveryHub(t, &junction.Options{Scripts: &codemode.Engine{}}, junction.Selection{})
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch, CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"fs__read_file", "nope"}, "format": "typescript"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError || !strings.Contains(text, "declare namespace fs") || !strings.Contains(text, "function read_file(") ||
		!strings.Contains(text, "Read the contents of a file") || !strings.Contains(text, `// nope: unknown tool "nope"`) {
		t.Errorf("describe_tools typescript:\n%s", text)
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"errors":[{"error":"unknown tool \"nope\"","name":"nope"}],"tools":[{"name":"fs__read_file"}]}` {
		t.Errorf("describe_tools typescript structuredContent = %s; want the names and errors, the declarations only in the text", got)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"fs__read_file"}, "format": "typescript"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "code mode") {
		t.Errorf("typescript with code mode off = %+v, %v", res, err)
	}
}

// progressEngine runs no script: it reports three calls' progress at
// once, then says so on reported, and returns, as a script whose calls
// end quickly does.
type progressEngine struct{ reported chan struct{} }

func (e progressEngine) RunScript(_ context.Context, run *junction.ScriptRun) (*junction.ScriptOutput, error) {
	for i := 1; i <= 3; i++ {
		run.Progress(i, "call done")
	}
	e.reported <- struct{}{}
	return &junction.ScriptOutput{Value: json.RawMessage(`"done"`), Calls: 3}, nil
}

// TestCodeModeProgressFromTheFirstCall: the request that runs a script
// gets the progress of every inner call, the first one too, however soon
// it ends (the request was made the script's progress target only once
// it began to wait for the script, so a call that ended before that went
// unreported: TestCodeModeThroughBinary lost it once under load). The
// request waits here until the script has reported its calls.
func TestCodeModeProgressFromTheFirstCall(t *testing.T) {
	reported := make(chan struct{})
	t.Cleanup(junction.SetTestHookScriptStarted(func() { <-reported }))
	h := junction.New(&junction.Options{Scripts: progressEngine{reported}})
	t.Cleanup(func() { h.Close() })
	view, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if err := view.SetDiscovery(junction.Discovery{CodeMode: true}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]int{}
	third := map[string]chan struct{}{} // closed at a run's third notification
	cs := connect(t, view, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		token := fmt.Sprint(req.Params.ProgressToken)
		if got[token]++; got[token] == 3 {
			close(third[token])
		}
	}})
	for i := range 20 {
		token := fmt.Sprintf("run-%d", i)
		done := make(chan struct{})
		mu.Lock()
		third[token] = done
		mu.Unlock()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": "return 1"}, Meta: mcp.Meta{"progressToken": token}})
		if err != nil || res.IsError {
			t.Fatalf("run_script: %v %+v", err, res)
		}
		// The notifications were sent before the answer; the client may
		// hand them to its handler after the answer.
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			mu.Lock()
			n := got[token]
			mu.Unlock()
			t.Fatalf("run %d: %d progress notifications, want one for each of the 3 calls", i, n)
		}
	}
}
