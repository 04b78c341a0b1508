package diagram

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const shoutDiagram = `
version: 1
name: shouter
description: shout a greeting
nodes:
  - id: start
    type: start
  - id: greet
    type: template
    template: "hello {{ .input.name }}"
  - id: loud
    type: tool
    tool: shout
    args:
      text: "{{ .greet }}"
  - id: end
    type: endpoint
    output: "{{ .loud.text }}"
edges:
  - {from: start, to: greet}
  - {from: greet, to: loud}
  - {from: loud, to: end}
`

func TestRunDiagramOverMCP(t *testing.T) {
	e := newEnv(t, "", nil)
	out, isErr := e.call(t, "compile_diagram", map[string]any{"diagram_content": shoutDiagram, "push_as": "shouter"})
	if isErr || out["valid"] != true || out["pushed_as"] != "shouter" {
		t.Fatalf("compile_diagram = %v (isError %v), want valid and pushed", out, isErr)
	}
	// format_type, which DiPeO clients send, is accepted.
	out, isErr = e.call(t, "run_diagram", map[string]any{"diagram": "shouter", "input_data": map[string]any{"name": "ada"}, "format_type": "light"})
	if isErr {
		t.Fatalf("run_diagram failed: %v", out)
	}
	if !regexp.MustCompile(`^exec_[0-9a-f]{32}$`).MatchString(fmt.Sprint(out["session_id"])) {
		t.Errorf("session_id = %v, want exec_<32 hex>", out["session_id"])
	}
	want := map[string]any{
		"status":         "completed",
		"output":         "HELLO ADA!",
		"executed_nodes": []any{"start", "greet", "loud", "end"},
		"node_outputs": map[string]any{
			"start": map[string]any{"name": "ada"},
			"greet": "hello ada",
			"loud":  map[string]any{"text": "HELLO ADA!"},
			"end":   "HELLO ADA!",
		},
	}
	got := map[string]any{"status": out["status"], "output": out["output"], "executed_nodes": out["executed_nodes"], "node_outputs": out["node_outputs"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run_diagram result mismatch (-want +got):\n%s", diff)
	}
	// The synchronous run is stored too.
	res, _ := e.call(t, "see_result", map[string]any{"session_id": out["session_id"]})
	if res["status"] != "completed" || res["output"] != "HELLO ADA!" {
		t.Errorf("see_result after run_diagram = %v", res)
	}
	if _, ok := res["owner"]; ok {
		t.Errorf("see_result shows the internal owner token: %v", res)
	}
}

func TestRunInlineContentAndFailures(t *testing.T) {
	e := newEnv(t, "", nil)
	failing := strings.Replace(shoutDiagram, "tool: shout", "tool: fail", 1)
	out, isErr := e.call(t, "run_diagram", map[string]any{"diagram_content": failing, "input_data": map[string]any{"name": "x"}})
	if !isErr || out["status"] != "failed" || !strings.Contains(fmt.Sprint(out["error"]), `node "loud" (tool): tool fail failed: boom`) {
		t.Errorf("failing run = %v (isError %v), want failed at node loud with boom", out, isErr)
	}
	if diff := cmp.Diff([]any{"start", "greet"}, out["executed_nodes"]); diff != "" {
		t.Errorf("executed_nodes of failed run (-want +got):\n%s", diff)
	}

	out, isErr = e.call(t, "run_diagram", map[string]any{"diagram": "nope"})
	if !isErr || out["error"] != "Diagram not found: nope" {
		t.Errorf("unknown diagram = %v", out)
	}
	out, isErr = e.call(t, "run_diagram", map[string]any{"diagram": "../etc/passwd"})
	if !isErr || !strings.Contains(fmt.Sprint(out["error"]), "Invalid filename") {
		t.Errorf("path diagram name = %v", out)
	}
	out, isErr = e.call(t, "run_diagram", map[string]any{})
	if !isErr || !strings.Contains(fmt.Sprint(out["error"]), "diagram parameter is required") {
		t.Errorf("no diagram = %v", out)
	}
	bad := strings.Replace(shoutDiagram, "tool: shout", "tool: nosuchtool", 1)
	out, isErr = e.call(t, "run_diagram", map[string]any{"diagram_content": bad})
	if !isErr || !strings.Contains(fmt.Sprint(out["errors"]), "unknown tool") {
		t.Errorf("invalid inline diagram = %v", out)
	}
}

const slowDiagram = `
version: 1
nodes:
  - {id: start, type: start}
  - {id: first, type: tool, tool: count}
  - id: wait
    type: tool
    tool: slow
    args: {seconds: "{{ .input.seconds }}"}
  - {id: end, type: endpoint}
edges:
  - {from: start, to: first}
  - {from: first, to: wait}
  - {from: wait, to: end}
`

func TestBackgroundRunPollAndCancel(t *testing.T) {
	e := newEnv(t, "", nil)
	if _, isErr := e.call(t, "compile_diagram", map[string]any{"diagram_content": slowDiagram, "push_as": "slow"}); isErr {
		t.Fatal("compile failed")
	}

	// A short run completes and is found by polling.
	out, isErr := e.call(t, "run_backend", map[string]any{"diagram": "slow", "input_data": map[string]any{"seconds": 0.05}})
	if isErr || out["status"] != "started" {
		t.Fatalf("run_backend = %v", out)
	}
	id := fmt.Sprint(out["session_id"])
	res := e.poll(t, id)
	if res["status"] != "completed" {
		t.Fatalf("polled result = %v, want completed", res)
	}
	if diff := cmp.Diff(map[string]any{"text": "slept"}, res["output"]); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if res["ended_at"] == nil || res["started_at"] == nil {
		t.Errorf("result lacks started_at/ended_at: %v", res)
	}

	// A long run is running until cancelled.
	out, _ = e.call(t, "run_backend", map[string]any{"diagram": "slow", "input_data": map[string]any{"seconds": 60}})
	id = fmt.Sprint(out["session_id"])
	e.waitExecuted(t, id, "first")
	res, _ = e.call(t, "see_result", map[string]any{"session_id": id})
	if res["status"] != "running" || fmt.Sprint(res["executed_nodes"]) != "[start first]" {
		t.Errorf("see_result while running = %v", res)
	}
	res, isErr = e.call(t, "cancel_run", map[string]any{"session_id": id})
	if isErr || res["status"] != "cancelled" || res["error"] != "cancelled by cancel_run" {
		t.Errorf("cancel_run = %v", res)
	}
	res, _ = e.call(t, "see_result", map[string]any{"session_id": id})
	if res["status"] != "cancelled" {
		t.Errorf("see_result after cancel = %v", res)
	}
	// Cancelling a finished run returns it unchanged.
	res, isErr = e.call(t, "cancel_run", map[string]any{"session_id": id})
	if isErr || res["status"] != "cancelled" {
		t.Errorf("second cancel_run = %v", res)
	}
}

func TestSeeResultErrors(t *testing.T) {
	e := newEnv(t, "", nil)
	out, isErr := e.call(t, "see_result", map[string]any{"session_id": "bogus"})
	want := map[string]any{"error": "Invalid session_id format: bogus", "expected_format": "exec_[32-char-hex]"}
	if diff := cmp.Diff(want, out); diff != "" || !isErr {
		t.Errorf("see_result(bogus) (-want +got):\n%s", diff)
	}
	id := "exec_" + strings.Repeat("ab", 16)
	out, isErr = e.call(t, "see_result", map[string]any{"session_id": id})
	if !isErr || !strings.HasPrefix(fmt.Sprint(out["error"]), "Execution not found: "+id) || out["session_id"] != id {
		t.Errorf("see_result(unknown) = %v", out)
	}
}

func TestRestartKeepsResultsAndFailsInterruptedRuns(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, dir, nil)
	e.call(t, "compile_diagram", map[string]any{"diagram_content": slowDiagram, "push_as": "slow"})
	done, _ := e.call(t, "run_diagram", map[string]any{"diagram": "slow", "input_data": map[string]any{"seconds": 0}})
	out, _ := e.call(t, "run_backend", map[string]any{"diagram": "slow", "input_data": map[string]any{"seconds": 60}})
	interrupted := fmt.Sprint(out["session_id"])
	e.waitExecuted(t, interrupted, "first")
	e.close(t) // the hub shuts down with a run in progress

	// A run left "running" by a process that died without closing: its
	// owner lock file is gone (or unlocked).
	crashed := NewRunID()
	store, err := OpenBoltStore(filepath.Join(dir, "diagram-runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutRun(t.Context(), &Run{SessionID: crashed, Diagram: "slow", Status: StatusRunning, ExecutedNodes: []string{"start"}, NodeOutputs: map[string]any{"start": map[string]any{}}, StartedAt: time.Now(), Owner: "own_deadbeef"}); err != nil {
		t.Fatal(err)
	}

	e2 := newEnv(t, dir, nil)
	res, _ := e2.call(t, "see_result", map[string]any{"session_id": done["session_id"]})
	if res["status"] != "completed" || fmt.Sprint(res["executed_nodes"]) != "[start first wait end]" {
		t.Errorf("completed run after restart = %v", res)
	}
	res, _ = e2.call(t, "see_result", map[string]any{"session_id": interrupted})
	if res["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(res["error"]), "interrupted") {
		t.Errorf("run interrupted by shutdown, after restart = %v", res)
	}
	res, _ = e2.call(t, "see_result", map[string]any{"session_id": crashed})
	if res["status"] != "failed" || !strings.Contains(fmt.Sprint(res["error"]), "interrupted: the junction process running it stopped") {
		t.Errorf("run of a crashed process, after restart = %v", res)
	}
	// Saved diagrams survive too, as resources.
	rr, err := e2.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "junction://diagrams/slow"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "tool: slow") {
		t.Errorf("reading junction://diagrams/slow after restart: %v %v", rr, err)
	}
}

