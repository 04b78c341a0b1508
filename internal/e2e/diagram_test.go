package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the background run's process %d: %v", pid, err)
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
