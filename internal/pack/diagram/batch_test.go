package diagram

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// batchOver is a light diagram whose sub_diagram node runs, once per
// item of items, a template_job rendering template from the string x.
func batchOver(x string, items int, template, props string) string {
	list := make([]string, items)
	for i := range list {
		list[i] = fmt.Sprint(i)
	}
	return fmt.Sprintf(`version: light
nodes:
- label: start
  type: start
  custom_data: {x: %q, items: [%s]}
- label: batch
  type: sub_diagram
  batch: true
  %s
  diagram_data:
    version: light
    nodes:
    - {label: s, type: start}
    - {label: render, type: template_job, template_content: %q}
    connections: [{from: s, to: render}]
- label: end
  type: endpoint
connections: [{from: start, to: batch}, {from: batch, to: end}]
`, x, strings.Join(list, ", "), props, template)
}

// A batch counts each item's output as it arrives and stops at the first
// one over a limit. It used to hold every item's output and fail only at
// the end, with the output of all of them (460 MB for 450 items of 1 MB)
// in memory.
func TestBatchStopsAtFirstOverflow(t *testing.T) {
	env := newEnv(t, "", nil)
	for _, tc := range []struct {
		name, x, props, want string
	}{
		// 600 kB items: two are over the node's limit, while each
		// item's sub-diagram stays within the run's.
		{"node output", strings.Repeat("a", 300_000), "", `node "batch" (sub_diagram): batch item 1 of 450: with this item the batch's output comes to`},
		{"node output, parallel", strings.Repeat("a", 300_000), "batch_parallel: true", `node "batch" (sub_diagram): batch item `},
		{"node output, rich object", strings.Repeat("a", 300_000), "output_mode: rich_object", `node "batch" (sub_diagram): batch item 1 of 450: with this item the batch's output comes to`},
		// 1 MB items (the measured case): the second item's sub-diagram,
		// beside the first item's output, is over the run's limit.
		{"run bytes", strings.Repeat("a", 512_000), "", `node "batch" (sub_diagram): batch item 1 of 450: sub-diagram (diagram_data): node "render" (template_job): with this output the run's node outputs come to`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peak := heapPeak()
			r := runDiagram(t, env, batchOver(tc.x, 450, "{{x}}{{x}}", tc.props), nil, nil)
			heap := peak()
			t.Logf("heap +%.1f MiB; %s", float64(heap)/mib, r.Error)
			if r.Status != StatusFailed || !strings.Contains(r.Error, tc.want) || !strings.Contains(r.Error, "setting)") {
				t.Errorf("run %s %q, want failed with %q and the setting", r.Status, r.Error, tc.want)
			}
			// Not a test of the collector: the batch stopped at its
			// second item (before the fix: 270 MB and more).
			if heap > 64*mib {
				t.Errorf("heap grew by %d MiB during the run", heap/mib)
			}
		})
	}
}

// A template that repeats a large value stops at the node's output
// limit while it renders, and the error names the setting.
func TestTemplateStopsAtNodeOutputLimit(t *testing.T) {
	env := newEnv(t, "", nil)
	light := "version: light\nnodes:\n- {label: s, type: start, custom_data: {x: " + strings.Repeat("a", 100_000) + "}}\n- {label: t, type: template_job, template_content: '" + strings.Repeat("{{x}}", 50) + "'}\nconnections: [{from: s, to: t}]\n"
	native := "nodes:\n- {id: s, type: start}\n- {id: t, type: template, template: '" + strings.Repeat("{{ .input.x }}", 50) + "'}\n- {id: e, type: endpoint}\nedges: [{from: s, to: t}, {from: t, to: e}]\n"
	for name, src := range map[string]string{"template_job": light, "template": native} {
		r := runDiagram(t, env, src, map[string]any{"x": strings.Repeat("a", 100_000)}, nil)
		want := fmt.Sprintf("the rendered text passes the limit of %d bytes per node output; rendering stopped there (the diagram pack's max_node_output_bytes setting)", DefaultMaxOutputBytes)
		if r.Status != StatusFailed || !strings.Contains(r.Error, want) {
			t.Errorf("%s: run %s %q, want failed with %q", name, r.Status, r.Error, want)
		}
	}
}

