package e2e

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pack/diagram/diagramtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile inputs for the diagram pack, through the binary: a damaged run
// store, SSRF targets on loopback, and the fan-out that ate the memory.

const echoDiagram = `
nodes:
  - {id: start, type: start}
  - {id: greet, type: template, template: "hello {{ .input.name }}"}
  - {id: end, type: endpoint}
edges: [{from: start, to: greet}, {from: greet, to: end}]
`

// A run store damaged so that bbolt panics at its first commit ("page N
// already freed") used to crash junction at every start. Now the file is
// moved aside, the error names both files, and junction serves on.
func TestDiagramDamagedStoreThroughBinary(t *testing.T) {
	data := t.TempDir()
	flow := writeFile(t, t.TempDir(), "echo.yaml", echoDiagram)
	out, errOut, code := runJunction(t, nil, "diagram", "run", flow, "-input", `{"name": "ada"}`, "-data-dir", data)
	if code != 0 {
		t.Fatalf("diagram run: exit %d\n%s%s", code, out, errOut)
	}
	oldRun := fmt.Sprint(decodeJSON(t, out)["session_id"])
	store := filepath.Join(data, "diagram-runs.db")
	if err := diagramtest.ListFreelistInItself(store); err != nil {
		t.Fatal(err)
	}

	p := startServer(t, "-pack", "diagram", "-data-dir", data, "-token", "k")
	cs := connectHTTP(t, p.URL, "k")
	res := diagramCall(t, cs, "run_diagram", map[string]any{"diagram_content": echoDiagram, "input_data": map[string]any{"name": "bo"}})
	if res["output"] != "hello bo" {
		t.Fatalf("run_diagram over the damaged store = %v\nstderr:\n%s", res, p.Stderr())
	}
	if r := diagramCall(t, cs, "see_result", map[string]any{"session_id": res["session_id"]}); r["status"] != "completed" {
		t.Errorf("see_result of the new run = %v", r)
	}
	if r := diagramCall(t, cs, "see_result", map[string]any{"session_id": oldRun}); !strings.Contains(fmt.Sprint(r["error"]), "Execution not found") {
		t.Errorf("see_result of a run in the moved file = %v", r)
	}
	moved, _ := filepath.Glob(store + ".corrupt-*")
	stderr := p.Stderr()
	if len(moved) != 1 || !strings.Contains(stderr, "level=ERROR") || !strings.Contains(stderr, "file="+store) || !strings.Contains(stderr, "moved_to="+moved[0]) {
		t.Errorf("moved aside: %v; want one file, and an error naming both in stderr:\n%s", moved, stderr)
	}
	if !strings.Contains(stderr, "already freed") {
		t.Errorf("stderr does not say what bbolt found:\n%s", stderr)
	}

	// The command line, on a store damaged again, does the same.
	if err := diagramtest.ListFreelistInItself(store); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runJunction(t, nil, "diagram", "run", flow, "-input", `{"name": "cy"}`, "-data-dir", data)
	if code != 0 || decodeJSON(t, out)["output"] != "hello cy" || !strings.Contains(errOut, "run store damaged") {
		t.Errorf("diagram run over a damaged store: exit %d\n%s%s", code, out, errOut)
	}
	if moved, _ := filepath.Glob(store + ".corrupt-*"); len(moved) != 2 {
		t.Errorf("files moved aside after the second damage: %v, want 2", moved)
	}
}

