package hostconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/junction-mcp/junction/internal/jsonc"
	"github.com/tailscale/hujson"
)

// This file edits JSON files the way a person would. A file is read with
// internal/jsonc (github.com/tailscale/hujson), whose tree keeps every
// byte: comments, blanks, trailing commas. An edit changes one member or
// value in a copy of the tree and packs it, so every other byte of the
// file (key order, spacing, comments, the keys of other tools) stays as
// it was. Files may have comments and trailing commas (VS Code's
// mcp.json allows both).

// maxDepth bounds nesting: a file nested deeper is refused, not read
// with a recursion that could exhaust the stack.
const maxDepth = 200

// jvalue is a value of a parsed file, with its byte span in the file: a
// view of hujson's tree that knows where the value is in it.
type jvalue struct {
	start, end int  // data[start:end] is the value
	kind       byte // '{', '[', '"', or 'x' for other scalars
	members    []jmember

	doc  *jsonc.Doc
	hv   *hujson.Value
	path []int // the indexes of the members from the root to hv
}

type jmember struct {
	key      string
	keyStart int // offset of the key's opening quote
	val      *jvalue
}

func (v *jvalue) get(key string) *jvalue {
	if i := v.index(key); i >= 0 {
		return v.members[i].val
	}
	return nil
}

// index returns the index of key's member, or -1.
func (v *jvalue) index(key string) int {
	if v == nil || v.kind != '{' {
		return -1
	}
	for i := len(v.members) - 1; i >= 0; i-- { // the last duplicate wins, as in most readers
		if v.members[i].key == key {
			return i
		}
	}
	return -1
}

// SyntaxError is a JSON file that could not be read.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// parseJSONC parses a whole document.
func parseJSONC(data []byte) (*jvalue, error) {
	doc, err := jsonc.Parse(data, jsonc.Limits{Depth: maxDepth})
	if err != nil {
		var je *jsonc.Error
		if errors.As(err, &je) {
			return nil, &SyntaxError{je.Line, je.Msg}
		}
		return nil, err
	}
	if doc.Empty {
		return nil, &SyntaxError{1, "the file is empty"}
	}
	return view(doc, &doc.Value, nil), nil
}

// view makes the jvalue of hv, at path in doc's tree, with its members'.
func view(doc *jsonc.Doc, hv *hujson.Value, path []int) *jvalue {
	v := &jvalue{start: doc.Base + hv.StartOffset, end: doc.Base + hv.EndOffset, doc: doc, hv: hv, path: path}
	switch x := hv.Value.(type) {
	case *hujson.Object:
		v.kind = '{'
		v.members = make([]jmember, len(x.Members))
		for i := range x.Members {
			m := &x.Members[i]
			v.members[i] = jmember{
				key:      m.Name.Value.(hujson.Literal).String(),
				keyStart: doc.Base + m.Name.StartOffset,
				val:      view(doc, &m.Value, append(path[:len(path):len(path)], i)),
			}
		}
	case *hujson.Array:
		v.kind = '['
	case hujson.Literal:
		v.kind = 'x'
		if x.Kind() == '"' {
			v.kind = '"'
		}
	}
	return v
}

// edit returns the file with f applied to v (in a copy of the tree).
func (v *jvalue) edit(f func(*hujson.Value)) []byte {
	doc := v.doc.Clone()
	hv := &doc.Value
	for _, i := range v.path {
		hv = &hv.Value.(*hujson.Object).Members[i].Value
	}
	f(hv)
	return doc.Pack()
}

