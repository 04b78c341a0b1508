package diagram

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// ValidateOptions say what the world around a diagram offers. A nil
// *ValidateOptions checks the diagram on its own: any tool name is
// accepted and command nodes are refused.
type ValidateOptions struct {
	// HasTool reports whether the hub serves a tool by that name. Nil
	// accepts every name.
	HasTool func(name string) bool
	// AllowCommands permits command nodes.
	AllowCommands bool
	// MaxNodes bounds the number of nodes and MaxFanOut the number of
	// edges leaving one node; zero does not limit.
	MaxNodes, MaxFanOut int
}

var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// reservedIDs are data keys a node id may not take.
var reservedIDs = []string{"input"}

var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Validate reports every problem with d: node ids, types and fields; the
// start and endpoint nodes; edges; nodes the start cannot reach; cycles
// that do not pass through a condition; template references to outputs
// that cannot exist when the node runs; unknown tools; command nodes when
// they are not allowed. An empty result means d can run.
func Validate(d *Diagram, opts *ValidateOptions) Problems {
	var o ValidateOptions
	if opts != nil {
		o = *opts
	}
	v := &validator{d: d, opts: o}
	v.check()
	return v.ps
}

type validator struct {
	d    *Diagram
	opts ValidateOptions
	ps   Problems
	byID map[string]*Node
}