// A batch inside a parallel batch's items runs its items one at a time:
// a run has at most subParallel items in progress, however batches nest.
func TestNestedParallelBatchesRunFourAtOnce(t *testing.T) {
	var mu sync.Mutex
	inFlight, most := 0, 0
	more := make(chan struct{}) // closed once more than subParallel are in flight
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight == subParallel+1 {
			close(more)
		}
		mu.Unlock()
		// Hold the request until more than subParallel are in flight, or
		// long enough for the others of its group to arrive.
		select {
		case <-more:
		case <-time.After(50 * time.Millisecond):
		case <-r.Context().Done():
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		fmt.Fprint(w, "ok")
	}))
	defer web.Close()
	env := newEnv(t, "", func(o *Options) { o.HTTPAllowCIDRs = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	src := fmt.Sprintf(`version: light
nodes:
- label: start
  type: start
  custom_data: {url: %q, items: [1, 2, 3, 4], inner: [1, 2, 3, 4]}
- label: outer
  type: sub_diagram
  batch: true
  batch_parallel: true
  diagram_data:
    version: light
    nodes:
    - {label: s, type: start}
    - label: inner
      type: sub_diagram
      batch: true
      batch_parallel: true
      batch_input_key: inner
      diagram_data:
        version: light
        nodes:
        - {label: s, type: start}
        - {label: get, type: api_job, url: '{{url}}', method: GET}
        connections: [{from: s, to: get}]
    connections: [{from: s, to: inner}]
- label: end
  type: endpoint
connections: [{from: start, to: outer}, {from: outer, to: end}]
`, web.URL)
	r := runDiagram(t, env, src, nil, nil)
	if r.Status != StatusCompleted {
		t.Fatalf("run %s %q", r.Status, r.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if most > subParallel {
		t.Errorf("%d requests in flight at once, want at most %d", most, subParallel)
	}
}

// A node whose output holds one large value many times (an endpoint
// whose fields all name the same input) is stopped at the output limit
// without the output being encoded: measuring it used to build its JSON,
// 300 times the input here.
func TestOutputOfManyReferencesIsMeasuredNotEncoded(t *testing.T) {
	env := newEnv(t, "", nil)
	var b strings.Builder
	b.WriteString("nodes:\n- {id: s, type: start}\n- id: e\n  type: endpoint\n  output:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "    f%d: '{{ .input.big }}'\n", i)
	}
	b.WriteString("edges: [{from: s, to: e}]\n")
	peak := heapPeak()
	r := runDiagram(t, env, b.String(), map[string]any{"big": strings.Repeat("a", 900_000)}, nil)
	heap := peak()
	t.Logf("heap +%.1f MiB; %s", float64(heap)/mib, r.Error)
	if r.Status != StatusFailed || !strings.Contains(r.Error, `node "e" (endpoint): output is over the limit of 1048576 bytes per node output (the diagram pack's max_node_output_bytes setting)`) {
		t.Errorf("run %s %q, want it failed at the output limit", r.Status, r.Error)
	}
	if heap > 64*mib {
		t.Errorf("heap grew by %d MiB during the run", heap/mib)
	}
}

// The strings of one value (an endpoint's output, a tool's arguments)
// render at most 4 MiB of text together: many fields that each repeat a
// large input stop there, instead of each rendering up to the limit.
func TestRenderValueStopsAtTheLimitTogether(t *testing.T) {
	env := newEnv(t, "", nil)
	var b strings.Builder
	b.WriteString("nodes:\n- {id: s, type: start}\n- id: e\n  type: endpoint\n  output:\n")
	for i := range 300 {
		fmt.Fprintf(&b, "    f%d: 'copy {{ .input.big }}'\n", i)
	}
	b.WriteString("edges: [{from: s, to: e}]\n")
	peak := heapPeak()
	r := runDiagram(t, env, b.String(), map[string]any{"big": strings.Repeat("a", 900_000)}, nil)
	heap := peak()
	t.Logf("heap +%.1f MiB; %s", float64(heap)/mib, r.Error)
	if r.Status != StatusFailed || !strings.Contains(r.Error, `node "e" (endpoint): output: rendered text is over the limit of 4194304 bytes`) {
		t.Errorf("run %s %q, want it failed at the render limit", r.Status, r.Error)
	}
	if heap > 64*mib {
		t.Errorf("heap grew by %d MiB during the run", heap/mib)
	}
}