func TestCompileReportsEveryError(t *testing.T) {
	e := newEnv(t, "", nil)
	bad := `
version: 1
nodes:
  - {id: a, type: tool, tool: nosuch, args: {text: "{{ .ghost.x }}"}}
  - {id: b, type: wizard}
  - {id: c, type: template, template: "{{ .d }}", colour: red}
  - {id: d, type: template, template: "x"}
  - {id: e, type: command, command: [ls]}
edges:
  - {from: a, to: c}
  - {from: c, to: d}
  - {from: d, to: c}
  - {from: a, to: zz}
`
	out, isErr := e.call(t, "compile_diagram", map[string]any{"diagram_content": bad, "push_as": "bad"})
	if !isErr || out["valid"] != false || out["pushed_as"] != nil {
		t.Fatalf("compile_diagram(bad) = %v, want invalid and not pushed", out)
	}
	var got []string
	for _, p := range out["errors"].([]any) {
		m := p.(map[string]any)
		got = append(got, fmt.Sprintf("%v|%v", m["node_id"], m["field"]))
	}
	want := []string{
		"a|nodes[0].tool",      // unknown tool
		"b|nodes[1].type",      // unknown node type
		"c|nodes[2].colour",    // field not for a template
		"e|nodes[4].type",      // command nodes disabled
		"<nil>|nodes",          // no start
		"<nil>|nodes",          // no endpoint
		"zz|edges[3].to",       // edge to nowhere
		"c|edges",              // cycle c → d → c without a condition
		"a|nodes[0].args.text", // .ghost is no node
	}
	for _, w := range want {
		found := false
		for i, g := range got {
			if g == w {
				got = append(got[:i], got[i+1:]...)
				found = true
				break
			}
		}
		if !found {
			t.Errorf("compile_diagram errors lack %s; all errors: %v", w, out["errors"])
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "diagrams", "bad.yaml")); err == nil {
		t.Errorf("invalid diagram was saved")
	}
	// A reference to a node that runs later is an output that cannot exist.
	later := `
nodes:
  - {id: start, type: start}
  - {id: a, type: template, template: "{{ .b }}"}
  - {id: b, type: template, template: "b"}
  - {id: end, type: endpoint}
edges:
  - {from: start, to: a}
  - {from: a, to: b}
  - {from: b, to: end}
`
	out, _ = e.call(t, "compile_diagram", map[string]any{"diagram_content": later, "push_as": "later"})
	if !strings.Contains(fmt.Sprint(out["errors"]), `node "b" does not run before "a" on any path`) {
		t.Errorf("reference to a later node: %v", out["errors"])
	}
}

