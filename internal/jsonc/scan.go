package jsonc

import (
	"bytes"
	"fmt"
)

// scanner walks the tokens of a document in order, delimiting them as
// hujson does (strings, comments, brackets, literals), without building
// anything and without recursion. Parse runs it over the whole input to
// check the limits before hujson, which recurses once per level of
// nesting, reads it; an error message runs it up to where hujson
// stopped, to know what was expected there. Up to hujson's first error
// both see the same tokens, so hujson never nests deeper than the
// scanner counted.
type scanner struct {
	data      []byte
	pos       int
	stack     []byte // the open objects and arrays: '{' or '['
	expectKey bool   // the next string is a key
	str       [2]int // the span of the last string
	strOpen   bool   // that string has no closing quote
	values    int
	// badKey is the offset of the first object or array where a key was
	// expected, or -1. hujson reads such a key to its end before it
	// says that a key must be a string, so an error inside it would be
	// reported instead.
	badKey int
}

// run scans the tokens that start before stop. It stops at the first
// value over one of lim's limits (zero: none) and returns its offset and
// a message; -1 when there is none.
func (s *scanner) run(stop int, lim Limits) (int, string) {
	d := s.data
	for s.pos < stop && s.pos < len(d) {
		c := d[s.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			s.pos++
		case c == '/' && s.pos+1 < len(d) && d[s.pos+1] == '/':
			if i := bytes.IndexByte(d[s.pos:], '\n'); i >= 0 {
				s.pos += i + 1
			} else {
				s.pos = len(d)
			}
		case c == '/' && s.pos+1 < len(d) && d[s.pos+1] == '*':
			if i := bytes.Index(d[s.pos+2:], []byte("*/")); i >= 0 {
				s.pos += 2 + i + 2
			} else {
				s.pos = len(d)
			}
		case c == '{' || c == '[':
			if s.badKey < 0 && s.expectKey {
				s.badKey = s.pos
			}
			if msg := s.value(lim); msg != "" {
				return s.pos, msg
			}
			s.stack = append(s.stack, c)
			s.expectKey = c == '{'
			s.pos++
		case c == '}' || c == ']':
			if len(s.stack) > 0 {
				s.stack = s.stack[:len(s.stack)-1]
			}
			s.expectKey = false
			s.pos++
		case c == ',':
			s.expectKey = len(s.stack) > 0 && s.stack[len(s.stack)-1] == '{'
			s.pos++
		case c == ':':
			s.expectKey = false
			s.pos++
		case c == '"':
			if !s.expectKey {
				if msg := s.value(lim); msg != "" {
					return s.pos, msg
				}
			}
			end, closed := stringEnd(d, s.pos)
			s.str, s.strOpen = [2]int{s.pos, end}, !closed
			s.expectKey = false
			s.pos = end
		case isLiteral(c):
			if msg := s.value(lim); msg != "" {
				return s.pos, msg
			}
			s.expectKey = false
			s.pos = literalEnd(d, s.pos)
		default:
			s.pos++ // not JSON; hujson stops here
		}
	}
	return -1, ""
}

// value counts a value that starts at s.pos and checks the limits.
func (s *scanner) value(lim Limits) string {
	s.values++
	if lim.Values > 0 && s.values > lim.Values {
		return fmt.Sprintf("document too large (more than %d values)", lim.Values)
	}
	if lim.Depth > 0 && len(s.stack) > lim.Depth {
		return fmt.Sprintf("document nested more than %d levels deep", lim.Depth)
	}
	return ""
}

// stateAt is the scanner after the tokens of text that start before off.
func stateAt(text []byte, off int) *scanner {
	s := newScanner(text)
	s.run(off, Limits{})
	return s
}

func newScanner(text []byte) *scanner { return &scanner{data: text, badKey: -1} }

// stringEnd returns the offset after the string that starts at d[start]
// (a quote), and whether it has its closing quote (else len(d)).
func stringEnd(d []byte, start int) (int, bool) {
	for i := start + 1; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return len(d), false
}

// isLiteral reports whether c may be part of null, true, false or a
// number, as hujson delimits them.
func isLiteral(c byte) bool {
	return c == '-' || c == '+' || c == '.' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func literalEnd(d []byte, start int) int {
	i := start
	for i < len(d) && isLiteral(d[i]) {
		i++
	}
	return i
}
