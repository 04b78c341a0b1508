package diagram

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/pack/diagram/diagramtest"
)

// heapPeak samples the live heap until the returned function is called,
// which returns the highest sample above the heap at the start.
func heapPeak() func() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	var peak uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return max(peak, base) - base
	}
}

func storeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, "diagram-runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

const mib = 1 << 20

// The measured case: a 500-way fan-out of template nodes over a 100 kB
// input gave no answer in 60 s, took the hub from 30 MB to 462 MB and the
// run store to 159 MB. With the default limits it is refused before it
// runs.
func TestFanOutBombRefusedByDefault(t *testing.T) {
	e := newEnv(t, "", nil)
	input := map[string]any{"text": strings.Repeat("a", 100_000)}
	began := time.Now()
	peak := heapPeak()
	out, isErr := e.call(t, "run_diagram", map[string]any{"diagram_content": diagramtest.FanOut(500), "input_data": input})
	heap := peak()
	took := time.Since(began)
	t.Logf("500-way fan-out, 100 kB input, default limits: %s, heap +%.1f MiB, store %d bytes", took.Round(time.Millisecond), float64(heap)/mib, storeBytes(t, e.dir))
	if !isErr || out["session_id"] != nil || !strings.Contains(fmt.Sprint(out["errors"]), "diagram has 502 nodes, over the limit of 200 (the diagram pack's max_nodes setting)") {
		t.Errorf("run_diagram = %v; want it refused by max_nodes before it runs", out)
	}
}

// With the node and fan-out limits opened, the same run stops at the
// bytes-per-run limit, having held at most that much. The run is started
// with Pack.Run, so the heap figure is the run's (engine and store), not
// the encoding of its result for MCP (the e2e test measures the whole
// process).
func TestFanOutStopsAtRunBytes(t *testing.T) {
	e := newEnv(t, "", func(o *Options) { o.MaxNodes, o.MaxFanOut = 1000, 1000 })
	input := map[string]any{"text": strings.Repeat("a", 100_000)}
	began := time.Now()
	peak := heapPeak()
	r, err := e.pack.Run(t.Context(), RunRequest{Content: []byte(diagramtest.FanOut(500)), Input: input})
	heap := peak()
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("500-way fan-out, 100 kB input, max_nodes and max_fan_out 1000: %s, %d nodes ran, heap +%.1f MiB, store %.1f MiB",
		took.Round(time.Millisecond), len(r.ExecutedNodes), float64(heap)/mib, float64(storeBytes(t, e.dir))/mib)
	if r.Status != StatusFailed || !strings.Contains(r.Error, fmt.Sprintf("over the limit of %d bytes per run (the diagram pack's max_run_bytes setting)", DefaultMaxRunBytes)) {
		t.Fatalf("run = status %v, error %q; want it stopped by max_run_bytes", r.Status, r.Error)
	}
	if n := len(r.ExecutedNodes); n > DefaultMaxRunBytes/100_000+1 {
		t.Errorf("%d nodes ran, more than max_run_bytes allows", n)
	}
	// Not a test of the collector: a bound well under what was measured
	// before the limits (432 MB), to catch a regression.
	if heap > 64*mib {
		t.Errorf("heap grew by %d MiB during the run", heap/mib)
	}
}

// countingStore counts what the pack writes.
type countingStore struct {
	Store
	mu    sync.Mutex
	puts  int
	bytes int
}

func (c *countingStore) PutRun(ctx context.Context, r *Run) error {
	b, _ := json.Marshal(r)
	c.mu.Lock()
	c.puts++
	c.bytes += len(b)
	c.mu.Unlock()
	return c.Store.PutRun(ctx, r)
}

// A fan-out within the limits completes, and its progress is not
// rewritten after every node: a run of n nodes used to write the record
// n times, O(n²) bytes.
func TestFanOutWithinLimits(t *testing.T) {
	dir := t.TempDir()
	bs, err := OpenBoltStore(filepath.Join(dir, "diagram-runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: bs}
	e := newEnv(t, dir, func(o *Options) { o.Store = store })
	input := map[string]any{"text": strings.Repeat("a", 50_000)}
	began := time.Now()
	peak := heapPeak()
	r, err := e.pack.Run(t.Context(), RunRequest{Content: []byte(diagramtest.FanOut(DefaultMaxFanOut)), Input: input})
	heap := peak()
	took := time.Since(began)
	if err != nil || r.Output != "fan-out done" {
		t.Fatalf("run = %v, %v", r, err)
	}
	final := jsonSize(r)
	store.mu.Lock()
	puts, written := store.puts, store.bytes
	store.mu.Unlock()
	t.Logf("%d-way fan-out, 50 kB input: %s, heap +%.1f MiB, %d saves writing %.1f MiB for a %.1f MiB result, store %.1f MiB",
		DefaultMaxFanOut, took.Round(time.Millisecond), float64(heap)/mib, puts, float64(written)/mib, float64(final)/mib, float64(storeBytes(t, dir))/mib)
	if written > 8*final {
		t.Errorf("saving the run wrote %d bytes in %d saves for a %d-byte record", written, puts, final)
	}
}

// Every limit a run can hit says which setting changes it.
func TestLimitErrorsNameTheirSetting(t *testing.T) {
	e := newEnv(t, "", func(o *Options) {
		o.MaxRunBytes = 5000
		o.MaxFanOut = 2
		o.DefaultTimeout = 200 * time.Millisecond
	})
	out, _ := e.call(t, "run_diagram", map[string]any{"diagram_content": shoutDiagram, "input_data": map[string]any{"name": strings.Repeat("n", 6000)}})
	if !strings.Contains(fmt.Sprint(out["error"]), "input_data is 6011 bytes, over the limit of 5000 bytes per run (the diagram pack's max_run_bytes setting)") {
		t.Errorf("input over max_run_bytes = %v", out)
	}
	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": diagramtest.FanOut(3), "input_data": map[string]any{"text": "x"}})
	if !strings.Contains(fmt.Sprint(out["errors"]), "3 edges leave this node, over the limit of 2 (the diagram pack's max_fan_out setting)") {
		t.Errorf("fan-out over max_fan_out = %v", out)
	}
	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": slowDiagram, "input_data": map[string]any{"seconds": 60}})
	if !strings.Contains(fmt.Sprint(out["error"]), "run timed out after 200ms (the diagram pack's default_run_timeout setting; a run may ask for up to 1h0m0s)") {
		t.Errorf("run over the default timeout = %v", out)
	}
	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": shoutDiagram, "timeout": 7200})
	if !strings.Contains(fmt.Sprint(out["error"]), "the diagram pack's max_run_timeout setting") {
		t.Errorf("timeout over max_run_timeout = %v", out)
	}
	big := `
nodes:
  - {id: start, type: start}
  - {id: b, type: tool, tool: big, args: {bytes: 3000}}
  - {id: c, type: tool, tool: big, args: {bytes: 3000}}
  - {id: end, type: endpoint, output: done}
edges: [{from: start, to: b}, {from: b, to: c}, {from: c, to: end}]
`
	out, _ = e.call(t, "run_diagram", map[string]any{"diagram_content": big})
	if !strings.Contains(fmt.Sprint(out["error"]), `node "c" (tool): with this output the run's node outputs come to`) || !strings.Contains(fmt.Sprint(out["error"]), "max_run_bytes setting") {
		t.Errorf("outputs over max_run_bytes = %v", out)
	}
}
