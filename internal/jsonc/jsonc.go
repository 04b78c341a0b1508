// Package jsonc reads JSON with comments (// and /* */) and trailing
// commas, as VS Code and the MCP hosts write their files, with
// github.com/tailscale/hujson: its tree keeps every byte of the file, so
// a caller can change one value and pack the file again with every other
// byte as it was. Both readers of such files use it: internal/config
// (junction's config) and internal/hostconfig (the hosts' files, edited
// by junction connect).
//
// Around hujson this package adds what the callers need and hujson does
// not do:
//
//   - limits: hujson recurses once per level of nesting without a bound,
//     so deep input could exhaust the stack (a fatal error in Go, not a
//     panic). Parse first scans the tokens (strings, comments, brackets;
//     nothing is built) and refuses a document nested deeper than the
//     limit, or holding more values, before hujson sees it;
//   - a UTF-8 byte order mark at the start, which hujson rejects;
//   - a // comment on the last line without a line break, which hujson
//     rejects (its line comments end with "\n");
//   - errors with a line and a message that says what was expected
//     (hujson gives the line and column in its message text only).
//
// Duplicate keys are kept, in order; it is for the caller to refuse them.
package jsonc

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tailscale/hujson"
)

// Limits bound a document.
type Limits struct {
	// Depth: a value inside more than Depth objects and arrays is an
	// error. It must be positive: it is what keeps hujson's recursion
	// bounded.
	Depth int
	// Values: more values (objects, arrays and scalars; not keys) than
	// this is an error. 0: no limit.
	Values int
}