// SSRF: the metadata-service request of the measured case, against test
// servers on loopback.
func TestDiagramHTTPNodesThroughBinary(t *testing.T) {
	secret := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "role-credentials-secret")
	}))
	defer secret.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secret.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirect.Close()
	metadata := secret.URL + "/latest/meta-data/iam/security-credentials/role"
	fetch := func(cs *mcp.ClientSession, target string) map[string]any {
		t.Helper()
		return diagramCall(t, cs, "run_diagram", map[string]any{"diagram_content": diagramtest.Fetch("5s"), "input_data": map[string]any{"url": target}})
	}

	// By default: refused, and the error says how to allow it.
	cs := connectHTTP(t, startServe(t, "-pack", "diagram", "-data-dir", t.TempDir(), "-token", "k"), "k")
	r := fetch(cs, metadata)
	secretHost := strings.TrimPrefix(secret.URL, "http://")
	if r["status"] != "failed" || strings.Contains(fmt.Sprint(r["output"]), "secret") ||
		!strings.Contains(fmt.Sprint(r["error"]), fmt.Sprintf("127.0.0.1 is a loopback address, which http nodes may not reach by default; to allow it, add %q to the diagram pack's http_allow_hosts setting", secretHost)) {
		t.Errorf("fetching %s by default = %v", metadata, r)
	}

	// The operator allows the redirector only: its redirect to the
	// secret server is refused; allowing that one too opens it.
	cfg := func(hosts ...string) string {
		return writeFile(t, t.TempDir(), "junction.yaml", fmt.Sprintf("packs:\n  diagram:\n    settings:\n      http_allow_hosts: [%s]\n", strings.Join(hosts, ", ")))
	}
	redirectHost := strings.TrimPrefix(redirect.URL, "http://")
	cs = connectHTTP(t, startServe(t, "-data-dir", t.TempDir(), "-token", "k", "-config", cfg(redirectHost)), "k")
	r = fetch(cs, redirect.URL+"/latest/meta-data/")
	if r["status"] != "failed" || !strings.Contains(fmt.Sprint(r["error"]), "redirected to "+secret.URL) || !strings.Contains(fmt.Sprint(r["error"]), "loopback") {
		t.Errorf("redirect from an allowed host to loopback = %v", r)
	}
	cs = connectHTTP(t, startServe(t, "-data-dir", t.TempDir(), "-token", "k", "-config", cfg(redirectHost, secretHost)), "k")
	if r = fetch(cs, redirect.URL+"/x"); r["output"] != "role-credentials-secret" {
		t.Errorf("redirect between allowed hosts = %v", r)
	}

	// junction diagram run reads the same settings.
	flow := writeFile(t, t.TempDir(), "fetch.yaml", diagramtest.Fetch("5s"))
	input := fmt.Sprintf(`{"url": %q}`, metadata)
	out, errOut, code := runJunction(t, nil, "diagram", "run", flow, "-input", input, "-data-dir", t.TempDir())
	if code != 1 || !strings.Contains(out, "127.0.0.1 is a loopback address") {
		t.Errorf("diagram run without settings: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runJunction(t, nil, "diagram", "run", flow, "-input", input, "-data-dir", t.TempDir(), "-config", cfg(secretHost))
	if code != 0 || decodeJSON(t, out)["output"] != "role-credentials-secret" {
		t.Errorf("diagram run with %s allowed: exit %d\n%s%s", secretHost, code, out, errOut)
	}
}

// vmKB reads a field such as VmHWM (the peak resident set) of a process
// from /proc, in kB.
func vmKB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// The measured case: a 500-way fan-out of template nodes over a 100 kB
// input gave no answer in 60 s, took the hub from 30 MB to 462 MB and the
// store to 159 MB. Now it is refused at once by default, and stopped at
// the bytes-per-run limit when the operator opens the node limits.
func TestDiagramFanOutThroughBinary(t *testing.T) {
	input := map[string]any{"text": strings.Repeat("a", 100_000)}
	for _, tc := range []struct {
		name, config, want string
	}{
		{"default limits", "", "over the limit of 200 (the diagram pack's max_nodes setting)"},
		{"max_nodes and max_fan_out 1000", "packs:\n  diagram:\n    settings: {max_nodes: 1000, max_fan_out: 1000}\n", "bytes per run (the diagram pack's max_run_bytes setting)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			args := []string{"-pack", "diagram", "-data-dir", data, "-token", "k"}
			if tc.config != "" {
				args = append(args, "-config", writeFile(t, t.TempDir(), "junction.yaml", tc.config))
			}
			p := startServer(t, args...)
			cs := connectHTTP(t, p.URL, "k")
			pid := p.cmd.Process.Pid
			rssBefore := vmKB(t, pid, "VmRSS")
			began := time.Now()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{"diagram_content": diagramtest.FanOut(500), "input_data": input}})
			took := time.Since(began)
			if err != nil {
				t.Fatal(err)
			}
			peak := vmKB(t, pid, "VmHWM")
			var storeSize int64
			if fi, err := os.Stat(filepath.Join(data, "diagram-runs.db")); err == nil {
				storeSize = fi.Size()
			}
			text := res.Content[0].(*mcp.TextContent).Text
			t.Logf("500-way fan-out, 100 kB input, %s: answered in %s, RSS %.1f MiB before, peak %.1f MiB, store %.1f MiB",
				tc.name, took.Round(time.Millisecond), float64(rssBefore)/1024, float64(peak)/1024, float64(storeSize)/(1<<20))
			if !res.IsError || !strings.Contains(text, tc.want) {
				t.Errorf("run_diagram: isError %v, answer does not contain %q:\n%.600s", res.IsError, tc.want, text)
			}
			// Not a timing test: a bound far from what was measured
			// before the limits (462 MB), to catch a regression.
			if peak-rssBefore > 96*1024 {
				t.Errorf("junction's peak RSS grew by %d MiB during the run", (peak-rssBefore)/1024)
			}
		})
	}
}
