package diagram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Caller calls a tool the hub serves, by its exposed name.
// *junction.Hub is one.
type Caller interface {
	Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// engine runs one diagram. Its zero value is not usable; see Pack.
type engine struct {
	caller         Caller
	httpClient     *http.Client
	allowCommands  bool
	maxOutputBytes int
	maxRunBytes    int
	maxSteps       int
	// host answers person_job and user_response nodes; nil without one.
	host Host
	// filesRoot is where light diagrams' db, endpoint and template_job
	// nodes read and write.
	filesRoot string
	// light is the run's state when it runs a light diagram.
	light *lightState
	// check parses and validates a diagram document as the pack does: a
	// sub_diagram node's diagram is checked like any other.
	check func(src []byte) (*Diagram, Problems)
	// depth is how deep this run is nested in sub-diagrams (0: the run).
	depth int
	// steps counts the node runs of a run and of its sub-diagrams, which
	// max_steps bounds together; set when the run starts.
	steps *atomic.Int64
	// held counts the bytes (as JSON) of the node outputs the run holds:
	// its own, those of its sub-diagrams in progress, and the items a
	// batch has collected so far. max_run_bytes bounds them together, so
	// nesting and batches do not multiply what a run may hold. Set when
	// the run starts.
	held *atomic.Int64
	// inParallel is set inside the items of a parallel batch: a batch
	// there runs its items one at a time, so a run never has more than
	// subParallel items in progress at once.
	inParallel bool
}

// A LimitError is a run stopped, or refused, by one of the pack's
// limits. Setting names the pack setting that changes the limit.
type LimitError struct {
	Setting string
	msg     string
}

func (e *LimitError) Error() string {
	return e.msg + " (the diagram pack's " + e.Setting + " setting)"
}

// jsonSize is the size of v as JSON; -1 if it is not JSON.
func jsonSize(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return -1
	}
	return len(b)
}

// stepFunc is told about every node that finished, so progress can be
// saved while the run goes on.
type stepFunc func(nodeID string, output any)

// outcome is what a run produced.
type outcome struct {
	output   any            // the last endpoint's output
	outputs  map[string]any // every node's latest output
	executed []string       // node ids in the order they ran (repeats for loops)
	err      error          // nil when completed
}

type edgeState int

const (
	edgePending edgeState = iota
	edgeTaken
	edgeDead
)

type nodeState int

const (
	nodePending nodeState = iota
	nodeDone
	nodeDead
)

type graphEdge struct {
	*Edge
	back bool // closes a loop (found by depth-first search from start)
}

// NodeError is a run failure at one node.
type NodeError struct {
	NodeID string
	Type   string
	Err    error
}

func (e *NodeError) Error() string { return fmt.Sprintf("node %q (%s): %v", e.NodeID, e.Type, e.Err) }
func (e *NodeError) Unwrap() error { return e.Err }

