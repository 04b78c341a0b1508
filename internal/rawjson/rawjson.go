// Package rawjson scans JSON text without decoding it: enough to find the
// members of an object or the elements of an array and hand out their raw
// values. The hub's fast path uses it to read a message's envelope (id,
// method, tool name) and forward the rest untouched.
//
// The scanners delimit values; they do not validate them. A caller that
// forwards a value must validate it (encoding/json.Valid) or trust its
// producer.
package rawjson

import "bytes"

// Object calls fn with the key (without quotes, escapes left as they are)
// and the raw value of each member of the JSON object starting at b[0]
// (after leading white space), in order, and returns the index just past
// its closing brace, or -1 if b does not start with a well-formed object.
// What follows the object is not looked at.
func Object(b []byte, fn func(key, val []byte)) int {
	i := SkipSpace(b, 0)
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
		i = SkipSpace(b, i+1)
		start := i
		i = SkipValue(b, i)
		if i < 0 {
			return -1
		}
		fn(key, b[start:i])
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

// EachMember is [Object] reporting only whether b starts with a
// well-formed object.
func EachMember(b []byte, fn func(key, val []byte)) bool { return Object(b, fn) >= 0 }

// EachElement calls fn with each raw element of the JSON array b. It
// reports false if b is not a well-formed array at the top level.
func EachElement(b []byte, fn func(val []byte)) bool {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return true
	}
	for i < len(b) {
		start := i
		i = SkipValue(b, i)
		if i < 0 {
			return false
		}
		fn(b[start:i])
		i = SkipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return true
		default:
			return false
		}
	}
	return false
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
	j := i
	for j < len(b) && !IsSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// SkipString returns the index of the quote closing the string whose
// contents start at start, or -1.
func SkipString(b []byte, start int) int {
	i := start
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

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// IsSpace reports whether c is JSON white space.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
