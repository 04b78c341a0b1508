package diagram

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeFiles puts files into env's files root.
func writeFiles(t *testing.T, env *testEnv, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(env.dir, "diagram-files", p)
		if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// subParent is a diagram whose one node is a sub_diagram with props.
func subParent(props string) string {
	return "version: light\nnodes:\n- {label: s, type: start}\n- {label: sub, type: sub_diagram, " + props + "}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: sub}, {from: sub, to: e}]\n"
}

// TestLightSubDiagram: how sub_diagram nodes run, fail and are bounded.
func TestLightSubDiagram(t *testing.T) {
	env := newEnv(t, "", func(o *Options) { o.MaxSteps = 40 })
	writeFiles(t, env, map[string]string{
		"examples/shout.light.yaml": subShout,
		// loop runs itself: the nesting bound stops it.
		"examples/loop.light.yaml": subParent("diagram_name: loop"),
		// fails for the item "bad" (a db read of a file that is not there).
		"examples/picky.light.yaml": "version: light\nnodes:\n- {label: s, type: start}\n- {label: c, type: condition, expression: 'default.default == \"bad\"'}\n- {label: r, type: db, operation: read, sub_type: file, file: missing.txt}\n- {label: ok, type: template_job, template_content: 'fine {{ default.default }}'}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: c}, {from: 'c[condtrue]', to: r}, {from: 'c[condfalse]', to: ok}, {from: r, to: e}, {from: ok, to: e}]\n",
		// many runs 30 nodes per item: three items are over max_steps.
		"projects/many.yaml":       manySteps(30),
		"examples/skip.light.yaml": "version: light\nnodes:\n- {label: s, type: start}\n- {label: inner, type: sub_diagram, diagram_name: shout, ignoreIfSub: true}\n- {label: t, type: template_job, template_content: 'inner gave {{ default }}'}\nconnections: [{from: s, to: inner}, {from: inner, to: t}]\n",
	})
	run := func(t *testing.T, src string, input map[string]any, host Host) *Run {
		t.Helper()
		return runDiagram(t, env, src, input, host)
	}
	items := map[string]any{"items": []any{"good", "bad", "fine"}}

	for _, tc := range []struct {
		name, props string
		input       map[string]any
		want        string
	}{
		{"recursion", "diagram_name: loop", nil, "sub-diagrams nest more than 8 deep"},
		{"not found", "diagram_name: nowhere/to/be", nil, "sub-diagram nowhere/to/be not found in the files root " + filepath.Join(env.dir, "diagram-files") + " (tried examples/nowhere/to/be.light.yaml, nowhere/to/be.light.yaml"},
		{"pure list fails on an item", "diagram_name: picky, batch: true", items, `batch item 1 of 3: sub-diagram examples/picky.light.yaml: node "r" (db)`},
		{"steps count across sub-diagrams", "diagram_name: projects/many.yaml, batch: true", items, "stopped after 40 node runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := run(t, subParent(tc.props), tc.input, nil); r.Status != StatusFailed || !strings.Contains(r.Error, tc.want) {
				t.Errorf("%s %q, want failed with %q", r.Status, r.Error, tc.want)
			}
		})
	}
	t.Run("rich object keeps going", func(t *testing.T) {
		r := run(t, subParent("diagram_name: picky, batch: true, batch_parallel: true, output_mode: rich_object, result_key: done"), items, nil)
		if r.Status != StatusCompleted {
			t.Fatalf("%s %q", r.Status, r.Error)
		}
		out := r.Output.(map[string]any)
		want := []any{map[string]any{"index": 0.0, "output": "fine good"}, map[string]any{"index": 2.0, "output": "fine fine"}}
		if !reflect.DeepEqual(out["done"], want) || out["total_items"] != 3.0 || out["successful"] != 2.0 || out["failed"] != 1.0 {
			t.Errorf("output %#v", out)
		}
		errs, _ := out["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["index"] != 1.0 || !strings.Contains(errs[0].(map[string]any)["error"].(string), "missing.txt") {
			t.Errorf("errors %#v", out["errors"])
		}
	})
	t.Run("no items", func(t *testing.T) {
		r := run(t, subParent("diagram_name: shout, batch: true"), nil, nil)
		if r.Status != StatusCompleted || !reflect.DeepEqual(r.Output, []any{}) {
			t.Errorf("%s %q %#v", r.Status, r.Error, r.Output)
		}
	})
	t.Run("ignoreIfSub", func(t *testing.T) {
		r := run(t, subParent("diagram_name: skip"), nil, nil)
		if r.Status != StatusCompleted || r.Output != "inner gave " {
			t.Errorf("%s %q %#v", r.Status, r.Error, r.Output)
		}
	})
	t.Run("inline diagram_data", func(t *testing.T) {
		src := "version: light\nnodes:\n- {label: s, type: start}\n- label: sub\n  type: sub_diagram\n  passInputData: true\n  diagram_data:\n    version: light\n    nodes:\n    - {label: s, type: start}\n    - {label: t, type: template_job, template_content: 'inline {{ x }}'}\n    connections: [{from: s, to: t}]\nconnections: [{from: s, to: sub}]\n"
		r := run(t, src, map[string]any{"x": "ok"}, nil)
		if r.Status != StatusCompleted || r.Output != "inline ok" {
			t.Errorf("%s %q %#v", r.Status, r.Error, r.Output)
		}
	})
	t.Run("parallel items ask the host in turn", func(t *testing.T) {
		writeFiles(t, env, map[string]string{"examples/ask.light.yaml": "version: light\nnodes:\n- {label: s, type: start}\n- {label: p, type: person_job, default_prompt: 'say {{ default.default }}'}\nconnections: [{from: s, to: p}]\n"})
		h := &overlapHost{}
		r := run(t, subParent("diagram_name: ask, batch: true, batch_parallel: true"), map[string]any{"items": []any{"a", "b", "c", "d", "e"}}, h)
		if r.Status != StatusCompleted || len(r.Output.([]any)) != 5 {
			t.Fatalf("%s %q %#v", r.Status, r.Error, r.Output)
		}
		if h.overlaps.Load() != 0 {
			t.Errorf("%d requests reached the host while another was open", h.overlaps.Load())
		}
	})

	// Mistakes in the node itself are found when the diagram is read.
	for _, tc := range []struct{ props, want string }{
		{"batch: true", "a sub_diagram needs diagram_name"},
		{"diagram_name: x, diagram_format: native", "diagram_format native is not supported by junction"},
		{"diagram_name: ../../etc/x", "is not inside the files root"},
		{"diagram_name: x, batch: 'yes'", "batch: must be true or false"},
		{"diagram_name: x, output_mode: fancy", "unknown output_mode"},
	} {
		_, ps := env.pack.Check([]byte(subParent(tc.props)))
		if !strings.Contains(ps.Errors().Error(), tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.props, ps.Errors().Error(), tc.want)
		}
	}
	// A sub-diagram that is not valid is refused with its problems.
	writeFiles(t, env, map[string]string{"examples/broken.light.yaml": "version: light\nnodes:\n- {label: s, type: start}\n- {label: h, type: hook}\n"})
	if r := run(t, subParent("diagram_name: broken"), nil, nil); r.Status != StatusFailed || !strings.Contains(r.Error, `diagram examples/broken.light.yaml is not valid`) {
		t.Errorf("broken sub-diagram: %s %q", r.Status, r.Error)
	}
}

