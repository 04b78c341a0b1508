package diagram

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// Node types.
const (
	TypeStart     = "start"
	TypeTool      = "tool"
	TypeHTTP      = "http"
	TypeTemplate  = "template"
	TypeCondition = "condition"
	TypeEndpoint  = "endpoint"
	TypeCommand   = "command"
)

// nodeFields lists, for each node type, the fields it may carry besides
// id, type and description.
var nodeFields = sync.OnceValue(func() map[string][]string {
	return map[string][]string{
		TypeStart:     nil,
		TypeTool:      {"tool", "args", "timeout"},
		TypeHTTP:      {"method", "url", "headers", "body", "json", "ignore_status", "timeout"},
		TypeTemplate:  {"template", "format"},
		TypeCondition: {"if"},
		TypeEndpoint:  {"output"},
		TypeCommand:   {"command", "stdin", "ignore_exit", "timeout"},
	}
})

// nodeTypes returns the known node types, in documentation order.
func nodeTypes() []string {
	return []string{TypeStart, TypeTool, TypeHTTP, TypeTemplate, TypeCondition, TypeEndpoint, TypeCommand}
}

// A Diagram is a parsed diagram file: nodes joined by edges. See
// docs/diagrams.md for the format.
type Diagram struct {
	Version     int     `yaml:"version,omitempty" json:"version,omitempty"`
	Name        string  `yaml:"name,omitempty" json:"name,omitempty"`
	Description string  `yaml:"description,omitempty" json:"description,omitempty"`
	Nodes       []*Node `yaml:"nodes" json:"nodes"`
	Edges       []*Edge `yaml:"edges,omitempty" json:"edges,omitempty"`

	// light is set when the document was DiPeO's light format.
	light *lightDiagram
}

// Light reports whether d was read from DiPeO's light format.
func (d *Diagram) Light() bool { return d.light != nil }

// A Node is one step. Which fields apply depends on Type.
type Node struct {
	ID          string `yaml:"id" json:"id"`
	Type        string `yaml:"type" json:"type"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`

	// tool
	Tool string `yaml:"tool,omitempty" json:"tool,omitempty"`
	Args any    `yaml:"args,omitempty" json:"args,omitempty"`

	// http
	Method       string            `yaml:"method,omitempty" json:"method,omitempty"`
	URL          string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers      map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	Body         string            `yaml:"body,omitempty" json:"body,omitempty"`
	JSON         any               `yaml:"json,omitempty" json:"json,omitempty"`
	IgnoreStatus bool              `yaml:"ignore_status,omitempty" json:"ignore_status,omitempty"`

	// template
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
	Format   string `yaml:"format,omitempty" json:"format,omitempty"`

	// condition
	If string `yaml:"if,omitempty" json:"if,omitempty"`

	// endpoint
	Output any `yaml:"output,omitempty" json:"output,omitempty"`

	// command
	Command    []string `yaml:"command,omitempty" json:"command,omitempty"`
	Stdin      string   `yaml:"stdin,omitempty" json:"stdin,omitempty"`
	IgnoreExit bool     `yaml:"ignore_exit,omitempty" json:"ignore_exit,omitempty"`

	// tool, http, command
	Timeout string `yaml:"timeout,omitempty" json:"timeout,omitempty"`

	// index is the node's position in Diagram.Nodes, for field paths.
	index int
	// keys are the YAML keys the node was written with, in order.
	keys []string
	// light is the DiPeO node this one was translated from.
	light *lightNode
}

// An Edge joins two nodes. Label is free text, except on the edges leaving
// a condition node, where it must be "true" or "false" and chooses the
// branch.
type Edge struct {
	From  string `yaml:"from" json:"from"`
	To    string `yaml:"to" json:"to"`
	Label string `yaml:"label,omitempty" json:"label,omitempty"`

	index int
	keys  []string
}

