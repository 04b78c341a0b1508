package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The diagram pack through the binary: junction diagram compile, run
// (now and in the background) and results, sharing one data directory, and
// seed 002's plain HTTP endpoints checked with curl.

const badDiagram = `
nodes:
  - {id: a, type: tool, tool: no_such_tool}
  - {id: b, type: teleport}
edges:
  - {from: a, to: c}
`

const napDiagram = `
name: nap
nodes:
  - {id: start, type: start}
  - {id: nap, type: command, command: [sleep, "{{ .input.seconds }}"]}
  - {id: end, type: endpoint, output: "slept {{ .input.seconds }}"}
edges: [{from: start, to: nap}, {from: nap, to: end}]
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}

// waitResult runs "diagram results" until the run is no longer running.
func waitResult(t *testing.T, env []string, dataDir, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errOut, _ := runJunction(t, env, "diagram", "results", id, "-data-dir", dataDir, "-log-level", "warn")
		if out == "" {
			t.Fatalf("diagram results %s printed nothing; stderr:\n%s", id, errOut)
		}
		r := decodeJSON(t, out)
		if r["status"] != "running" {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still running after 30s", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestDiagramCLI(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	env := []string{"JUNCTION_DIAGRAM_ALLOW_COMMANDS=1"}

	// Every problem of a bad diagram, and exit status 1.
	out, errOut, code := runJunction(t, env, "diagram", "compile", writeFile(t, dir, "bad.yaml", badDiagram), "-data-dir", data)
	if code != 1 {
		t.Fatalf("compile bad.yaml: exit %d, want 1\n%s", code, errOut)
	}
	for _, want := range []string{`unknown tool \"no_such_tool\"`, `unknown node type \"teleport\"`, "no start node", "no endpoint node", `no node has id \"c\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("compile bad.yaml output lacks %s:\n%s", want, out)
		}
	}

	// Compile and save, then run by name.
	condition, _ := filepath.Abs(filepath.Join("..", "..", "examples", "diagrams", "condition.yaml"))
	out, errOut, code = runJunction(t, env, "diagram", "compile", condition, "-push-as", "cond", "-data-dir", data)
	if code != 0 || decodeJSON(t, out)["pushed_as"] != "cond" {
		t.Fatalf("compile -push-as: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runJunction(t, env, "diagram", "run", "cond", "--input", `{"n": 12}`, "-data-dir", data)
	if code != 0 || decodeJSON(t, out)["output"] != "12 is big" {
		t.Fatalf("run cond: exit %d\n%s\n%s", code, out, errOut)
	}

	// In the background: the session id comes back at once, the result
	// later, read by another process.
	nap := writeFile(t, dir, "nap.yaml", napDiagram)
	out, errOut, code = runJunction(t, env, "diagram", "run", nap, "--background", "--input", `{"seconds": "0.3"}`, "-data-dir", data)
	if code != 0 {
		t.Fatalf("run --background: exit %d\n%s\n%s", code, out, errOut)
	}
	started := decodeJSON(t, out)
	id := fmt.Sprint(started["session_id"])
	if started["status"] != "started" || !strings.HasPrefix(id, "exec_") || len(id) != 37 {
		t.Fatalf("run --background printed %v", started)
	}
	r := waitResult(t, env, data, id)
	if r["status"] != "completed" || r["output"] != "slept 0.3" || r["diagram"] != "nap" {
		t.Errorf("background result = %v", r)
	}

	// A background process killed mid-run leaves a failed run, never a
	// "running" one.
	if runtime.GOOS != "linux" {
		return
	}
	out, _, _ = runJunction(t, env, "diagram", "run", nap, "--background", "--input", `{"seconds": "60"}`, "-data-dir", data)
	id = fmt.Sprint(decodeJSON(t, out)["session_id"])
	pid := findProcess(t, id)
	kids := childrenOf(t, pid) // the command node's sleep, in its own process group
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the background run's process %d: %v", pid, err)
	}
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
	waitGone(t, pid)
	r = waitResult(t, env, data, id)
	if r["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(r["error"]), "interrupted") {
		t.Errorf("result of a killed background run = %v", r)
	}
}

