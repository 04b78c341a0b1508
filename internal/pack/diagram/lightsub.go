package diagram

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/errgroup"
	"gopkg.in/yaml.v3"
)

// A light sub_diagram node runs another diagram inside the run, as one
// node: once, or once per item of a list (batch). The other diagram is a
// file inside the files root, found by DiPeO's rules (subDiagramPaths), or
// a document given inline (diagram_data). It runs on the same engine, so
// the same limits and rules apply to it as to the diagram that runs it:
// its node runs count against the run's max_steps, command nodes stay off
// unless allowed, and its person_job and user_response nodes ask the same
// host.

// LightSubDiagram is DiPeO's sub_diagram node type.
const LightSubDiagram = "sub_diagram"

const (
	// maxSubDepth bounds how deep sub-diagrams nest: a diagram that runs
	// itself stops there with an error rather than running until max_steps.
	maxSubDepth = 8
	// subParallel bounds the batch items one node runs at once with
	// batch_parallel.
	subParallel = 4
	// defaultBatchKey is the variable a batch takes its items from when
	// batch_input_key is not set (DiPeO's default).
	defaultBatchKey = "items"
)

// subDiagramPaths lists where DiPeO looks for the diagram a sub_diagram
// node names, relative to the files root: a name with an extension as it
// is; otherwise NAME.light.yaml under projects/ and examples/ as given,
// under files/ for codegen/, and under examples/ for any other name. junction
// then also tries NAME.light.yaml, NAME.yaml and NAME as given.
func subDiagramPaths(name string) []string {
	if strings.Contains(path.Base(name), ".") {
		return []string{name}
	}
	var first string
	switch {
	case strings.HasPrefix(name, "projects/"), strings.HasPrefix(name, "examples/"):
		first = name + ".light.yaml"
	case strings.HasPrefix(name, "codegen/"):
		first = "files/" + name + ".light.yaml"
	default:
		first = "examples/" + name + ".light.yaml"
	}
	out := []string{first}
	for _, p := range []string{name + ".light.yaml", name + ".yaml", name} {
		if p != first {
			out = append(out, p)
		}
	}
	return out
}

// checkLightSub checks a sub_diagram node's properties when the diagram
// is read. The diagram it names is read when the node runs (it may be
// written by an earlier node).
func checkLightSub(ln *lightNode, at string, str func(string) string, errf func(nodeID, field, format string, args ...any)) {
	id := ln.label
	name := str("diagram_name")
	data, hasData := ln.props["diagram_data"]
	switch {
	case name == "" && (!hasData || data == nil):
		errf(id, at+".diagram_name", "a sub_diagram needs diagram_name (a diagram file inside the files root) or diagram_data (the diagram itself)")
	case name != "" && hasData && data != nil:
		errf(id, at+".diagram_data", "give diagram_name or diagram_data, not both")
	case hasData && data != nil:
		if _, ok := data.(map[string]any); !ok {
			errf(id, at+".diagram_data", "must be a diagram: a mapping with version, nodes and connections")
		}
	}
	if c := cleanSlash(name); name != "" && (strings.ContainsRune(name, 0) || strings.HasPrefix(c, "/") || c == ".." || strings.HasPrefix(c, "../")) {
		errf(id, at+".diagram_name", "%q is not inside the files root: name a diagram file inside it, relative to it", name)
	}
	switch f := str("diagram_format"); f {
	case "", "light":
	case "native", "readable":
		errf(id, at+".diagram_format", "diagram_format %s is not supported by junction: it runs DiPeO's light format (and its own)", f)
	default:
		errf(id, at+".diagram_format", "unknown diagram_format %q (light)", f)
	}
	for _, k := range []string{"batch", "batch_parallel", "passInputData", "pass_input_data", "ignoreIfSub", "ignore_if_sub"} {
		if v, present := ln.props[k]; present && v != nil {
			if _, ok := v.(bool); !ok {
				errf(id, at+"."+k, "must be true or false, not %s", typeName(v))
			}
		}
	}
	str("batch_input_key") // str reports a value that is not text
	str("result_key")
	switch m := str("output_mode"); m {
	case "", "pure_list", "rich_object":
	default:
		errf(id, at+".output_mode", "unknown output_mode %q (pure_list or rich_object)", m)
	}
}

