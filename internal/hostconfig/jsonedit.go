package hostconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// This file edits JSON files the way a person would: it finds the span of
// one value and replaces it, so every other byte of the file (key order,
// spacing, comments, the keys of other tools) stays as it was. It reads
// JSON with comments and trailing commas (VS Code's mcp.json allows both).

// jvalue is a parsed value with its byte span in the document.
type jvalue struct {
	start, end int  // data[start:end] is the value
	kind       byte // '{', '[', '"', or 'x' for other scalars
	members    []jmember
}

type jmember struct {
	key      string
	keyStart int // offset of the key's opening quote
	val      *jvalue
}

func (v *jvalue) get(key string) *jvalue {
	if v == nil || v.kind != '{' {
		return nil
	}
	for i := len(v.members) - 1; i >= 0; i-- { // the last duplicate wins, as in most readers
		if v.members[i].key == key {
			return v.members[i].val
		}
	}
	return nil
}

type jparser struct {
	data []byte
	pos  int
	line int
}

// SyntaxError is a JSON file that could not be read.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// parseJSONC parses a whole document.
func parseJSONC(data []byte) (*jvalue, error) {
	p := &jparser{data: data}
	p.skip()
	if p.pos >= len(data) {
		return nil, &SyntaxError{1, "the file is empty"}
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.pos < len(data) {
		return nil, p.errorf("unexpected %q after the top-level value", data[p.pos])
	}
	return v, nil
}

func (p *jparser) errorf(format string, args ...any) error {
	line := 1 + bytes.Count(p.data[:min(p.pos, len(p.data))], []byte("\n"))
	return &SyntaxError{line, fmt.Sprintf(format, args...)}
}

// skip passes whitespace and comments.
func (p *jparser) skip() {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			end := bytes.Index(p.data[p.pos+2:], []byte("*/"))
			if end < 0 {
				p.pos = len(p.data)
				return
			}
			p.pos += 2 + end + 2
		case c == 0xEF && bytes.HasPrefix(p.data[p.pos:], []byte("\xEF\xBB\xBF")) && p.pos == 0:
			p.pos += 3 // a byte order mark
		default:
			return
		}
	}
}

func (p *jparser) value(depth int) (*jvalue, error) {
	if depth > 200 {
		return nil, p.errorf("nested too deeply")
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of file")
	}
	start := p.pos
	switch c := p.data[p.pos]; c {
	case '{':
		v := &jvalue{start: start, kind: '{'}
		p.pos++
		for {
			p.skip()
			if p.pos >= len(p.data) {
				return nil, p.errorf("unexpected end of file in an object")
			}
			if p.data[p.pos] == '}' {
				p.pos++
				v.end = p.pos
				return v, nil
			}
			if len(v.members) > 0 {
				if p.data[p.pos] != ',' {
					return nil, p.errorf("expected ',' or '}' in an object, got %q", p.data[p.pos])
				}
				p.pos++
				p.skip()
				if p.pos < len(p.data) && p.data[p.pos] == '}' { // trailing comma
					p.pos++
					v.end = p.pos
					return v, nil
				}
			}
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return nil, p.errorf("expected a quoted key in an object")
			}
			keyStart := p.pos
			kv, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			var key string
			if err := json.Unmarshal(p.data[kv.start:kv.end], &key); err != nil {
				return nil, p.errorf("bad key: %v", err)
			}
			p.skip()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.errorf("expected ':' after key %q", key)
			}
			p.pos++
			p.skip()
			val, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.members = append(v.members, jmember{key: key, keyStart: keyStart, val: val})
		}
	case '[':
		v := &jvalue{start: start, kind: '['}
		p.pos++
		n := 0
		for {
			p.skip()
			if p.pos >= len(p.data) {
				return nil, p.errorf("unexpected end of file in a list")
			}
			if p.data[p.pos] == ']' {
				p.pos++
				v.end = p.pos
				return v, nil
			}
			if n > 0 {
				if p.data[p.pos] != ',' {
					return nil, p.errorf("expected ',' or ']' in a list, got %q", p.data[p.pos])
				}
				p.pos++
				p.skip()
				if p.pos < len(p.data) && p.data[p.pos] == ']' {
					p.pos++
					v.end = p.pos
					return v, nil
				}
			}
			if _, err := p.value(depth + 1); err != nil {
				return nil, err
			}
			n++
		}
	case '"':
		p.pos++
		for p.pos < len(p.data) {
			switch p.data[p.pos] {
			case '\\':
				p.pos += 2
				continue
			case '"':
				p.pos++
				return &jvalue{start: start, end: p.pos, kind: '"'}, nil
			case '\n':
				return nil, p.errorf("newline in a string")
			}
			p.pos++
		}
		return nil, p.errorf("unterminated string")
	default:
		for p.pos < len(p.data) && strings.IndexByte(",}] \t\r\n/", p.data[p.pos]) < 0 {
			p.pos++
		}
		tok := string(p.data[start:p.pos])
		if tok == "" {
			return nil, p.errorf("unexpected %q", c)
		}
		var x any
		if err := json.Unmarshal([]byte(tok), &x); err != nil {
			return nil, p.errorf("bad value %q", tok)
		}
		return &jvalue{start: start, end: p.pos, kind: 'x'}, nil
	}
}