func TestCompilePushAsChecks(t *testing.T) {
	e := newEnv(t, "", nil)
	for _, tc := range []struct{ name, want string }{
		{"../x", "Invalid filename: path separators and '..' are not allowed in push_as parameter"},
		{`a\b`, "Invalid filename: path separators and '..' are not allowed in push_as parameter"},
		{".hidden", "Invalid filename: push_as must be a valid filename (non-empty, not starting with '.')"},
		{"", "Invalid filename: push_as must be a valid filename (non-empty, not starting with '.')"},
		{"a\x00b", "Invalid filename: null bytes and control characters are not allowed"},
		{"a b", "Invalid filename: push_as may contain only letters, digits, '.', '_' and '-' (at most 128 characters)"},
	} {
		out, isErr := e.call(t, "compile_diagram", map[string]any{"diagram_content": shoutDiagram, "push_as": tc.name})
		if !isErr || out["error"] != tc.want || out["valid"] != false {
			t.Errorf("compile_diagram(push_as %q) = %v, want error %q", tc.name, out, tc.want)
		}
	}
}

func TestSearchFetchAndResources(t *testing.T) {
	e := newEnv(t, "", nil)
	e.call(t, "compile_diagram", map[string]any{"diagram_content": shoutDiagram, "push_as": "shouter.yaml"})
	e.call(t, "compile_diagram", map[string]any{"diagram_content": slowDiagram, "push_as": "slow"})
	// A file planted next to the store is never reachable.
	os.WriteFile(filepath.Join(e.dir, "secret.yaml"), []byte("secret"), 0o600)

	out, _ := e.call(t, "search", map[string]any{"query": "GREETING"})
	want := map[string]any{"results": []any{map[string]any{"id": "shouter", "title": "shouter — shout a greeting", "url": "junction://diagrams/shouter"}}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("search (-want +got):\n%s", diff)
	}
	out, _ = e.call(t, "search", map[string]any{"query": ""})
	if n := len(out["results"].([]any)); n != 2 {
		t.Errorf("search(\"\") found %d diagrams, want 2: %v", n, out)
	}

	out, isErr := e.call(t, "fetch", map[string]any{"id": "junction://diagrams/shouter"})
	if isErr || out["id"] != "shouter" || out["text"] != shoutDiagram || out["url"] != "junction://diagrams/shouter" || out["title"] != "shouter — shout a greeting" {
		t.Errorf("fetch = %v", out)
	}
	if md, _ := out["metadata"].(map[string]any); md["nodes"] != 4.0 || md["valid"] != true {
		t.Errorf("fetch metadata = %v", out["metadata"])
	}
	for _, id := range []string{"../secret", "/etc/passwd", "secret", "junction://diagrams/../secret"} {
		out, isErr := e.call(t, "fetch", map[string]any{"id": id})
		if !isErr || !strings.HasPrefix(fmt.Sprint(out["error"]), "Diagram not found") {
			t.Errorf("fetch(%q) = %v, want not found", id, out)
		}
	}

	// The hub re-reads a pack's catalog in the background once the pack
	// says it changed (the pushes above): have it done before listing.
	if err := e.hub.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for r, err := range e.cs.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"junction://diagrams", "junction://diagrams/shouter", "junction://diagrams/slow"}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	rr, err := e.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "junction://diagrams"})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Diagrams []summary `json:"diagrams"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &list); err != nil {
		t.Fatal(err)
	}
	wantList := []summary{
		{Name: "shouter", URI: "junction://diagrams/shouter", Description: "shout a greeting", Nodes: 4, Edges: 3, Valid: true},
		{Name: "slow", URI: "junction://diagrams/slow", Nodes: 4, Edges: 3, Valid: true},
	}
	if diff := cmp.Diff(wantList, list.Diagrams); diff != "" {
		t.Errorf("junction://diagrams (-want +got):\n%s", diff)
	}
}

func TestLimits(t *testing.T) {
	e := newEnv(t, "", func(o *Options) {
		o.MaxConcurrentRuns = 1
		o.MaxOutputBytes = 1000
		o.MaxSteps = 20
	})
	out, _ := e.call(t, "run_backend", map[string]any{"diagram_content": slowDiagram, "input_data": map[string]any{"seconds": 60}})
	id := fmt.Sprint(out["session_id"])
	out, isErr := e.call(t, "run_diagram", map[string]any{"diagram_content": shoutDiagram})
	if !isErr || !strings.Contains(fmt.Sprint(out["error"]), "too many diagram runs in progress: the limit is 1") {
		t.Errorf("run over the concurrency limit = %v", out)
	}
	e.call(t, "cancel_run", map[string]any{"session_id": id})
	// cancel_run returns before the run has ended and freed its slot.
	if err := e.pack.Wait(t.Context(), id); err != nil {
		t.Fatal(err)
	}

	big := `
