// Package rawjson scans JSON text without decoding it: enough to find the
// members of an object or the elements of an array and hand out their raw
// values. The hub's fast path uses it to read a message's envelope (id,
// method, tool name) and forward the rest untouched.
//
// The scanners delimit values; they do not validate them. A caller that
// forwards a value must validate it ([Valid], which says what
// encoding/json.Valid says in one pass) or trust its producer.
package rawjson

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// Object calls fn with the key (without quotes, escapes left as they are)
// and the raw value of each member of the JSON object starting at b[0]
// (after leading white space), in order, and returns the index just past
// its closing brace, or -1 if b does not start with a well-formed object.
// What follows the object is not looked at.
func Object(b []byte, fn func(key, val []byte)) int {
	return ObjectSpans(b, func(key []byte, start, end int) { fn(key, b[start:end]) })
}

// ObjectSpans is [Object] giving each value as its place in b, b[start:end],
// for callers that replace a member's value.
func ObjectSpans(b []byte, fn func(key []byte, start, end int)) int {
	return WalkObject(b, 0, func(key []byte, v int) int {
		end := SkipValue(b, v)
		if end >= 0 {
			fn(key, v, end)
		}
		return end
	})
}

// EachMember is [Object] reporting only whether b starts with a
// well-formed object.
func EachMember(b []byte, fn func(key, val []byte)) bool { return Object(b, fn) >= 0 }

// EachElement calls fn with each raw element of the JSON array b. It
// reports false if b is not a well-formed array at the top level.
func EachElement(b []byte, fn func(val []byte)) bool {
	return WalkArray(b, 0, func(e int) int {
		end := SkipValue(b, e)
		if end >= 0 {
			fn(b[e:end])
		}
		return end
	}) >= 0
}

// WalkObject walks the JSON object starting at b[i:] (after spaces): for
// each member it calls fn with the key (without quotes, escapes left as
// they are) and the index where the value starts; fn returns the index
// just past the value, or -1 to stop. walkObject returns the index just
// past the object, or -1 if fn stopped or the object is not well-formed.
// Each value is walked once, by fn.
func WalkObject(b []byte, i int, fn func(key []byte, v int) int) int {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for i < len(b) {
		if b[i] != '"' {
			return -1
		}
		end := SkipString(b, i+1)
		if end < 0 {
			return -1
		}
		key := b[i+1 : end]
		i = SkipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = fn(key, SkipSpace(b, i+1)); i < 0 {
			return -1
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
	return -1
}

// WalkArray is WalkObject for the JSON array at b[i:]: fn gets the index
// where each element starts.
func WalkArray(b []byte, i int, fn func(e int) int) int {
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for i < len(b) {
		if i = fn(i); i < 0 {
			return -1
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
	return -1
}

// SkipValue returns the index just past the JSON value starting at i, or
// -1. Objects and arrays are matched by their brackets (strings inside
// skipped); a literal or number runs to the next delimiter.
func SkipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end := SkipString(b, i+1)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			case '"':
				end := SkipString(b, i+1)
				if end < 0 {
					return -1
				}
				i = end
			}
		}
		return -1
	}
	// A literal or number runs to the next delimiter, and stops too at a
	// quote or an opening bracket, which none holds: so a walk of an
	// object's members (WalkObject) ends where matching its brackets
	// ends, even on text that is not JSON.
	j := i
	for j < len(b) && !literalStops[b[j]] {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// literalStops are the bytes a literal or a number runs to (SkipValue):
// white space, the delimiters after a value, a quote and the opening
// brackets.
var literalStops = [256]bool{' ': true, '\t': true, '\n': true, '\r': true, ',': true, '}': true, ']': true, '"': true, '{': true, '[': true}

// Deeper reports whether the JSON text b nests objects and arrays more
// than n deep, or has a string left open. Brackets inside strings do not
// count.
func Deeper(b []byte, n int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			if depth++; depth > n {
				return true
			}
		case '}', ']':
			depth--
		case '"':
			end := SkipString(b, i+1)
			if end < 0 {
				return true
			}
			i = end
		}
	}
	return false
}

