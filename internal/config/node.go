package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/junction-mcp/junction/internal/jsonc"
	"github.com/tailscale/hujson"
	"gopkg.in/yaml.v3"
)

// node is one value of a config document, in a form shared by the YAML and
// JSON readers so that the strict decoder (decode.go) gives the same
// messages, with line numbers, for both.
type node struct {
	kind    nodeKind
	line    int
	entries []entry // kind == mapNode, in document order
	items   []*node // kind == seqNode
	value   string  // kind == scalarNode: the text (strings unquoted)
	tag     string  // kind == scalarNode: "str", "int", "float" or "bool"
}

type entry struct {
	key  string
	line int
	val  *node
}

type nodeKind int

const (
	nullNode nodeKind = iota
	mapNode
	seqNode
	scalarNode
)

func (n *node) describe() string {
	switch n.kind {
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a list"
	case nullNode:
		return "null"
	}
	switch n.tag {
	case "str":
		return fmt.Sprintf("the string %q", n.value)
	case "bool":
		return "the boolean " + n.value
	}
	return "the number " + n.value
}

// maxNodes bounds the size of a document after YAML aliases are expanded,
// so a "billion laughs" file is an error, not an out-of-memory crash.
const maxNodes = 200_000

// maxDepth bounds nesting, for the same reason.
const maxDepth = 100

// sniff guesses the format of data: JSON when the first significant byte
// opens an object or array, YAML otherwise.
func sniff(data []byte) string {
	t := bytes.TrimLeft(data, " \t\r\n\ufeff")
	t = bytes.TrimPrefix(t, []byte("\xef\xbb\xbf"))
	t = bytes.TrimLeft(t, " \t\r\n")
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return "json"
	}
	return "yaml"
}

// --- YAML ---

func parseYAML(data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &node{kind: nullNode, line: 1}, nil
		}
		return nil, &FieldError{Line: yamlErrLine(err), Msg: "invalid YAML: " + yamlErrMsg(err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &FieldError{Line: extra.Line, Msg: "invalid YAML: more than one document in the file"}
	}
	c := &yamlConv{}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return &node{kind: nullNode, line: 1}, nil
		}
		root = root.Content[0]
	}
	return c.conv(root, 0)
}

// yamlErrLine and yamlErrMsg pull "line N: msg" apart from yaml.v3's errors
// ("yaml: line 3: mapping values are not allowed in this context").
func yamlErrLine(err error) int {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				return n
			}
		}
	}
	return 0
}

func yamlErrMsg(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if _, err := strconv.Atoi(rest[:i]); err == nil {
				return strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return s
}

type yamlConv struct{ count int }

func (c *yamlConv) conv(y *yaml.Node, depth int) (*node, error) {
	c.count++
	if c.count > maxNodes {
		return nil, &FieldError{Line: y.Line, Msg: fmt.Sprintf("document too large (more than %d values after expanding aliases)", maxNodes)}
	}
	if depth > maxDepth {
		return nil, &FieldError{Line: y.Line, Msg: fmt.Sprintf("document nested more than %d levels deep", maxDepth)}
	}
	switch y.Kind {
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &FieldError{Line: y.Line, Msg: "invalid YAML: unknown alias"}
		}
		n, err := c.conv(y.Alias, depth+1)
		if err != nil {
			return nil, err
		}
		cp := *n
		cp.line = y.Line
		return &cp, nil
	case yaml.MappingNode:
		n := &node{kind: mapNode, line: y.Line}
		seen := make(map[string]int)
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, &FieldError{Line: k.Line, Msg: "mapping keys must be plain strings"}
			}
			if k.Value == "<<" && k.Tag == "!!merge" {
				return nil, &FieldError{Line: k.Line, Msg: "YAML merge keys (<<) are not supported; repeat the settings"}
			}
			if prev, ok := seen[k.Value]; ok {
				return nil, &FieldError{Line: k.Line, Msg: fmt.Sprintf("key %q appears twice (first on line %d)", k.Value, prev)}
			}
			seen[k.Value] = k.Line
			val, err := c.conv(v, depth+1)
			if err != nil {
				return nil, err
			}
			n.entries = append(n.entries, entry{key: k.Value, line: k.Line, val: val})
		}
		return n, nil
	case yaml.SequenceNode:
		n := &node{kind: seqNode, line: y.Line}
		for _, it := range y.Content {
			v, err := c.conv(it, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		return n, nil
	case yaml.ScalarNode:
		switch y.ShortTag() {
		case "!!null":
			return &node{kind: nullNode, line: y.Line}, nil
		case "!!bool":
			b, err := strconv.ParseBool(strings.ToLower(y.Value))
			if err != nil {
				// YAML 1.1 spellings (yes/no/on/off) that yaml.v3 tags as bool.
				return &node{kind: scalarNode, line: y.Line, value: y.Value, tag: "str"}, nil
			}
			return &node{kind: scalarNode, line: y.Line, value: strconv.FormatBool(b), tag: "bool"}, nil
		case "!!int":
			return &node{kind: scalarNode, line: y.Line, value: y.Value, tag: "int"}, nil
		case "!!float":
			return &node{kind: scalarNode, line: y.Line, value: y.Value, tag: "float"}, nil
		case "!!str", "!!timestamp", "!!binary":
			return &node{kind: scalarNode, line: y.Line, value: y.Value, tag: "str"}, nil
		}
		return nil, &FieldError{Line: y.Line, Msg: fmt.Sprintf("unsupported YAML tag %s", y.Tag)}
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{kind: nullNode, line: y.Line}, nil
		}
		return c.conv(y.Content[0], depth)
	}
	return nil, &FieldError{Line: y.Line, Msg: "invalid YAML node"}
}