func (v *validator) errorf(nodeID, field, format string, args ...any) {
	v.ps = append(v.ps, Problem{Phase: "validate", Severity: "error", NodeID: nodeID, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) check() {
	d := v.d
	if d.Version != 0 && d.Version != 1 {
		v.errorf("", "version", "unsupported version %d (this junction reads version 1)", d.Version)
	}
	if len(d.Nodes) == 0 {
		v.errorf("", "nodes", "diagram has no nodes")
		return
	}
	if v.opts.MaxNodes > 0 && len(d.Nodes) > v.opts.MaxNodes {
		// The graph checks cost more than linear time: stop here.
		v.errorf("", "nodes", "diagram has %d nodes, over the limit of %d (the diagram pack's max_nodes setting)", len(d.Nodes), v.opts.MaxNodes)
		return
	}
	v.byID = make(map[string]*Node)
	var starts, endpoints []*Node
	for _, n := range d.Nodes {
		path := fmt.Sprintf("nodes[%d]", n.index)
		switch {
		case n.ID == "":
			v.errorf("", path+".id", "missing node id")
		case !idPattern().MatchString(n.ID):
			v.errorf(n.ID, path+".id", "node id must start with a letter or _ and contain only letters, digits and _ (it is used in templates as .%s)", n.ID)
		case slices.Contains(reservedIDs, n.ID):
			v.errorf(n.ID, path+".id", "%q is reserved for the run's input", n.ID)
		case v.byID[n.ID] != nil:
			v.errorf(n.ID, path+".id", "duplicate node id (also nodes[%d])", v.byID[n.ID].index)
		default:
			v.byID[n.ID] = n
		}
		if n.light != nil {
			// Checked by parseLight; the graph checks below apply.
			switch n.Type {
			case TypeStart:
				starts = append(starts, n)
			case TypeEndpoint:
				endpoints = append(endpoints, n)
			case LightCodeJob:
				if !v.opts.AllowCommands {
					v.errorf(n.light.label, path+".type", "code_job nodes run programs, and are disabled on this hub (turn them on with the diagram pack's allow_commands setting, or JUNCTION_DIAGRAM_ALLOW_COMMANDS=1)")
				}
			}
			continue
		}
		if _, ok := nodeFields()[n.Type]; !ok {
			if n.Type == "" {
				v.errorf(n.ID, path+".type", "missing node type (one of %s)", strings.Join(nodeTypes(), ", "))
			} else {
				v.errorf(n.ID, path+".type", "unknown node type %q (one of %s)", n.Type, strings.Join(nodeTypes(), ", "))
			}
			continue
		}
		for _, k := range n.keys {
			if !knownNodeField(n.Type, k) {
				v.errorf(n.ID, path+"."+k, "unknown field for a %s node (allowed: %s)", n.Type, strings.Join(append([]string{"id", "type", "description"}, nodeFields()[n.Type]...), ", "))
			}
		}
		switch n.Type {
		case TypeStart:
			starts = append(starts, n)
		case TypeEndpoint:
			endpoints = append(endpoints, n)
		}
		v.checkFields(n, path)
	}
	if len(starts) == 0 {
		v.errorf("", "nodes", "diagram has no start node (add a node with type: start)")
	}
	for _, s := range starts[min(1, len(starts)):] {
		v.errorf(s.ID, fmt.Sprintf("nodes[%d].type", s.index), "a diagram has exactly one start node; %q is already one", starts[0].ID)
	}
	if len(endpoints) == 0 && d.light == nil { // DiPeO's diagrams may end anywhere
		v.errorf("", "nodes", "diagram has no endpoint node (add a node with type: endpoint)")
	}
	v.checkEdges()
	var start *Node
	if len(starts) > 0 {
		start = starts[0]
	}
	v.checkGraph(start)
}

func (v *validator) checkFields(n *Node, path string) {
	if n.Timeout != "" {
		if d, err := time.ParseDuration(n.Timeout); err != nil || d <= 0 {
			v.errorf(n.ID, path+".timeout", "must be a positive duration such as 30s or 2m, not %q", n.Timeout)
		}
	}
	switch n.Type {
	case TypeTool:
		switch {
		case n.Tool == "":
			v.errorf(n.ID, path+".tool", "missing tool name")
		case v.opts.HasTool != nil && !v.opts.HasTool(n.Tool):
			v.errorf(n.ID, path+".tool", "unknown tool %q: the hub serves no tool by that name", n.Tool)
		}
		if n.Args != nil {
			if _, ok := n.Args.(map[string]any); !ok {
				v.errorf(n.ID, path+".args", "must be a mapping of argument names to values")
			} else if _, err := json.Marshal(n.Args); err != nil {
				v.errorf(n.ID, path+".args", "cannot be expressed as JSON: %v", err)
			}
		}
	case TypeHTTP:
		if n.URL == "" {
			v.errorf(n.ID, path+".url", "missing url")
		} else if !strings.Contains(n.URL, "{{") {
			if u, err := url.Parse(n.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.errorf(n.ID, path+".url", "must be an absolute http:// or https:// URL, not %q", n.URL)
			}
		}
		if n.Method != "" && !slices.Contains(httpMethods, strings.ToUpper(n.Method)) {
			v.errorf(n.ID, path+".method", "unknown method %q (one of %s)", n.Method, strings.Join(httpMethods, ", "))
		}
		if n.Body != "" && n.JSON != nil {
			v.errorf(n.ID, path+".json", "give body or json, not both")
		}
		if n.JSON != nil {
			if _, err := json.Marshal(n.JSON); err != nil {
				v.errorf(n.ID, path+".json", "cannot be expressed as JSON: %v", err)
			}
		}
	case TypeTemplate:
		if n.Template == "" {
			v.errorf(n.ID, path+".template", "missing template text")
		}
		if n.Format != "" && n.Format != "text" && n.Format != "json" {
			v.errorf(n.ID, path+".format", "unknown format %q (text or json)", n.Format)
		}
	case TypeCondition:
		if n.If == "" {
			v.errorf(n.ID, path+".if", "missing condition (a template that renders true or false)")
		}
	case TypeEndpoint:
		if n.Output != nil {
			if _, err := json.Marshal(n.Output); err != nil {
				v.errorf(n.ID, path+".output", "cannot be expressed as JSON: %v", err)
			}
		}
	case TypeCommand:
		if !v.opts.AllowCommands {
			v.errorf(n.ID, path+".type", "command nodes are disabled on this hub (turn them on with the diagram pack's allow_commands setting, or JUNCTION_DIAGRAM_ALLOW_COMMANDS=1)")
		}
		if len(n.Command) == 0 || n.Command[0] == "" {
			v.errorf(n.ID, path+".command", "missing command (a list: program, then arguments)")
		}
	}
}

// templatesOf returns every template string of n, by field path.
func templatesOf(n *Node, path string) map[string]string {
	out := make(map[string]string)
	put := func(field, s string) {
		if s != "" {
			out[path+"."+field] = s
		}
	}
	switch n.Type {
	case TypeTool:
		for k, s := range stringsIn(path+".args", n.Args) {
			out[k] = s
		}
	case TypeHTTP:
		put("url", n.URL)
		put("body", n.Body)
		for k, h := range n.Headers {
			put("headers."+k, h)
		}
		for k, s := range stringsIn(path+".json", n.JSON) {
			out[k] = s
		}
	case TypeTemplate:
		put("template", n.Template)
	case TypeCondition:
		put("if", n.If)
	case TypeEndpoint:
		for k, s := range stringsIn(path+".output", n.Output) {
			out[k] = s
		}
	case TypeCommand:
		for i, a := range n.Command {
			put(fmt.Sprintf("command[%d]", i), a)
		}
		put("stdin", n.Stdin)
	}
	return out
}

func (v *validator) checkEdges() {
	outLabels := make(map[string][]string)
	for _, e := range v.d.Edges {
		path := fmt.Sprintf("edges[%d]", e.index)
		from, to := v.byID[e.From], v.byID[e.To]
		switch {
		case e.From == "":
			v.errorf("", path+".from", "missing source node id")
		case from == nil:
			v.errorf(e.From, path+".from", "no node has id %q", e.From)
		}
		switch {
		case e.To == "":
			v.errorf("", path+".to", "missing target node id")
		case to == nil:
			v.errorf(e.To, path+".to", "no node has id %q", e.To)
		}
		if from != nil && from.Type == TypeEndpoint {
			v.errorf(from.ID, path+".from", "an endpoint node ends the run and cannot have outgoing edges")
		}
		if to != nil && to.Type == TypeStart {
			v.errorf(to.ID, path+".to", "the start node cannot have incoming edges")
		}
		if from != nil && from.Type == TypeCondition {
			if e.Label != "true" && e.Label != "false" {
				v.errorf(from.ID, path+".label", "an edge leaving a condition needs label \"true\" or \"false\", not %q", e.Label)
			}
			outLabels[from.ID] = append(outLabels[from.ID], e.Label)
		}
	}
	if v.opts.MaxFanOut > 0 {
		fanOut := make(map[string]int)
		for _, e := range v.d.Edges {
			fanOut[e.From]++
		}
		for _, n := range v.d.Nodes {
			if c := fanOut[n.ID]; c > v.opts.MaxFanOut && v.byID[n.ID] == n {
				v.errorf(n.ID, fmt.Sprintf("nodes[%d]", n.index), "%d edges leave this node, over the limit of %d (the diagram pack's max_fan_out setting)", c, v.opts.MaxFanOut)
			}
		}
	}
	for _, n := range v.d.Nodes {
		if n.Type == TypeCondition && v.byID[n.ID] == n && len(outLabels[n.ID]) == 0 {
			v.errorf(n.ID, fmt.Sprintf("nodes[%d]", n.index), "a condition node needs outgoing edges labelled \"true\" and/or \"false\"")
		}
	}
}

// checkGraph checks reachability from start (when there is one), cycles
// and template references.
func (v *validator) checkGraph(start *Node) {
	succ := make(map[string][]string)
	pred := make(map[string][]string)
	for _, e := range v.d.Edges {
		if v.byID[e.From] != nil && v.byID[e.To] != nil {
			succ[e.From] = append(succ[e.From], e.To)
			pred[e.To] = append(pred[e.To], e.From)
		}
	}
	if start != nil {
		reach := closure(start.ID, succ)
		for _, n := range v.d.Nodes {
			if v.byID[n.ID] == n && !reach[n.ID] {
				v.errorf(n.ID, fmt.Sprintf("nodes[%d]", n.index), "not reachable from the start node %q", start.ID)
			}
		}
	}

	// Every cycle must pass through a condition: the graph without
	// condition nodes must be acyclic.
	plain := make(map[string][]string)
	for from, tos := range succ {
		if v.byID[from].Type == TypeCondition {
			continue
		}
		for _, to := range tos {
			if v.byID[to].Type != TypeCondition {
				plain[from] = append(plain[from], to)
			}
		}
	}
	for _, cyc := range cycles(v.d.Nodes, plain) {
		n := v.byID[cyc[0]]
		v.errorf(n.ID, "edges", "cycle without a condition: %s (a loop must pass through a condition node, or it never ends)", strings.Join(append(cyc, cyc[0]), " → "))
	}

	for _, n := range v.d.Nodes {
		if v.byID[n.ID] != n {
			continue
		}
		// Outputs that can exist when n runs: nodes with a path to n.
		before := closure(n.ID, pred)
		if !slices.Contains(pred[n.ID], n.ID) && !cyclesThrough(n.ID, succ) {
			delete(before, n.ID)
		}
		tpls := templatesOf(n, fmt.Sprintf("nodes[%d]", n.index))
		fields := make([]string, 0, len(tpls))
		for f := range tpls {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			refs, err := templateRefs(tpls[f])
			if err != nil {
				v.errorf(n.ID, f, "bad template: %s", strings.TrimPrefix(err.Error(), "template: t:"))
				continue
			}
			for _, r := range refs {
				switch {
				case r == "input":
				case v.byID[r] == nil:
					v.errorf(n.ID, f, "template refers to .%s, but no node has that id (use .input for the run's input)", r)
				case !before[r]:
					v.errorf(n.ID, f, "template refers to .%s, whose output cannot exist yet: node %q does not run before %q on any path", r, r, n.ID)
				}
			}
		}
	}
}

// closure returns the nodes reachable from id through next, including id.
func closure(id string, next map[string][]string) map[string]bool {
	seen := map[string]bool{id: true}
	stack := []string{id}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				stack = append(stack, m)
			}
		}
	}
	return seen
}