// SkipString returns the index of the quote closing the string whose
// contents start at start, or -1.
func SkipString(b []byte, start int) int {
	i := start
	// A string's first 64 bytes eight at a time, to its first quote or
	// backslash: most strings of a message (names, types, ids) are short,
	// and there a call of IndexByte costs more than the scan.
	for end := min(len(b), start+64); i+8 <= end; {
		w := b[i : i+8 : i+8] // eight, so that neither the load nor w[k&7] checks its bounds
		m := quoteOrBackslash(binary.LittleEndian.Uint64(w))
		if m == 0 {
			i += 8
			continue
		}
		k := bits.TrailingZeros64(m) >> 3
		if w[k&7] == '"' {
			return i + k
		}
		i += k + 2 // a backslash, and what it escapes
	}
	if i >= len(b) {
		return -1
	}
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return -1
		}
		q += i
		n := 0 // backslashes before the quote: odd means escaped
		for k := q - 1; k >= start && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// quoteOrBackslash returns x, eight bytes of a string (little-endian),
// with the high bit set in each byte that is a quote or a backslash, and
// perhaps in bytes after the first such one (a borrow carries up); zero
// if there is none. SkipString and Valid find a string's end with it.
func quoteOrBackslash(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return ((quote-ones)&^quote | (backslash-ones)&^backslash) & highs
}

// Plain reports whether text is printable ASCII without a backslash or a
// quote: text that reads the same between quotes in JSON as it does
// decoded.
func Plain[T string | []byte](text T) bool {
	for i := 0; i < len(text); i++ {
		if c := text[i]; c < 0x20 || c >= 0x7f || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// PlainString returns the contents of b, a JSON string as sent, if they
// are Plain (the text is what it says), and false otherwise: not a
// string, or one that needs decoding.
func PlainString(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' || !Plain(b[1:len(b)-1]) {
		return nil, false
	}
	return b[1 : len(b)-1], true
}

// String decodes b, a JSON string value as sent, as encoding/json does;
// false if b is not a string. A plain one (PlainString) is not run
// through the decoder.
func String(b []byte) (string, bool) {
	if s, ok := PlainString(b); ok {
		return string(s), true
	}
	var v string
	if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &v) != nil {
		return "", false
	}
	return v, true
}

// Contains reports whether b contains s, as bytes.Contains does. It is
// the search for a quoted word in JSON text (`"tools/call"`, `"isError"`):
// bytes.Contains looks for each place of a needle's first byte, and a
// quote is the commonest byte of JSON, so for an s that begins with one
// Contains looks for the rest of s, and then for the quote before it.
func Contains(b, s []byte) bool {
	if len(s) < 2 || s[0] != '"' {
		return bytes.Contains(b, s)
	}
	rest := s[1:]
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], rest)
		if j < 0 {
			return false
		}
		if i += j; b[i-1] == '"' {
			return true
		}
		i++
	}
	return false
}

// AppendString appends s to b as a JSON string: between quotes as it is
// when it is Plain, which most names and levels are, else as encoding/json
// writes it.
func AppendString(b []byte, s string) []byte {
	if Plain(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s) // a string: cannot fail
	return append(b, q...)
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	// White space is at most ' ': most bytes are told apart with one
	// comparison, not IsSpace's four.
	for i < len(b) && b[i] <= ' ' && IsSpace(b[i]) {
		i++
	}
	return i
}