// --- JSON ---

// parseJSON reads JSON as the hosts write it: VS Code's mcp.json allows
// comments (// and /* */) and trailing commas, so this reader does too
// (internal/jsonc, which reads with hujson). Everything else is strict
// JSON: one value, double-quoted keys, no duplicate keys.
func parseJSON(data []byte) (*node, error) {
	doc, err := jsonc.Parse(data, jsonc.Limits{Depth: maxDepth, Values: maxNodes})
	if err != nil {
		var je *jsonc.Error
		if !errors.As(err, &je) {
			return nil, &FieldError{Line: 1, Msg: "invalid JSON: " + err.Error()}
		}
		if je.Limit {
			return nil, &FieldError{Line: je.Line, Msg: je.Msg}
		}
		return nil, &FieldError{Line: je.Line, Msg: "invalid JSON: " + je.Msg}
	}
	if doc.Empty {
		return &node{kind: nullNode, line: 1}, nil
	}
	return jsonNode(doc, &doc.Value)
}

// jsonNode converts hujson's tree, whose depth jsonc.Parse has bounded,
// to nodes, with the line of each value and key.
func jsonNode(doc *jsonc.Doc, v *hujson.Value) (*node, error) {
	line := doc.Line(v.StartOffset)
	switch x := v.Value.(type) {
	case *hujson.Object:
		n := &node{kind: mapNode, line: line, entries: make([]entry, 0, len(x.Members))}
		seen := make(map[string]int, len(x.Members))
		for i := range x.Members {
			m := &x.Members[i]
			key := m.Name.Value.(hujson.Literal).String()
			kl := doc.Line(m.Name.StartOffset)
			if prev, ok := seen[key]; ok {
				return nil, &FieldError{Line: kl, Msg: fmt.Sprintf("key %q appears twice (first on line %d)", key, prev)}
			}
			seen[key] = kl
			val, err := jsonNode(doc, &m.Value)
			if err != nil {
				return nil, err
			}
			n.entries = append(n.entries, entry{key: key, line: kl, val: val})
		}
		return n, nil
	case *hujson.Array:
		n := &node{kind: seqNode, line: line, items: make([]*node, 0, len(x.Elements))}
		for i := range x.Elements {
			it, err := jsonNode(doc, &x.Elements[i])
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, it)
		}
		return n, nil
	case hujson.Literal:
		switch x.Kind() {
		case 'n':
			return &node{kind: nullNode, line: line}, nil
		case 't', 'f':
			return &node{kind: scalarNode, line: line, value: string(x), tag: "bool"}, nil
		case '"':
			return &node{kind: scalarNode, line: line, value: x.String(), tag: "str"}, nil
		case '0':
			tag := "int"
			if bytes.ContainsAny(x, ".eE") {
				tag = "float"
			}
			return &node{kind: scalarNode, line: line, value: string(x), tag: tag}, nil
		}
	}
	return nil, &FieldError{Line: line, Msg: "invalid JSON value"}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