// cyclesThrough reports whether id lies on a cycle.
func cyclesThrough(id string, succ map[string][]string) bool {
	for _, m := range succ[id] {
		if closure(m, succ)[id] {
			return true
		}
	}
	return false
}

// cycles returns one cycle (as a node list) per strongly connected
// component of g that has one, in node order.
func cycles(nodes []*Node, g map[string][]string) [][]string {
	index := make(map[string]int)
	low := make(map[string]int)
	onStack := make(map[string]bool)
	var stack []string
	var out [][]string
	next := 0
	var strong func(v string)
	strong = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range g[v] {
			if _, ok := index[w]; !ok {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 || slices.Contains(g[v], v) {
				out = append(out, cycleIn(v, comp, g))
			}
		}
	}
	for _, n := range nodes {
		if _, ok := index[n.ID]; !ok && n.ID != "" {
			strong(n.ID)
		}
	}
	return out
}

// cycleIn walks from v inside comp until it returns to v, for a readable
// cycle in an error message.
func cycleIn(v string, comp []string, g map[string][]string) []string {
	in := make(map[string]bool, len(comp))
	for _, c := range comp {
		in[c] = true
	}
	// Breadth-first search for the shortest way back to v.
	prev := map[string]string{}
	queue := []string{v}
	seen := map[string]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range g[n] {
			if !in[m] {
				continue
			}
			if m == v {
				path := []string{n}
				for p := n; p != v; {
					p = prev[p]
					path = append(path, p)
				}
				slices.Reverse(path)
				return path
			}
			if !seen[m] {
				seen[m] = true
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return []string{v}
}
