package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

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
// comments (// and /* */) and trailing commas, so this reader does too.
// Everything else is strict JSON: one value, double-quoted keys, no
// duplicate keys.
func parseJSON(data []byte) (*node, error) {
	p := &jsonParser{data: data, line: 1}
	p.data = bytes.TrimPrefix(p.data, []byte("\xef\xbb\xbf"))
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos >= len(p.data) {
		return &node{kind: nullNode, line: 1}, nil
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos < len(p.data) {
		return nil, p.errorf("invalid JSON: unexpected %s after the top-level value", p.what())
	}
	return n, nil
}

type jsonParser struct {
	data  []byte
	pos   int
	line  int
	count int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return &FieldError{Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

func (p *jsonParser) what() string {
	if p.pos >= len(p.data) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(p.data[p.pos:])
	return fmt.Sprintf("character %q", r)
}

// space skips whitespace and comments, counting lines.
func (p *jsonParser) space() error {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '\n':
			p.line++
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			start := p.line
			p.pos += 2
			for {
				if p.pos+1 >= len(p.data) {
					p.line = start
					return p.errorf("invalid JSON: unterminated /* comment")
				}
				if p.data[p.pos] == '*' && p.data[p.pos+1] == '/' {
					p.pos += 2
					break
				}
				if p.data[p.pos] == '\n' {
					p.line++
				}
				p.pos++
			}
		default:
			return nil
		}
	}
	return nil
}

func (p *jsonParser) value(depth int) (*node, error) {
	p.count++
	if p.count > maxNodes {
		return nil, p.errorf("document too large (more than %d values)", maxNodes)
	}
	if depth > maxDepth {
		return nil, p.errorf("document nested more than %d levels deep", maxDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("invalid JSON: unexpected end of file")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		line := p.line
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &node{kind: scalarNode, line: line, value: s, tag: "str"}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
			p.pos += len(lit)
			if lit == "null" {
				return &node{kind: nullNode, line: p.line}, nil
			}
			return &node{kind: scalarNode, line: p.line, value: lit, tag: "bool"}, nil
		}
	}
	return nil, p.errorf("invalid JSON: unexpected %s", p.what())
}

func (p *jsonParser) object(depth int) (*node, error) {
	n := &node{kind: mapNode, line: p.line}
	p.pos++ // {
	seen := make(map[string]int)
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return n, nil
		}
		if len(n.entries) > 0 {
			if p.pos >= len(p.data) || p.data[p.pos] != ',' {
				return nil, p.errorf("invalid JSON: expected ',' or '}' after an object member, found %s", p.what())
			}
			p.pos++
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.pos < len(p.data) && p.data[p.pos] == '}' { // trailing comma
				p.pos++
				return n, nil
			}
		}
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("invalid JSON: expected a double-quoted key, found %s", p.what())
		}
		line := p.line
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if prev, ok := seen[key]; ok {
			return nil, &FieldError{Line: line, Msg: fmt.Sprintf("key %q appears twice (first on line %d)", key, prev)}
		}
		seen[key] = line
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("invalid JSON: expected ':' after key %q, found %s", key, p.what())
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.entries = append(n.entries, entry{key: key, line: line, val: v})
	}
}

func (p *jsonParser) array(depth int) (*node, error) {
	n := &node{kind: seqNode, line: p.line}
	p.pos++ // [
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return n, nil
		}
		if len(n.items) > 0 {
			if p.pos >= len(p.data) || p.data[p.pos] != ',' {
				return nil, p.errorf("invalid JSON: expected ',' or ']' after a list item, found %s", p.what())
			}
			p.pos++
			if err := p.space(); err != nil {
				return nil, err
			}
			if p.pos < len(p.data) && p.data[p.pos] == ']' {
				p.pos++
				return n, nil
			}
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, v)
	}
}

// str reads a JSON string at p.pos and unquotes it with encoding/json, so
// escapes follow the standard exactly.
func (p *jsonParser) str() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; c {
		case '\\':
			p.pos += 2
			continue
		case '\n':
			return "", p.errorf("invalid JSON: line break inside a string")
		case '"':
			p.pos++
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return "", p.errorf("invalid JSON: bad string %s", truncate(string(p.data[start:p.pos]), 40))
			}
			return s, nil
		}
		p.pos++
	}
	return "", p.errorf("invalid JSON: unterminated string")
}

func (p *jsonParser) number() (*node, error) {
	start := p.pos
	for p.pos < len(p.data) && strings.IndexByte("+-0123456789.eE", p.data[p.pos]) >= 0 {
		p.pos++
	}
	text := string(p.data[start:p.pos])
	if !json.Valid([]byte(text)) {
		return nil, p.errorf("invalid JSON: bad number %q", text)
	}
	tag := "int"
	if strings.ContainsAny(text, ".eE") {
		tag = "float"
	}
	return &node{kind: scalarNode, line: p.line, value: text, tag: tag}, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