// findProcess returns the pid of the junction process whose command line
// holds runID: the background child this test started.
func findProcess(t *testing.T, runID string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(b), runID) && strings.Contains(string(b), "-run-id") {
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no process runs %s", runID)
	return 0
}

// childrenOf returns the pids whose parent is pid, once there is one.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var kids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			child, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
			if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				kids = append(kids, child)
			}
		}
		if len(kids) > 0 {
			return kids
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d started no child within 10s", pid)
	return nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		// A zombie (state Z) is gone for our purpose: its locks are released.
		if err != nil || strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still alive 10s after SIGKILL", pid)
}

// TestDiagramPlainHTTPWithCurl is seed 002's "Testing Locally" session
// against junction serve, with curl.
func TestDiagramPlainHTTPWithCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed; TestPlainEndpoints in internal/daemon covers the same requests in Go")
	}
	p := startServer(t, "-pack", "diagram", "-token", "dev-key-123")
	base := "http://" + p.Addr
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), curl, append([]string{"-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "20"}, args...)...)
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl %v: %v", args, err)
		}
		s := string(b)
		i := strings.LastIndex(s, "\n")
		code, _ := strconv.Atoi(s[i+1:])
		return s[:i], code
	}
	if body, code := run(base + "/mcp/info"); code != 401 {
		t.Errorf("curl /mcp/info without a key: %d %s, want 401", code, body)
	}
	body, code := run("-H", "X-API-Key: dev-key-123", base+"/mcp/info")
	if code != 200 || !strings.Contains(body, `"run_diagram"`) || !strings.Contains(body, `"junction://diagrams"`) {
		t.Errorf("curl /mcp/info with a key: %d %s", code, body)
	}
	list := `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`
	if body, code := run("-X", "POST", base+"/mcp/messages", "-H", "Content-Type: application/json", "-d", list); code != 401 {
		t.Errorf("curl POST /mcp/messages without a key: %d %s, want 401", code, body)
	}
	body, code = run("-X", "POST", base+"/mcp/messages", "-H", "Content-Type: application/json", "-H", "Authorization: Bearer dev-key-123", "-d", list)
	if code != 200 || !strings.Contains(body, `"see_result"`) || !strings.Contains(body, `"id":1`) {
		t.Errorf("curl POST /mcp/messages tools/list: %d %s", code, body)
	}
	call := `{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": ""}}}`
	body, code = run("-X", "POST", base+"/mcp/messages", "-H", "Content-Type: application/json", "-H", "X-API-Key: dev-key-123", "-d", call)
	if code != 200 || !strings.Contains(body, `results`) {
		t.Errorf("curl POST /mcp/messages tools/call search: %d %s", code, body)
	}
}

// diagramServe runs "junction serve -http 127.0.0.1:0 -pack diagram" over
// dataDir as a process this test stops itself (for restarts), and returns
// its /mcp URL and a stop function that sends SIGTERM and waits. Its
// config file opens loopback to http nodes, which the tests' web servers
// listen on.
func diagramServe(t *testing.T, dataDir, token string) (string, func()) {
	t.Helper()
	const prefix = "junction: listening on "
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(cfg, []byte("packs:\n  core: {}\n  diagram:\n    settings:\n      http_allow_cidrs: [127.0.0.0/8]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(junctionBin(t), "serve", "-http", "127.0.0.1:0", "-pack", "diagram", "-token", token, "-data-dir", dataDir, "-config", cfg)
	cmd.Env = childEnv(t.TempDir())
	w := newLineWatcher(prefix)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("junction serve after SIGTERM: %v\n%s", err, w.String())
			}
		case <-time.After(stopTimeout):
			cmd.Process.Kill()
			<-exited
			t.Errorf("junction serve still running %v after SIGTERM\n%s", stopTimeout, w.String())
		}
	}
	t.Cleanup(stop)
	select {
	case line := <-w.found:
		return strings.TrimSpace(strings.TrimPrefix(line, prefix)), stop
	case err := <-exited:
		stopped = true
		t.Fatalf("junction serve exited before listening: %v\n%s", err, w.String())
	case <-time.After(startTimeout):
		t.Fatalf("junction serve did not listen within %v\n%s", startTimeout, w.String())
	}
	return "", nil
}