// TrimSpace returns b without the JSON white space around it: a JSON
// text's own, where bytes.TrimSpace also takes Unicode's (a form feed,
// U+0085, a no-break space), which JSON does not allow there.
func TrimSpace(b []byte) []byte {
	b = b[SkipSpace(b, 0):]
	for len(b) > 0 && IsSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// CleanText reports whether the JSON text b is valid UTF-8 and has no
// lone surrogate escape (a \uD800-\uDBFF not followed by a \uDC00-\uDFFF,
// or one of those alone): text that encoding/json decodes without
// replacing anything by U+FFFD.
func CleanText(b []byte) bool {
	// Most text is short, ASCII and without a backslash: its first 64
	// bytes are read eight at a time, once, to the first other byte, and
	// only from there on is the rest checked for UTF-8 and for escapes,
	// which are two passes (each faster than this one on long text, and
	// slower to set up on short text).
	head := b[:min(len(b), 64)]
	w := head // what is left to read of head
	for len(w) >= 8 && !notPlainASCII(binary.LittleEndian.Uint64(w)) {
		w = w[8:]
	}
	if len(w) > 0 && len(w) < 8 && len(head) >= 8 && !notPlainASCII(binary.LittleEndian.Uint64(head[len(head)-8:])) {
		w = nil // the last bytes, read as head's last eight
	}
	i := len(head) - len(w)
	for i < len(head) && head[i] < utf8.RuneSelf && head[i] != '\\' {
		i++
	}
	return i == len(b) || utf8.Valid(b[i:]) && !hasLoneSurrogate(b[i:])
}

// notPlainASCII reports whether x, eight bytes, holds one that is not
// ASCII or is a backslash (found as quoteOrBackslash finds one: a borrow
// may mark bytes after it too, which does not change the answer).
func notPlainASCII(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	backslash := x ^ (ones * '\\')
	return (x|(backslash-ones)&^backslash)&highs != 0
}

// FixText returns b with what encoding/json would decode as U+FFFD
// (invalid UTF-8, lone surrogate escapes) replaced by U+FFFD, so a value
// forwarded as bytes means what it would mean had it been decoded and
// encoded again. b is returned as it is when it is clean (see CleanText).
func FixText(b []byte) []byte {
	if CleanText(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\' && i+1 < len(b):
			if b[i+1] == 'u' {
				if r, ok := escapeAt(b, i); ok && utf16.IsSurrogate(r) {
					if r < 0xDC00 {
						if r2, ok := escapeAt(b, i+6); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
							out = append(out, b[i:i+12]...) // a pair
							i += 12
							continue
						}
					}
					out = append(out, `\ufffd`...)
					i += 6
					continue
				}
			}
			if b[i+1] >= utf8.RuneSelf {
				out = append(out, c) // not an escape; the next byte is checked on its own
				i++
				continue
			}
			out = append(out, b[i], b[i+1])
			i += 2
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				out = append(out, "\uFFFD"...)
			} else {
				out = append(out, b[i:i+n]...)
			}
			i += n
		}
	}
	return out
}

// TextCut returns the length of the longest prefix of b that FixText
// fixes the same on its own as within b and whatever follows b: it does
// not end inside an escape, before the second half of a possible
// surrogate pair, or inside a UTF-8 sequence that more bytes may
// complete. b must start where FixText's reading of the whole text would
// be (at its start, or at the end of an earlier cut). With final set (no
// bytes follow b) it is len(b). A text fixed piece by piece, cut there,
// comes out as FixText fixes it whole.
func TextCut(b []byte, final bool) int {
	if final {
		return len(b)
	}
	n := len(b)
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		if i+1 >= len(b) {
			n = i
			break
		}
		if b[i+1] == 'u' {
			if i+6 > len(b) {
				n = i
				break
			}
			if r, ok := escapeAt(b, i); ok && utf16.IsSurrogate(r) {
				if r < 0xDC00 {
					if i+12 > len(b) {
						n = i
						break
					}
					if r2, ok := escapeAt(b, i+6); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
						i += 12
						continue
					}
				}
				i += 6
				continue
			}
		}
		if b[i+1] >= utf8.RuneSelf {
			i++ // FixText keeps the backslash and reads the next byte on its own
			continue
		}
		i += 2
	}
	// A UTF-8 sequence cut short at n.
	for k := n - 1; k >= 0 && k >= n-utf8.UTFMax; k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:n]) {
				n = k
			}
			break
		}
	}
	return n
}

// hasLoneSurrogate reports whether b has a \u escape of a surrogate that
// is not part of a high-low pair.
func hasLoneSurrogate(b []byte) bool {
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return false
		}
		i += j
		if i+1 >= len(b) {
			return false
		}
		if b[i+1] != 'u' {
			i += 2 // \\, \", \n, ...: the escaped character cannot start one
			continue
		}
		r, ok := escapeAt(b, i)
		switch {
		case !ok || !utf16.IsSurrogate(r):
			i += 2
		case r >= 0xDC00:
			return true // a low surrogate first
		default:
			r2, ok := escapeAt(b, i+6)
			if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
				return true
			}
			i += 12
		}
	}
	return false
}

// escapeAt decodes the \uXXXX escape at b[i:].
func escapeAt(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Member returns the span of the value of the top-level member key of
// the JSON object b (the first, if there are several), and whether it
// has one.
func Member(b []byte, key string) (start, end int, ok bool) {
	ObjectSpans(b, func(k []byte, s, e int) {
		if !ok && string(k) == key {
			start, end, ok = s, e, true
		}
	})
	return start, end, ok
}
