package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// batchBomb is the measured case of the hardening issue: a sub_diagram
// node with batch: true over items, each item a template_job that
// renders {{x}}{{x}} from a string x in the start node's custom_data.
// Each item's output (2×len(x)) is under the per-node limit, so before
// the fix the batch held every item's output and failed only at the end:
// 450 items over a 512 kB string took the hub from 19 MiB to a 2,247 MiB
// peak.
func batchBomb(xBytes, items int) string {
	list := make([]string, items)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf(`version: light
nodes:
- label: start
  type: start
  custom_data:
    x: %s
    items: [%s]
- label: batch
  type: sub_diagram
  batch: true
  diagram_data:
    version: light
    nodes:
    - {label: s, type: start}
    - {label: render, type: template_job, template_content: "{{x}}{{x}}"}
    connections: [{from: s, to: render}]
- label: end
  type: endpoint
connections: [{from: start, to: batch}, {from: batch, to: end}]
`, strings.Repeat("a", xBytes), strings.Join(list, ", "))
}

// TestDiagramBatchMemoryBound sends the batch bomb to the binary and
// reads the peak resident set (VmHWM) of the process: the run must fail
// with a limit error naming the node and the setting, and the hub must
// stay under 200 MiB.
//
// Why 200 MiB: junction serve starts at about 20 MiB. A run holds at
// most max_run_bytes (2 MiB) of node outputs, however its sub-diagrams
// and batches nest, plus the request (0.5 MB, decoded and parsed a few
// times) and one item's transient copies (a few MiB). One run of this
// input stays well under 100 MiB; the bound leaves room for the
// collector (GOGC=100 lets the heap double before it runs) and for the
// eight runs at once of the second half, the most the pack allows
// (max_concurrent_runs), each of which held 2.2 GiB before the fix.
func TestDiagramBatchMemoryBound(t *testing.T) {
	const (
		xBytes   = 512_000
		items    = 450
		boundKiB = 200 * 1024
	)
	p := startServer(t, "-pack", "diagram", "-data-dir", t.TempDir(), "-token", "k")
	cs := connectHTTP(t, p.URL, "k")
	pid := p.cmd.Process.Pid
	doc := batchBomb(xBytes, items)
	// run returns the run's error, or why it is not the limit error
	// wanted: at the batch node, naming a setting and its limit.
	run := func() (string, time.Duration, error) {
		began := time.Now()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{"diagram_content": doc}})
		if err != nil {
			return "", 0, err
		}
		took := time.Since(began)
		text := res.Content[0].(*mcp.TextContent).Text
		var out struct{ Status, Error string }
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			return "", took, fmt.Errorf("answer is not JSON: %v\n%.800s", err, text)
		}
		if !res.IsError || out.Status != "failed" || !strings.HasPrefix(out.Error, `node "batch" (sub_diagram): batch item `) ||
			!strings.Contains(out.Error, "over the limit of") || !strings.Contains(out.Error, "setting)") {
			return out.Error, took, fmt.Errorf("isError %v, want the run failed at the batch node by a limit naming its setting:\n%.800s", res.IsError, text)
		}
		return out.Error, took, nil
	}

	rssBefore := vmKB(t, pid, "VmRSS")
	msg, took, err := run()
	peak := vmKB(t, pid, "VmHWM")
	t.Logf("one run, %d items over a %d-byte string: answered in %s, RSS %.1f MiB before, peak %.1f MiB; error %q",
		items, xBytes, took.Round(time.Millisecond), float64(rssBefore)/1024, float64(peak)/1024, msg)
	if err != nil {
		t.Error(err)
	}
	if peak > boundKiB {
		// Do not go on to eight runs at once: they would need eight times
		// as much.
		t.Fatalf("junction's peak RSS is %d MiB, over the bound of %d MiB", peak/1024, boundKiB/1024)
	}

	// Eight at once, the default max_concurrent_runs.
	const parallel = 8
	var wg sync.WaitGroup
	errs := make([]string, parallel)
	began := time.Now()
	for i := range parallel {
		wg.Go(func() {
			if _, _, err := run(); err != nil {
				errs[i] = err.Error()
			}
		})
	}
	wg.Wait()
	peak = vmKB(t, pid, "VmHWM")
	t.Logf("%d runs at once: answered in %s, peak %.1f MiB", parallel, time.Since(began).Round(time.Millisecond), float64(peak)/1024)
	for i, e := range errs {
		if e != "" {
			t.Errorf("run %d: %s", i, e)
		}
	}
	if peak > boundKiB {
		t.Errorf("junction's peak RSS is %d MiB with %d runs at once, over the bound of %d MiB", peak/1024, parallel, boundKiB/1024)
	}
}