func diagramCall(t *testing.T, cs *mcp.ClientSession, name string, args any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return decodeJSON(t, res.Content[0].(*mcp.TextContent).Text)
}

// TestDiagramOverHTTPAcrossRestart drives the diagram tools with a go-sdk
// client over Streamable HTTP against the binary: run, run in the
// background and poll, cancel, compile bad diagrams, search and fetch, and
// read results after the server restarts.
func TestDiagramOverHTTPAcrossRestart(t *testing.T) {
	data := t.TempDir()
	// A web service that answers when told to, or when the caller gives up.
	release := make(chan struct{})
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok": true, "version": "9.9"}`)
	}))
	defer web.Close()
	defer close(release)

	url, stop := diagramServe(t, data, "k1")
	cs := connectHTTP(t, url, "k1")

	httpExample, _ := os.ReadFile(filepath.Join("..", "..", "examples", "diagrams", "http.yaml"))
	out := diagramCall(t, cs, "compile_diagram", map[string]any{"diagram_content": string(httpExample), "push_as": "health"})
	if out["pushed_as"] != "health" {
		t.Fatalf("compile_diagram = %v", out)
	}
	out = diagramCall(t, cs, "compile_diagram", map[string]any{"diagram_content": badDiagram, "push_as": "bad"})
	if out["valid"] != false || len(out["errors"].([]any)) != 5 {
		t.Errorf("compile_diagram(bad) = %v, want 5 errors", out)
	}
	done := diagramCall(t, cs, "run_diagram", map[string]any{"diagram": "health", "input_data": map[string]any{"base_url": web.URL}})
	if fmt.Sprint(done["output"]) != "map[healthy:true version:9.9]" {
		t.Fatalf("run_diagram = %v", done)
	}

	slow := `
nodes:
  - {id: start, type: start}
  - {id: wait, type: http, url: "{{ .input.url }}/slow", timeout: 5m}
  - {id: end, type: endpoint}
edges: [{from: start, to: wait}, {from: wait, to: end}]
`
	started := diagramCall(t, cs, "run_backend", map[string]any{"diagram_content": slow, "input_data": map[string]any{"url": web.URL}})
	cancelled := fmt.Sprint(started["session_id"])
	if r := diagramCall(t, cs, "see_result", map[string]any{"session_id": cancelled}); r["status"] != "running" {
		t.Errorf("see_result while waiting = %v", r)
	}
	if r := diagramCall(t, cs, "cancel_run", map[string]any{"session_id": cancelled}); r["status"] != "cancelled" {
		t.Errorf("cancel_run = %v", r)
	}
	started = diagramCall(t, cs, "run_backend", map[string]any{"diagram_content": slow, "input_data": map[string]any{"url": web.URL}})
	interrupted := fmt.Sprint(started["session_id"])

	search := diagramCall(t, cs, "search", map[string]any{"query": "health"})
	if fmt.Sprint(search["results"]) != "[map[id:health title:health — fetch a status document and report whether the service is healthy url:junction://diagrams/health]]" {
		t.Errorf("search = %v", search)
	}
	fetched := diagramCall(t, cs, "fetch", map[string]any{"id": "health"})
	if fetched["text"] != string(httpExample) {
		t.Errorf("fetch text differs from the compiled document: %v", fetched)
	}

	// Restart: the hub shuts down with a run in progress.
	cs.Close()
	stop()
	url, _ = diagramServe(t, data, "k2")
	cs = connectHTTP(t, url, "k2")
	if r := diagramCall(t, cs, "see_result", map[string]any{"session_id": done["session_id"]}); r["status"] != "completed" || fmt.Sprint(r["executed_nodes"]) != "[start fetch healthy up end]" {
		t.Errorf("completed run after restart = %v", r)
	}
	if r := diagramCall(t, cs, "see_result", map[string]any{"session_id": cancelled}); r["status"] != "cancelled" {
		t.Errorf("cancelled run after restart = %v", r)
	}
	if r := diagramCall(t, cs, "see_result", map[string]any{"session_id": interrupted}); r["status"] != "failed" || !strings.HasPrefix(fmt.Sprint(r["error"]), "interrupted") {
		t.Errorf("interrupted run after restart = %v", r)
	}
}