// run executes d, which must have passed Validate. Nodes run one at a
// time; a node runs once every forward edge into it is settled (taken, or
// dead because its branch was not chosen) and at least one was taken. A
// taken loop edge (one that goes back to an earlier node) runs its target
// again, and everything after it.
func (e *engine) run(ctx context.Context, d *Diagram, input map[string]any, step stepFunc) *outcome {
	if input == nil {
		input = map[string]any{}
	}
	out := &outcome{outputs: map[string]any{}, executed: []string{}}
	if d.light != nil {
		e.light = newLightState(d)
	}
	if e.depth == 0 || e.steps == nil {
		e.steps = new(atomic.Int64)
	}
	if e.depth == 0 || e.held == nil {
		e.held = new(atomic.Int64)
	}
	byID := make(map[string]*Node, len(d.Nodes))
	var start *Node
	for _, n := range d.Nodes {
		byID[n.ID] = n
		if n.Type == TypeStart && start == nil {
			start = n
		}
	}
	if start == nil {
		out.err = errors.New("diagram has no start node")
		return out
	}
	edges := make([]*graphEdge, len(d.Edges))
	outEdges := make(map[string][]int)
	inFwd := make(map[string][]int)
	for i, ed := range d.Edges {
		edges[i] = &graphEdge{Edge: ed}
		outEdges[ed.From] = append(outEdges[ed.From], i)
	}
	markBackEdges(start.ID, edges, outEdges)
	for i, ed := range edges {
		if !ed.back {
			inFwd[ed.To] = append(inFwd[ed.To], i)
		}
	}

	es := make([]edgeState, len(edges))
	ns := make(map[string]nodeState, len(d.Nodes))
	data := map[string]any{"input": input}
	var queue []string
	var lastEndpoint *string
	enqueue := func(id string) {
		if !slices.Contains(queue, id) {
			queue = append(queue, id)
		}
	}
	var settle func(id string)
	settle = func(id string) {
		if ns[id] != nodePending || id == start.ID {
			return
		}
		taken := false
		for _, i := range inFwd[id] {
			switch es[i] {
			case edgePending:
				return
			case edgeTaken:
				taken = true
			}
		}
		if taken {
			enqueue(id)
			return
		}
		ns[id] = nodeDead
		for _, i := range outEdges[id] {
			if !edges[i].back {
				es[i] = edgeDead
				settle(edges[i].To)
			}
		}
	}
	loopBack := func(target string) {
		fwd := make(map[string][]string)
		for _, ed := range edges {
			if !ed.back {
				fwd[ed.From] = append(fwd[ed.From], ed.To)
			}
		}
		reset := closure(target, fwd)
		for id := range reset {
			ns[id] = nodePending
			for _, i := range outEdges[id] {
				if !edges[i].back {
					es[i] = edgePending
				}
			}
		}
		queue = slices.DeleteFunc(queue, func(id string) bool { return reset[id] })
		enqueue(target)
	}

	queue = []string{start.ID}
	// sizes holds the JSON size of each node's latest output; their sum
	// is in e.held, with the rest of the run's, bounded by maxRunBytes.
	sizes := make(map[string]int, len(d.Nodes))
	if e.depth > 0 {
		// A sub-diagram's outputs are dropped when it ends: only its
		// output goes on, counted by the node that ran it.
		defer func() {
			total := 0
			for _, n := range sizes {
				total += n
			}
			e.held.Add(-int64(total))
		}()
	}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			out.err = context.Cause(ctx)
			return out
		}
		id := queue[0]
		queue = queue[1:]
		n := byID[id]
		if steps := e.steps.Add(1); e.maxSteps > 0 && steps > int64(e.maxSteps) {
			out.err = &LimitError{Setting: "max_steps", msg: fmt.Sprintf("stopped after %d node runs, the step limit: does a loop never end?", e.maxSteps)}
			return out
		}
		var incoming []string
		for _, i := range inFwd[id] {
			if es[i] == edgeTaken {
				incoming = append(incoming, edges[i].From)
			}
		}
		val, err := e.runNode(ctx, n, data, incoming, input)
		if err == nil {
			var size int
			size, err = e.checkSize(val)
			held := e.held.Add(int64(size - sizes[id]))
			sizes[id] = size
			if err == nil && e.maxRunBytes > 0 && held > int64(e.maxRunBytes) {
				err = e.runBytesError(held)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				out.err = context.Cause(ctx)
			} else {
				out.err = &NodeError{NodeID: id, Type: n.Type, Err: err}
			}
			return out
		}
		ns[id] = nodeDone
		data[id] = val
		out.outputs[id] = val
		out.executed = append(out.executed, id)
		if step != nil {
			step(id, val)
		}
		if n.Type == TypeEndpoint {
			lastEndpoint = &n.ID
		}
		// Forward edges first: a loop edge resets what they settled.
		var loops []string
		for _, i := range outEdges[id] {
			ed := edges[i]
			taken := true
			if n.Type == TypeCondition {
				taken = ed.Label == fmt.Sprint(val)
			}
			switch {
			case ed.back:
				if taken {
					loops = append(loops, ed.To)
				}
			case taken:
				es[i] = edgeTaken
				settle(ed.To)
			default:
				es[i] = edgeDead
				settle(ed.To)
			}
		}
		for _, target := range loops {
			loopBack(target)
		}
	}
	if lastEndpoint == nil && d.light != nil && len(out.executed) > 0 {
		// A light diagram may end anywhere: its output is the last
		// node's.
		lastEndpoint = &out.executed[len(out.executed)-1]
	}
	if lastEndpoint == nil {
		out.err = errors.New("the run ended without reaching an endpoint node")
		return out
	}
	out.output = out.outputs[*lastEndpoint]
	return out
}

// markBackEdges flags the edges that close a loop: those that lead to a
// node still on the depth-first path from start.
func markBackEdges(start string, edges []*graphEdge, outEdges map[string][]int) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		for _, i := range outEdges[id] {
			switch color[edges[i].To] {
			case grey:
				edges[i].back = true
			case white:
				visit(edges[i].To)
			}
		}
		color[id] = black
	}
	visit(start)
}

// runBytesError is the error for a run whose node outputs (with its
// sub-diagrams' and its batches') come to held bytes, over max_run_bytes.
func (e *engine) runBytesError(held int64) error {
	return &LimitError{Setting: "max_run_bytes", msg: fmt.Sprintf("with this output the run's node outputs come to %d bytes, over the limit of %d bytes per run", held, e.maxRunBytes)}
}

