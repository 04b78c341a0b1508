package rawjson

import (
	"encoding/binary"
	"math/bits"
)

// MaxDepth is how deep [Valid] lets objects and arrays nest, as
// encoding/json does.
const MaxDepth = 10000

// Valid reports whether b is one well-formed JSON value, white space
// around it allowed, exactly as encoding/json.Valid does: strings may hold
// invalid UTF-8 and lone surrogate escapes, an object may repeat a name,
// and objects and arrays nest at most MaxDepth deep. It is the data
// plane's check of what it forwards without decoding (a call's
// arguments, a request's _meta): one pass over the bytes, with no
// decoder to set up, and no allocation for values nested 64 deep or less.
func Valid(b []byte) bool {
	i := ValidValue(b, 0)
	return i >= 0 && SkipSpace(b, i) == len(b)
}

// ValidValue checks the JSON value starting at b[i:] (after white space)
// as [Valid] checks a whole text, and returns the index just past it, or
// -1 if it is not well-formed: the check and the skip of a value in one
// pass. What follows the value is not looked at.
func ValidValue(b []byte, i int) int {
	end, _ := validValue(b, i)
	return end
}

// ValidPlainValue is [ValidValue], and also reports whether the value's
// strings are plain: ASCII, without escapes. Such a value is clean text
// as it is ([CleanText]), which a caller that forwards it need not check
// again. False may also mean that a byte just past the end of one of its
// strings is not ASCII (the check reads eight bytes at a time).
func ValidPlainValue(b []byte, i int) (end int, plain bool) {
	end, seen := validValue(b, i)
	return end, seen&highBits == 0
}

// highBits is the high bit of each of eight bytes.
const highBits = 0x8080808080808080

// validValue is ValidValue, also returning seen: the bytes of the
// value's strings ORed together eight at a time, with a high bit set for
// an escape (see ValidPlainValue).
func validValue(b []byte, i int) (end int, seen uint64) {
	var small [64]byte
	open := small[:0] // '{' or '[' for each object or array still open
	i = SkipSpace(b, i)
	for {
		// A value starts at i.
		if i >= len(b) {
			return -1, 0
		}
		switch b[i] {
		case '{', '[':
			if len(open) == MaxDepth {
				return -1, 0
			}
			kind := b[i]
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == kind+2 { // '}' or ']': empty
				i++
				break
			}
			open = append(open, kind)
			if kind == '{' {
				var w uint64
				if i, w = validKey(b, i); i < 0 {
					return -1, 0
				}
				seen |= w
			}
			continue
		case '"':
			var w uint64
			if i, w = validString(b, i+1); i < 0 {
				return -1, 0
			}
			seen |= w
		case 't':
			if i = literal(b, i, "true"); i < 0 {
				return -1, 0
			}
		case 'f':
			if i = literal(b, i, "false"); i < 0 {
				return -1, 0
			}
		case 'n':
			if i = literal(b, i, "null"); i < 0 {
				return -1, 0
			}
		default:
			if i = validNumber(b, i); i < 0 {
				return -1, 0
			}
		}
		// A value ended at i: what follows closes what is open, or
		// separates the next value.
		for {
			if len(open) == 0 {
				return i, seen
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return -1, 0
			}
			kind := open[len(open)-1]
			if b[i] == kind+2 {
				open = open[:len(open)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return -1, 0
			}
			i = SkipSpace(b, i+1)
			if kind == '{' {
				var w uint64
				if i, w = validKey(b, i); i < 0 {
					return -1, 0
				}
				seen |= w
			}
			break
		}
	}
}

// validKey checks the name and colon of an object member starting at i
// and returns the index where its value starts, or -1, with the name's
// bytes as validString sees them.
func validKey(b []byte, i int) (int, uint64) {
	if i >= len(b) || b[i] != '"' {
		return -1, 0
	}
	i, seen := validString(b, i+1)
	if i < 0 {
		return -1, 0
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1, 0
	}
	return SkipSpace(b, i+1), seen
}

// validString checks the string whose contents start at i and returns
// the index just past its closing quote, or -1: no control characters,
// and only JSON's escapes. seen is the bytes it read ORed together, a
// high bit set for an escape (see ValidPlainValue).
func validString(b []byte, i int) (end int, seen uint64) {
	for i < len(b) {
		// Eight bytes at a time to the first that is a quote, a
		// backslash or a control character.
		for i+8 <= len(b) {
			// A slice of eight, so that the load needs no bounds check of
			// its own.
			x := binary.LittleEndian.Uint64(b[i : i+8 : i+8])
			seen |= x
			if m := stringStops(x); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, seen
		case c < 0x20:
			return -1, 0
		case c == '\\':
			seen |= 0x80
			if i+1 >= len(b) {
				return -1, 0
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1, 0
				}
				i += 6
			default:
				return -1, 0
			}
		default:
			seen |= uint64(c) // a byte of the string's last seven
			i++
		}
	}
	return -1, 0
}

// stringStops is quoteOrBackslash that also marks the bytes below 0x20,
// which a string may not hold as they are.
func stringStops(x uint64) uint64 {
	const ones = 0x0101010101010101
	return quoteOrBackslash(x) | (x-ones*0x20)&^x&highBits
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literal checks that b holds word at i and returns the index past it, or
// -1.
func literal(b []byte, i int, word string) int {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// validNumber checks the number starting at i and returns the index past
// it, or -1: an optional minus, 0 or digits without a leading zero, then
// an optional fraction and exponent, each with at least one digit.
func validNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || !isDigit(b[i+1]) {
			return -1
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		i = digits(b, i)
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// digits returns the index past the digits starting at i.
func digits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}