nodes:
  - {id: start, type: start}
  - {id: b, type: tool, tool: big, args: {bytes: 5000}}
  - {id: end, type: endpoint}
edges: [{from: start, to: b}, {from: b, to: end}]
`
	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": big})
	if out["status"] != "failed" || !strings.Contains(fmt.Sprint(out["error"]), "over the limit of 1000") {
		t.Errorf("oversized output = %v", out)
	}

	forever := `
nodes:
  - {id: start, type: start}
  - {id: tick, type: tool, tool: count}
  - {id: again, type: condition, if: "true"}
  - {id: end, type: endpoint}
edges:
  - {from: start, to: tick}
  - {from: tick, to: again}
  - {from: again, to: tick, label: "true"}
  - {from: again, to: end, label: "false"}
`
	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": forever})
	if out["status"] != "failed" || !strings.Contains(fmt.Sprint(out["error"]), "step limit") {
		t.Errorf("endless loop = %v", out)
	}

	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": slowDiagram, "input_data": map[string]any{"seconds": 60}, "timeout": 1})
	if out["status"] != "failed" || out["error"] != "run timed out after 1s, the timeout it asked for" {
		t.Errorf("run over its timeout = %v", out)
	}
}

func TestLoopThroughCondition(t *testing.T) {
	e := newEnv(t, "", nil)
	loop := `