// outputLimit is the most bytes one node's output may take: the
// max_node_output_bytes setting, and never more than maxRenderBytes.
func (e *engine) outputLimit() int {
	if e.maxOutputBytes > 0 {
		return min(e.maxOutputBytes, maxRenderBytes)
	}
	return maxRenderBytes
}

// renderOverLimit is the error for a template whose text, the node's
// output, would pass limit bytes ([engine.outputLimit]).
func (e *engine) renderOverLimit(limit int) error {
	if e.maxOutputBytes > 0 && limit == e.maxOutputBytes {
		return &LimitError{Setting: "max_node_output_bytes", msg: fmt.Sprintf("the rendered text passes the limit of %d bytes per node output; rendering stopped there", limit)}
	}
	return fmt.Errorf("the rendered text passes the limit of %d bytes; rendering stopped there", limit)
}

// checkSize returns the size of a node's output as JSON, and an error if
// it is over the output limit or not JSON at all. It measures without
// encoding, and stops at the limit.
func (e *engine) checkSize(v any) (int, error) {
	n := jsonSizeAtMost(v, e.maxOutputBytes)
	switch {
	case n < 0:
		return 0, errors.New("output cannot be expressed as JSON")
	case e.maxOutputBytes > 0 && n > e.maxOutputBytes:
		return n, &LimitError{Setting: "max_node_output_bytes", msg: fmt.Sprintf("output is over the limit of %d bytes per node output", e.maxOutputBytes)}
	}
	return n, nil
}

func nodeTimeout(n *Node, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(n.Timeout); err == nil && d > 0 {
		return d
	}
	return def
}

func (e *engine) runNode(ctx context.Context, n *Node, data map[string]any, incoming []string, input map[string]any) (any, error) {
	if n.light != nil && e.light != nil {
		return e.runLight(ctx, n, data)
	}
	switch n.Type {
	case TypeStart:
		return input, nil
	case TypeTool:
		return e.runTool(ctx, n, data)
	case TypeHTTP:
		return e.runHTTP(ctx, n, data)
	case TypeTemplate:
		// The text is the node's output, unless it is JSON to decode.
		limit, over := e.outputLimit(), e.renderOverLimit
		if n.Format == "json" {
			limit, over = maxRenderBytes, nil
		}
		s, err := renderAtMost(n.ID, n.Template, data, limit, over)
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		if n.Format == "json" {
			var v any
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, fmt.Errorf("template: format is json, but the text is not JSON: %v", err)
			}
			return v, nil
		}
		return s, nil
	case TypeCondition:
		s, err := render(n.ID, n.If, data)
		if err != nil {
			return nil, fmt.Errorf("if: %v", err)
		}
		switch strings.TrimSpace(s) {
		case "true":
			return true, nil
		case "false", "":
			return false, nil
		}
		return nil, fmt.Errorf("if: rendered %q; a condition must render true or false", s)
	case TypeEndpoint:
		if n.Output != nil {
			v, err := renderValue(n.ID, n.Output, data)
			if err != nil {
				return nil, fmt.Errorf("output: %v", err)
			}
			return v, nil
		}
		if len(incoming) == 1 {
			return data[incoming[0]], nil
		}
		m := make(map[string]any, len(incoming))
		for _, id := range incoming {
			m[id] = data[id]
		}
		return m, nil
	case TypeCommand:
		if !e.allowCommands {
			return nil, errors.New("command nodes are disabled on this hub (the diagram pack's allow_commands setting turns them on)")
		}
		return e.runCommand(ctx, n, data)
	}
	return nil, fmt.Errorf("unknown node type %q", n.Type)
}

// runTool calls a hub tool. Its output is the structured content when
// there is some, else the text content (decoded when it is JSON).
func (e *engine) runTool(ctx context.Context, n *Node, data map[string]any) (any, error) {
	args := map[string]any{}
	if n.Args != nil {
		v, err := renderValue(n.ID+".args", n.Args, data)
		if err != nil {
			return nil, fmt.Errorf("args: %v", err)
		}
		args, _ = v.(map[string]any)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("args: %v", err)
	}
	if n.Timeout != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, nodeTimeout(n, 0))
		defer cancel()
	}
	res, err := e.caller.Call(ctx, n.Tool, raw)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %v", n.Tool, err)
	}
	text := contentText(res)
	if res.IsError {
		return nil, fmt.Errorf("tool %s failed: %s", n.Tool, text)
	}
	if res.StructuredContent != nil {
		b, err := json.Marshal(res.StructuredContent)
		if err == nil {
			var v any
			if json.Unmarshal(b, &v) == nil {
				return v, nil
			}
		}
	}
	var v any
	if t := strings.TrimSpace(text); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &v) == nil {
		return v, nil
	}
	return text, nil
}

func contentText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}