// runDiagram runs src on env's pack and waits for the run.
func runDiagram(t *testing.T, env *testEnv, src string, input map[string]any, host Host) *Run {
	t.Helper()
	r, err := env.pack.Run(t.Context(), RunRequest{Content: []byte(src), Input: input, Host: host})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// manySteps is a light diagram of a chain of n template nodes.
func manySteps(n int) string {
	var b strings.Builder
	b.WriteString("version: light\nnodes:\n- {label: n0, type: start}\n")
	for i := 1; i < n; i++ {
		b.WriteString("- {label: n" + strconv.Itoa(i) + ", type: template_job, template_content: x}\n")
	}
	b.WriteString("connections:\n")
	for i := 1; i < n; i++ {
		b.WriteString("- {from: n" + strconv.Itoa(i-1) + ", to: n" + strconv.Itoa(i) + "}\n")
	}
	return b.String()
}

// overlapHost counts requests that arrive while another is open.
type overlapHost struct {
	open, overlaps atomic.Int64
}

func (h *overlapHost) CreateMessage(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if h.open.Add(1) > 1 {
		h.overlaps.Add(1)
	}
	defer h.open.Add(-1)
	// Stay open until a second request arrives, or for 50 ms: without
	// serialization the other items' requests come within microseconds.
	deadline := time.Now().Add(50 * time.Millisecond)
	for h.open.Load() < 2 && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "ok"}}, nil
}

func (h *overlapHost) Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}