nodes:
  - {id: start, type: start}
  - {id: tick, type: tool, tool: count}
  - {id: more, type: condition, if: "{{ lt .tick.n 3.0 }}"}
  - {id: end, type: endpoint, output: "{{ .tick.n }}"}
edges:
  - {from: start, to: tick}
  - {from: tick, to: more}
  - {from: more, to: tick, label: "true"}
  - {from: more, to: end, label: "false"}
`
	out, isErr := e.call(t, "run_diagram", map[string]any{"diagram_content": loop})
	if isErr {
		t.Fatalf("loop run failed: %v", out)
	}
	if out["output"] != 3.0 {
		t.Errorf("loop output = %v, want 3", out["output"])
	}
	want := []any{"start", "tick", "more", "tick", "more", "tick", "more", "end"}
	if diff := cmp.Diff(want, out["executed_nodes"]); diff != "" {
		t.Errorf("executed_nodes (-want +got):\n%s", diff)
	}
}

func TestCommandNodes(t *testing.T) {
	cmdDiagram := `
nodes:
  - {id: start, type: start}
  - {id: run, type: command, command: [sh, -c, "{{ .input.script }}"], timeout: 1s}
  - {id: end, type: endpoint}
edges: [{from: start, to: run}, {from: run, to: end}]
`
	off := newEnv(t, "", nil)
	out, _ := off.call(t, "run_diagram", map[string]any{"diagram_content": cmdDiagram, "input_data": map[string]any{"script": "echo hi"}})
	if !strings.Contains(fmt.Sprint(out["errors"]), "command nodes are disabled") {
		t.Errorf("command node when disabled = %v", out)
	}

	on := newEnv(t, "", func(o *Options) { o.AllowCommands = true })
	out, _ = on.call(t, "run_diagram", map[string]any{"diagram_content": cmdDiagram, "input_data": map[string]any{"script": "echo hi; echo oops >&2"}})
	if diff := cmp.Diff(map[string]any{"exit_code": 0.0, "stdout": "hi\n", "stderr": "oops\n"}, out["output"]); diff != "" {
		t.Errorf("command output (-want +got):\n%s", diff)
	}
	out, _ = on.call(t, "run_diagram", map[string]any{"diagram_content": cmdDiagram, "input_data": map[string]any{"script": "exit 3"}})
	if out["status"] != "failed" || !strings.Contains(fmt.Sprint(out["error"]), "exited with status 3") {
		t.Errorf("failing command = %v", out)
	}
	start := time.Now()
	out, _ = on.call(t, "run_diagram", map[string]any{"diagram_content": cmdDiagram, "input_data": map[string]any{"script": "sleep 30 & sleep 30"}})
	if out["status"] != "failed" || !strings.Contains(fmt.Sprint(out["error"]), "timed out after 1s") {
		t.Errorf("slow command = %v", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("slow command took %s to stop, want about 1s", d)
	}
}

func TestCallerCancelsSynchronousRun(t *testing.T) {
	e := newEnv(t, "", nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := e.cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{"diagram_content": slowDiagram, "input_data": map[string]any{"seconds": 60}}})
		done <- err
	}()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		e.pack.mu.Lock()
		for k := range e.pack.active {
			id = k
		}
		e.pack.mu.Unlock()
	}
	if id == "" {
		t.Fatal("the run never started")
	}
	e.waitExecuted(t, id, "first")
	cancel()
	if err := <-done; err == nil {
		t.Error("CallTool succeeded after its context was cancelled")
	}
	if err := e.pack.Wait(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if err := e.pack.waitStore(t.Context()); err != nil {
		t.Fatal(err)
	}
	r, err := e.pack.store.Run(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusCancelled || r.Error != "the caller cancelled the request" {
		t.Errorf("run after the caller cancelled: status %q, error %q", r.Status, r.Error)
	}
}

// TestToolNodesStayInsideTheHostsSelection runs a diagram from a host
// whose view leaves out the "shout" tool: the tool node must fail, not
// reach around the selection.
func TestToolNodesStayInsideTheHostsSelection(t *testing.T) {
	e := newEnv(t, "", nil)
	view, err := e.hub.NewView("narrow", junction.Selection{Tools: []string{"run_diagram", "see_result"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "narrow", Version: "1"}, nil).Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{
		"diagram_content": shoutDiagram, "input_data": map[string]any{"name": "ada"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, `unknown tool \"shout\"`) {
		t.Errorf("run_diagram from a view without shout: isError %v, %s; want the tool node refused", res.IsError, text)
	}
	// The full view still runs it.
	out, isErr := e.call(t, "run_diagram", map[string]any{"diagram_content": shoutDiagram, "input_data": map[string]any{"name": "ada"}})
	if isErr || out["output"] != "HELLO ADA!" {
		t.Errorf("run_diagram from the full view = %v", out)
	}
}

// A run store that cannot be opened does not stop the pack (or the hub)
// from starting: the tools that need it report why.
func TestBrokenRunStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "diagram-runs.db"), 0o700); err != nil { // a directory, not a database
		t.Fatal(err)
	}
	e := newEnv(t, dir, nil)
	out, isErr := e.call(t, "see_result", map[string]any{"session_id": NewRunID()})
	if !isErr || !strings.Contains(fmt.Sprint(out["error"]), "diagram-runs.db") {
		t.Errorf("see_result with a broken run store = %v, %v; want an error naming the store", out, isErr)
	}
	e.call(t, "compile_diagram", map[string]any{"diagram_content": slowDiagram, "push_as": "slow"})
	out, isErr = e.call(t, "run_diagram", map[string]any{"diagram": "slow", "input_data": map[string]any{"seconds": 0}})
	if !isErr || !strings.Contains(fmt.Sprint(out), "diagram-runs.db") {
		t.Errorf("run_diagram with a broken run store = %v, %v; want an error naming the store", out, isErr)
	}
}