// strict returns v as strict, compact JSON: no comments, blanks or
// trailing commas.
func (v *jvalue) strict() []byte {
	c := v.hv.Clone() // it may lose trailing commas; Minimize drops them anyway
	c.Minimize()
	return c.Pack()
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

// setMember sets key in the object obj to the JSON value val (strict
// JSON, compact or indented from column 0) and returns the file: it
// replaces the value in place when the key exists, or adds a member after
// the last one. Other bytes are kept.
func setMember(obj *jvalue, key string, val []byte) ([]byte, error) {
	data := obj.doc.Data()
	unit := indentUnit(data)
	if i := obj.index(key); i >= 0 {
		v, err := reindent(val, lineIndent(data, obj.members[i].val.start), unit)
		if err != nil {
			return nil, err
		}
		return obj.edit(func(o *hujson.Value) {
			o.Value.(*hujson.Object).Members[i].Value.Value = v
		}), nil
	}
	// Add. The object's members are indented one unit deeper than the
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
	return obj.edit(func(o *hujson.Value) {
		x := o.Value.(*hujson.Object)
		m := hujson.ObjectMember{
			Name:  hujson.Value{BeforeExtra: hujson.Extra("\n" + inner), Value: hujson.Literal(k)},
			Value: hujson.Value{BeforeExtra: hujson.Extra(" "), Value: v},
		}
		if n := len(x.Members); n > 0 {
			// What followed the last value before its comma (blanks, a
			// comment; non-nil for a trailing comma) now follows the new
			// one: the new member goes right after the last value.
			last := &x.Members[n-1].Value
			m.Value.AfterExtra, last.AfterExtra = last.AfterExtra, nil
		} else {
			// The member on a line of its own, after any comment that
			// was inside the empty object; the brace on the next line.
			m.Name.BeforeExtra = slices.Concat(bytes.TrimRight(x.AfterExtra, " \t\r\n"), m.Name.BeforeExtra)
			x.AfterExtra = hujson.Extra("\n" + outer)
		}
		x.Members = append(x.Members, m)
	}), nil
}

// removeMember returns the file without member i of obj and the comma
// that separated it from its neighbour; its line goes too when nothing
// else is on it.
func removeMember(obj *jvalue, i int) []byte {
	return obj.edit(func(o *hujson.Value) {
		x := o.Value.(*hujson.Object)
		m := x.Members
		switch {
		case i < len(m)-1:
			// Up to the next member's key: what was before this key, but
			// the blanks that indent it, then the next key's indentation.
			cur, next := m[i].Name.BeforeExtra, m[i+1].Name.BeforeExtra
			m[i+1].Name.BeforeExtra = slices.Concat(cur[:lineStartIfBlank(cur)], next[lineStartIfBlank(next):])
		case i > 0:
			// The last one: from the end of the value before. A trailing
			// comma goes with it when only blanks precede it; else it
			// stays, with what precedes it.
			after := m[i].Value.AfterExtra
			if len(bytes.Trim(after, " \t")) == 0 {
				after = nil
			}
			m[i-1].Value.AfterExtra = after
		default:
			// The only one: the object keeps what was before the key but
			// its indentation, what followed the value but a trailing
			// comma, and what was before the brace.
			before, after := m[i].Name.BeforeExtra, m[i].Value.AfterExtra
			if len(bytes.Trim(after, " \t")) == 0 {
				after = nil
			}
			x.AfterExtra = slices.Concat(before[:lineStartIfBlank(before)], after, x.AfterExtra)
		}
		x.Members = slices.Delete(m, i, i+1)
	})
}

// lineStartIfBlank returns the offset in extra (the blanks and comments
// before a key) where the key's line starts when only blanks precede the
// key there, so removing a member removes its indentation; else
// len(extra).
func lineStartIfBlank(extra []byte) int {
	i := len(extra)
	for i > 0 && (extra[i-1] == ' ' || extra[i-1] == '\t') {
		i--
	}
	if i > 0 && extra[i-1] == '\n' {
		return i
	}
	return len(extra)
}

// replaceValue returns the file of dst with dst's value replaced by src's
// (of another file), byte for byte; what surrounds dst is kept.
func replaceValue(dst, src *jvalue) []byte {
	// Not a Clone: it would lose a trailing comma (see jsonc.Doc.Clone);
	// Pack copies, and the edited tree is dropped after it.
	return dst.edit(func(v *hujson.Value) { v.Value = src.hv.Value })
}

// reindent indents strict JSON with unit, continuation lines prefixed by
// prefix, as a value for hujson's tree.
func reindent(val []byte, prefix, unit string) (hujson.ValueTrimmed, error) {
	var b bytes.Buffer
	if err := json.Indent(&b, compactJSON(val), prefix, unit); err != nil {
		return nil, err
	}
	v, err := hujson.Parse(b.Bytes())
	if err != nil {
		return nil, err
	}
	return v.Value, nil
}

func compactJSON(val []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, val); err != nil {
		return val
	}
	return b.Bytes()
}