// cleanSlash cleans a name written with either slash.
func cleanSlash(s string) string { return path.Clean(strings.ReplaceAll(s, `\`, "/")) }

// flag reads a boolean property under either of its names.
func (n *lightNode) flag(names ...string) bool {
	for _, k := range names {
		if b, ok := n.props[k].(bool); ok {
			return b
		}
	}
	return false
}

// lightSub runs a sub_diagram node.
func (e *engine) lightSub(ctx context.Context, n *Node, vars map[string]any) (any, error) {
	ln := n.light
	if e.depth > 0 && ln.flag("ignoreIfSub", "ignore_if_sub") {
		return nil, nil
	}
	if e.depth >= maxSubDepth {
		return nil, fmt.Errorf("sub-diagrams nest more than %d deep: does a diagram run itself?", maxSubDepth)
	}
	name, d, err := e.loadSub(ln)
	if err != nil {
		return nil, err
	}
	if !ln.flag("batch") {
		input := map[string]any{}
		if ln.flag("passInputData", "pass_input_data") {
			for k, v := range vars {
				input[k] = v
			}
		}
		return e.runSub(ctx, name, d, input)
	}

	key := ln.str("batch_input_key")
	if key == "" {
		key = defaultBatchKey
	}
	items := batchItems(vars, key)
	inputs := make([]map[string]any, len(items))
	for i, item := range items {
		in := map[string]any{"_batch_index": float64(i), "_batch_total": float64(len(items))}
		if m, ok := item.(map[string]any); ok && key == "default" {
			for k, v := range m {
				in[k] = v
			}
		} else {
			in["default"] = item
		}
		for k, v := range vars {
			if k != key && k != "default" {
				in[k] = v
			}
		}
		inputs[i] = in
	}

	results := make([]any, len(items))
	errs := make([]error, len(items))
	g, gctx := errgroup.WithContext(ctx)
	limit := 1
	sub := e
	if ln.flag("batch_parallel") && !e.inParallel {
		limit = subParallel
		cp := *e
		cp.inParallel = true
		// Items that ask the host do so one at a time.
		if e.host != nil {
			cp.host = &serialHost{h: e.host}
		}
		sub = &cp
	}
	g.SetLimit(limit)
	rich := ln.str("output_mode") == "rich_object"
	acct := &batchBytes{e: e, items: len(items)}
	defer acct.release()
	for i := range items {
		if gctx.Err() != nil {
			break // an item failed, or a limit was reached: start no more
		}
		g.Go(func() error {
			out, err := sub.runSub(gctx, name, d, inputs[i])
			if err != nil {
				errs[i] = err
				if !rich {
					return fmt.Errorf("batch item %d of %d: %w", i, len(items), err)
				}
				return acct.add(i, map[string]any{"index": float64(i), "error": err.Error(), "item": items[i]})
			}
			results[i] = map[string]any{"index": float64(i), "output": out}
			return acct.add(i, results[i])
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if !rich {
		return results, nil
	}
	ok := make([]any, 0, len(items))
	var failed []any
	for i := range items {
		if errs[i] != nil {
			failed = append(failed, map[string]any{"index": float64(i), "error": errs[i].Error(), "item": items[i]})
			continue
		}
		ok = append(ok, results[i])
	}
	resultKey := ln.str("result_key")
	if resultKey == "" {
		resultKey = "results"
	}
	out := map[string]any{
		"total_items": float64(len(items)),
		"successful":  float64(len(ok)),
		"failed":      float64(len(failed)),
		resultKey:     ok,
		"errors":      nil,
	}
	if failed != nil {
		out["errors"] = failed
	}
	return out, nil
}

// batchBytes counts a batch's results as they arrive, against the
// node's output limit (max_node_output_bytes) and, with everything else
// the run holds, the run's (max_run_bytes): the batch stops at the first
// item over either, instead of holding every item's output first.
type batchBytes struct {
	e     *engine
	items int

	mu       sync.Mutex
	total    int   // the results so far, as JSON, with a comma each
	reserved int64 // added to e.held; release gives it back
}

// add counts the result of item i.
func (b *batchBytes) add(i int, result any) error {
	n := jsonSizeAtMost(result, b.e.maxOutputBytes)
	if n < 0 {
		return fmt.Errorf("batch item %d of %d: output cannot be expressed as JSON", i, b.items)
	}
	b.mu.Lock()
	b.total += n + 1
	b.reserved += int64(n)
	total := b.total
	b.mu.Unlock()
	held := b.e.held.Add(int64(n))
	e := b.e
	switch {
	case e.maxOutputBytes > 0 && total > e.maxOutputBytes:
		return &LimitError{Setting: "max_node_output_bytes", msg: fmt.Sprintf("batch item %d of %d: with this item the batch's output comes to %d bytes, over the limit of %d bytes per node output; the batch stopped there", i, b.items, total, e.maxOutputBytes)}
	case e.maxRunBytes > 0 && held > int64(e.maxRunBytes):
		return &LimitError{Setting: "max_run_bytes", msg: fmt.Sprintf("batch item %d of %d: with this item the run's node outputs come to %d bytes, over the limit of %d bytes per run; the batch stopped there", i, b.items, held, e.maxRunBytes)}
	}
	return nil
}

// release gives back what the batch counted: once it returns, its output
// is counted as the node's.
func (b *batchBytes) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.e.held.Add(-b.reserved)
	b.reserved = 0
}

// batchItems finds a batch's items among a node's variables: the variable
// named key, or that key of the default input; a value that is not a list
// is one item. No such variable is no items.
func batchItems(vars map[string]any, key string) []any {
	v, ok := vars[key]
	if !ok {
		if m, isMap := vars["default"].(map[string]any); isMap {
			v, ok = m[key]
		}
	}
	if !ok || v == nil {
		return nil
	}
	if list, isList := v.([]any); isList {
		return list
	}
	return []any{v}
}

// loadSub reads, parses and checks the diagram a sub_diagram node runs.
func (e *engine) loadSub(ln *lightNode) (string, *Diagram, error) {
	if e.check == nil {
		return "", nil, errors.New("sub-diagrams are not available here")
	}
	var name string
	var src []byte
	if data, ok := ln.props["diagram_data"].(map[string]any); ok {
		name = "(diagram_data)"
		b, err := yaml.Marshal(data)
		if err != nil {
			return name, nil, fmt.Errorf("diagram_data: %v", err)
		}
		src = b
	} else {
		name = ln.str("diagram_name")
		var firstErr error
		for _, p := range subDiagramPaths(cleanSlash(name)) {
			b, err := e.readFile(p)
			if err == nil {
				name, src = p, b
				firstErr = nil
				break
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if firstErr != nil {
			if errors.Is(firstErr, fs.ErrNotExist) {
				return name, nil, fmt.Errorf("sub-diagram %s not found in the files root %s (tried %s; the diagram pack's files_root setting names the root)", name, e.filesRoot, strings.Join(subDiagramPaths(cleanSlash(name)), ", "))
			}
			return name, nil, fmt.Errorf("sub-diagram %s: %v", name, firstErr)
		}
	}
	d, ps := e.check(src)
	if errs := ps.Errors(); len(errs) > 0 {
		return name, nil, &InvalidDiagramError{Diagram: name, Problems: errs}
	}
	return name, d, nil
}

// runSub runs d as a sub-diagram of e's run, with input as its run input,
// and returns its output.
func (e *engine) runSub(ctx context.Context, name string, d *Diagram, input map[string]any) (any, error) {
	sub := *e
	sub.light = nil
	sub.depth = e.depth + 1
	out := sub.run(ctx, d, input, nil)
	if out.err != nil {
		if ctx.Err() != nil {
			return nil, out.err
		}
		return nil, fmt.Errorf("sub-diagram %s: %w", name, out.err)
	}
	return out.output, nil
}

// serialHost lets one request at a time through to a host: the items of a
// parallel batch ask their questions in turn.
type serialHost struct {
	mu sync.Mutex
	h  Host
}

var _ Host = (*serialHost)(nil)

func (s *serialHost) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.CreateMessage(ctx, p)
}

func (s *serialHost) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h.Elicit(ctx, p)
}