// A Problem is one thing wrong with a diagram. Field is a path into the
// document, such as "nodes[2].tool" or "edges[0].to"; NodeID names the node
// when there is one.
type Problem struct {
	Phase    string `json:"phase"`    // "parse" or "validate"
	Severity string `json:"severity"` // "error" or "warning"
	NodeID   string `json:"node_id,omitempty"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	if p.NodeID != "" {
		fmt.Fprintf(&b, "node %q: ", p.NodeID)
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is a list of problems; as an error it reads as all of them.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "; ")
}

// Errors returns only the problems of severity "error".
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if p.Severity == "error" {
			out = append(out, p)
		}
	}
	return out
}

// maxDiagramBytes bounds a diagram document.
const maxDiagramBytes = 1 << 20

// Parse reads a diagram document (YAML, or JSON, which is YAML too). It
// reports every structural problem it finds (unknown keys, wrong types,
// fields that do not belong to a node's type) as [Problems]; a document
// that is not YAML at all gives a single parse problem. Parse does not
// check the graph: see [Validate].
func Parse(src []byte) (*Diagram, Problems) {
	if len(src) > maxDiagramBytes {
		return nil, Problems{{Phase: "parse", Severity: "error", Message: fmt.Sprintf("diagram is %d bytes; the limit is %d", len(src), maxDiagramBytes)}}
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Problems{{Phase: "parse", Severity: "error", Message: "diagram is empty"}}
		}
		return nil, Problems{{Phase: "parse", Severity: "error", Message: "not valid YAML: " + err.Error()}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, Problems{{Phase: "parse", Severity: "error", Message: "diagram must be a single YAML document"}}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		return nil, Problems{{Phase: "parse", Severity: "error", Message: "diagram must be a mapping with nodes and edges"}}
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k, v := doc.Content[i], doc.Content[i+1]; k.Value == "version" && v.Kind == yaml.ScalarNode && strings.EqualFold(strings.TrimSpace(v.Value), "light") {
			return parseLight(doc)
		}
	}
	var ps Problems
	add := func(nodeID, field, format string, args ...any) {
		ps = append(ps, Problem{Phase: "parse", Severity: "error", NodeID: nodeID, Field: field, Message: fmt.Sprintf(format, args...)})
	}
	d := &Diagram{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		key, val := doc.Content[i].Value, doc.Content[i+1]
		switch key {
		case "version":
			if err := val.Decode(&d.Version); err != nil {
				add("", "version", "must be 1 (junction's format) or light (DiPeO's light format)")
			}
		case "name":
			if err := val.Decode(&d.Name); err != nil {
				add("", "name", "must be a string")
			}
		case "description":
			if err := val.Decode(&d.Description); err != nil {
				add("", "description", "must be a string")
			}
		case "nodes":
			if val.Kind != yaml.SequenceNode {
				add("", "nodes", "must be a list of nodes")
				continue
			}
			for j, nv := range val.Content {
				n, nps := parseNode(j, nv)
				ps = append(ps, nps...)
				if n != nil {
					d.Nodes = append(d.Nodes, n)
				}
			}
		case "edges":
			if val.Kind != yaml.SequenceNode {
				add("", "edges", "must be a list of edges")
				continue
			}
			for j, ev := range val.Content {
				e, eps := parseEdge(j, ev)
				ps = append(ps, eps...)
				if e != nil {
					d.Edges = append(d.Edges, e)
				}
			}
		default:
			add("", key, "unknown field (known: version, name, description, nodes, edges)")
		}
	}
	return d, ps
}

func parseNode(i int, v *yaml.Node) (*Node, Problems) {
	path := fmt.Sprintf("nodes[%d]", i)
	if v.Kind != yaml.MappingNode {
		return nil, Problems{{Phase: "parse", Severity: "error", Field: path, Message: "a node must be a mapping with id and type"}}
	}
	n := &Node{index: i}
	var ps Problems
	for k := 0; k+1 < len(v.Content); k += 2 {
		n.keys = append(n.keys, v.Content[k].Value)
	}
	// Decode field by field, so one wrong type does not hide the others.
	for k := 0; k+1 < len(v.Content); k += 2 {
		key, val := v.Content[k].Value, v.Content[k+1]
		single := yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{v.Content[k], val}}
		if err := single.Decode(n); err != nil {
			ps = append(ps, Problem{Phase: "parse", Severity: "error", Field: path + "." + key, Message: "wrong type: " + yamlErrText(err)})
		}
	}
	for j := range ps {
		ps[j].NodeID = n.ID
	}
	return n, ps
}

func parseEdge(i int, v *yaml.Node) (*Edge, Problems) {
	path := fmt.Sprintf("edges[%d]", i)
	if v.Kind != yaml.MappingNode {
		return nil, Problems{{Phase: "parse", Severity: "error", Field: path, Message: "an edge must be a mapping with from and to"}}
	}
	e := &Edge{index: i}
	var ps Problems
	for k := 0; k+1 < len(v.Content); k += 2 {
		key, val := v.Content[k].Value, v.Content[k+1]
		e.keys = append(e.keys, key)
		var dst *string
		switch key {
		case "from":
			dst = &e.From
		case "to":
			dst = &e.To
		case "label":
			dst = &e.Label
		default:
			ps = append(ps, Problem{Phase: "parse", Severity: "error", Field: path + "." + key, Message: "unknown field (known: from, to, label)"})
			continue
		}
		if err := val.Decode(dst); err != nil || val.Kind != yaml.ScalarNode {
			ps = append(ps, Problem{Phase: "parse", Severity: "error", Field: path + "." + key, Message: "must be a string"})
		}
	}
	return e, ps
}

// yamlErrText trims yaml.v3's "yaml: unmarshal errors:\n  line N: " prefix.
func yamlErrText(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	return strings.TrimSpace(s)
}

// knownNodeField reports whether key may appear on a node of type typ.
func knownNodeField(typ, key string) bool {
	switch key {
	case "id", "type", "description":
		return true
	}
	return slices.Contains(nodeFields()[typ], key)
}