// Error is a document that could not be read.
type Error struct {
	// Offset is the byte of the input where reading stopped, Line (from
	// 1) its line.
	Offset, Line int
	// Msg says what is wrong: "expected ',' or '}' after an object
	// member, found end of file".
	Msg string
	// Limit: a limit of Limits was passed; the document may be valid
	// JSON.
	Limit bool
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Doc is a parsed document. It is not safe for concurrent use.
type Doc struct {
	// Value is the document's tree. Its offsets (StartOffset, EndOffset)
	// count from the input after its byte order mark: add Base for an
	// offset in the input.
	Value hujson.Value
	// Base is 3 when the input starts with a UTF-8 byte order mark, else 0.
	Base int
	// Empty: the input holds only blanks and comments; Value is the zero
	// Value.
	Empty bool

	data    []byte // the input
	src     []byte // what hujson parsed
	addedNL bool   // src is the input with a "\n" added
	lines   []int  // offsets (after Base) of the line breaks, built on first use
}

var bom = []byte("\xef\xbb\xbf")

// Parse parses data. The tree may alias data, which must not change
// while the Doc is in use.
func Parse(data []byte, lim Limits) (*Doc, error) {
	if lim.Depth <= 0 {
		return nil, errors.New("jsonc: Limits.Depth must be positive")
	}
	d := &Doc{data: data}
	if bytes.HasPrefix(data, bom) {
		d.Base = len(bom)
	}
	text := data[d.Base:] // what the offsets count in
	src := text
	if len(src) == 0 || src[len(src)-1] != '\n' {
		// A // comment must end with "\n" for hujson; the added "\n" is
		// the last byte of the root's AfterExtra, which Pack takes off.
		src = append(src[:len(src):len(src)], '\n')
		d.addedNL = true
	}
	if hujson.Extra(src).IsValid() {
		d.Empty = true
		return d, nil
	}
	s := newScanner(text)
	limitAt, limitMsg := s.run(len(text), lim)
	if limitAt >= 0 {
		// Parse the part before the value over the limit, so that a
		// syntax error before it is reported first, as reading in order
		// would; that part is within the limits.
		src = text[:limitAt]
	}
	v, err := hujson.Parse(src)
	if err == nil && limitAt < 0 {
		d.Value, d.src = v, src
		return d, nil
	}
	off := len(text) + 1 // where hujson stopped: past the end when it did not
	if err != nil {
		var ok bool
		if off, ok = errOffset(src, err); !ok {
			return nil, &Error{Offset: 0, Line: 1, Msg: strings.TrimPrefix(err.Error(), "hujson: ")}
		}
		off = min(off, len(text))
	}
	switch {
	case s.badKey >= 0 && s.badKey < off:
		return nil, d.errorf(s.badKey, false, "expected a double-quoted key, found %s", what(text, s.badKey))
	case limitAt >= 0 && off >= limitAt:
		return nil, d.errorf(limitAt, true, "%s", limitMsg)
	}
	return nil, d.syntaxError(text, off, err)
}

// Data is the input, as given to Parse.
func (d *Doc) Data() []byte { return d.data }

// Line returns the line (from 1) of offset, an offset of the tree (after
// Base).
func (d *Doc) Line(offset int) int {
	if d.lines == nil {
		d.lines = []int{}
		text := d.data[d.Base:]
		for off := 0; ; {
			i := bytes.IndexByte(text[off:], '\n')
			if i < 0 {
				break
			}
			d.lines = append(d.lines, off+i)
			off += i + 1
		}
	}
	return 1 + sort.SearchInts(d.lines, offset)
}

// Clone returns a copy of d whose tree can be changed without changing
// d's. It parses the input again: hujson's Value.Clone loses a trailing
// comma that directly follows the last value (it copies the empty, not
// nil, AfterExtra that marks the comma as nil).
func (d *Doc) Clone() *Doc {
	c := *d
	c.lines = nil
	if !d.Empty {
		v, err := hujson.Parse(d.src)
		if err != nil { // cannot be: d.src parsed before
			panic("jsonc: parsing again: " + err.Error())
		}
		c.Value = v
	}
	return &c
}

// Pack returns the document's bytes: the input, byte for byte, when the
// tree is as parsed, with the byte order mark the input had.
func (d *Doc) Pack() []byte {
	var b []byte
	if d.Base > 0 {
		b = append(b, bom...)
	}
	b = append(b, d.Value.Pack()...)
	if d.addedNL && bytes.HasSuffix(b, []byte("\n")) {
		b = b[:len(b)-1]
	}
	return b
}

func (d *Doc) errorf(off int, limit bool, format string, args ...any) *Error {
	return &Error{Offset: d.Base + off, Line: d.lineIn(off), Msg: fmt.Sprintf(format, args...), Limit: limit}
}

// lineIn is Line before the tree exists (errors).
func (d *Doc) lineIn(off int) int {
	text := d.data[d.Base:]
	return 1 + bytes.Count(text[:min(off, len(text))], []byte("\n"))
}

// errOffset finds where hujson stopped from its error's "line L, column C"
// (C counts bytes from 1).
func errOffset(src []byte, err error) (int, bool) {
	s, ok := strings.CutPrefix(err.Error(), "hujson: line ")
	if !ok {
		return 0, false
	}
	ls, rest, ok := strings.Cut(s, ", column ")
	if !ok {
		return 0, false
	}
	cs, _, ok := strings.Cut(rest, ":")
	if !ok {
		return 0, false
	}
	line, err1 := strconv.Atoi(ls)
	col, err2 := strconv.Atoi(cs)
	if err1 != nil || err2 != nil || line < 1 || col < 1 {
		return 0, false
	}
	off := 0
	for ; line > 1; line-- {
		i := bytes.IndexByte(src[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	return min(off+col-1, len(src)), true
}

// syntaxError turns hujson's error, which stopped at text[off], into a
// message that says what was found and, where hujson's does not, what
// was expected.
func (d *Doc) syntaxError(text []byte, off int, err error) *Error {
	m := err.Error()
	if inner := errors.Unwrap(err); inner != nil {
		m = inner.Error()
	}
	found := what(text, off)
	e := func(format string, args ...any) *Error { return d.errorf(off, false, format, args...) }
	switch {
	case strings.HasSuffix(m, "after top-level value"):
		return e("unexpected %s after the top-level value", found)
	case m == "parsing comment: unexpected EOF":
		return e("unterminated /* comment")
	case strings.HasPrefix(m, "invalid UTF-8 in comment"):
		return e("invalid UTF-8 in a comment")
	case strings.HasSuffix(m, "in line comment"):
		return e("unexpected %s in a // comment", found)
	case strings.HasPrefix(m, "parsing object after name"), strings.HasSuffix(m, "after object name"):
		s := stateAt(text, off)
		return e("expected ':' after key %q, found %s", hujson.Literal(text[s.str[0]:s.str[1]]).String(), found)
	case strings.HasPrefix(m, "parsing object after value"), strings.Contains(m, "after object value"):
		return e("expected ',' or '}' after an object member, found %s", found)
	case strings.HasPrefix(m, "parsing array after value"), strings.Contains(m, "after array value"):
		return e("expected ',' or ']' after a list item, found %s", found)
	case m == "parsing string: unexpected EOF":
		if s := stateAt(text, off); s.strOpen {
			return d.badString(text, s.str[0], len(text), false)
		}
		return e("unterminated string")
	case strings.HasPrefix(m, "invalid literal: "):
		if off < len(text) && text[off] == '"' {
			end, closed := stringEnd(text, off)
			return d.badString(text, off, end, closed)
		}
		if keyExpected(text, off) {
			return e("expected a double-quoted key, found %s", found)
		}
		lit := text[off:literalEnd(text, off)]
		if len(lit) > 0 && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') {
			return e("bad number %q", lit)
		}
		return e("bad value %q", truncate(string(lit), 40))
	case strings.HasSuffix(m, "at start of value"), strings.HasSuffix(m, "at start of object name"), m == "parsing value: unexpected EOF":
		if keyExpected(text, off) {
			return e("expected a double-quoted key, found %s", found)
		}
		return e("unexpected %s", found)
	}
	return e("%s", m)
}

// keyExpected reports whether a key of an object was expected at
// text[off].
func keyExpected(text []byte, off int) bool {
	s := stateAt(text, off)
	return len(s.stack) > 0 && s.stack[len(s.stack)-1] == '{' && s.expectKey
}

// badString is the error for the string text[start:end], which JSON does
// not allow; closed: it ends with its closing quote.
func (d *Doc) badString(text []byte, start, end int, closed bool) *Error {
	if bytes.IndexByte(text[start:end], '\n') >= 0 {
		return d.errorf(start, false, "line break inside a string")
	}
	if !closed {
		return d.errorf(start, false, "unterminated string")
	}
	return d.errorf(start, false, "bad string %s", truncate(string(text[start:end]), 40))
}

// what names text[off] for a message: `character 'x'` or "end of file".
func what(text []byte, off int) string {
	if off >= len(text) {
		return "end of file"
	}
	r, _ := utf8.DecodeRune(text[off:])
	return fmt.Sprintf("character %q", r)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