// cleanJSON returns data[v.start:v.end] as strict JSON (comments and
// trailing commas removed), indented with indent and each line after the
// first prefixed with prefix.
func cleanJSON(data []byte, v *jvalue, prefix, indent string) ([]byte, error) {
	var out bytes.Buffer
	src := data[v.start:v.end]
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			out.Write(src[i : j+1])
			i = j
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := bytes.Index(src[i+2:], []byte("*/"))
			i += 2 + end + 1
		case c == ',':
			// Drop a trailing comma: the next significant byte closes.
			k := i + 1
			for k < len(src) && (src[k] == ' ' || src[k] == '\t' || src[k] == '\n' || src[k] == '\r') {
				k++
			}
			if k < len(src) && (src[k] == '}' || src[k] == ']') {
				continue
			}
			out.WriteByte(c)
		default:
			out.WriteByte(c)
		}
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), prefix, indent); err != nil {
		return nil, err
	}
	return ind.Bytes(), nil
}

// lineIndent returns the whitespace that starts the line holding offset.
func lineIndent(data []byte, offset int) string {
	start := bytes.LastIndexByte(data[:offset], '\n') + 1
	end := start
	for end < len(data) && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}

// indentUnit guesses the file's indentation step: a tab, or the smallest
// run of leading spaces; two spaces when the file has no indented line.
func indentUnit(data []byte) string {
	best := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) > 0 && line[0] == '\t' {
			return "\t"
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		if n > 0 && n < len(line) && (best == 0 || n < best) {
			best = n
		}
	}
	if best == 0 {
		best = 2
	}
	return strings.Repeat(" ", best)
}

// replaceSpan returns data with data[start:end] replaced by repl.
func replaceSpan(data []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(data)-(end-start)+len(repl))
	out = append(out, data[:start]...)
	out = append(out, repl...)
	return append(out, data[end:]...)
}

// setMember sets key in the object obj of data to the JSON value val
// (strict JSON, compact or indented from column 0): it replaces the value
// in place when the key exists, or inserts a member before the closing
// brace. Other bytes are kept.
func setMember(data []byte, obj *jvalue, key string, val []byte) ([]byte, error) {
	unit := indentUnit(data)
	if m := obj.get(key); m != nil {
		ind := lineIndent(data, m.start)
		v, err := reindent(val, ind, unit)
		if err != nil {
			return nil, err
		}
		return replaceSpan(data, m.start, m.end, v), nil
	}
	// Insert. The object's members are indented one unit deeper than the
	// line of its opening brace, or like its existing members.
	outer := lineIndent(data, obj.start)
	inner := outer + unit
	if len(obj.members) > 0 {
		inner = lineIndent(data, obj.members[0].keyStart)
	}
	v, err := reindent(val, inner, unit)
	if err != nil {
		return nil, err
	}
	k, _ := json.Marshal(key)
	member := string(k) + ": " + string(v)
	if len(obj.members) == 0 {
		repl := "{\n" + inner + member + "\n" + outer + "}"
		return replaceSpan(data, obj.start, obj.end, []byte(repl)), nil
	}
	last := obj.members[len(obj.members)-1].val
	return replaceSpan(data, last.end, last.end, []byte(",\n"+inner+member)), nil
}

// reindent indents strict JSON with unit, continuation lines prefixed by
// prefix.
func reindent(val []byte, prefix, unit string) ([]byte, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, compactJSON(val), prefix, unit); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func compactJSON(val []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, val); err != nil {
		return val
	}
	return b.Bytes()
}
