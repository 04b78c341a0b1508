package diagram

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// jsonSizeAtMost returns the size of v as json.Marshal writes it, without
// writing it, or -1 if v is not JSON. It stops counting once the size
// passes limit (if limit > 0), returning a number over limit: a value
// that holds one large value many times (a map of references to the same
// string) is measured without building its text.
func jsonSizeAtMost(v any, limit int) int {
	m := sizer{limit: limit}
	if !m.add(v) {
		return -1
	}
	return m.n
}

type sizer struct {
	n, limit int
}

// over reports whether the count has passed the limit.
func (m *sizer) over() bool { return m.limit > 0 && m.n > m.limit }

// add counts v; false if v is not JSON.
func (m *sizer) add(v any) bool {
	if m.over() {
		return true
	}
	switch x := v.(type) {
	case nil:
		m.n += 4
	case bool:
		if x {
			m.n += 4
		} else {
			m.n += 5
		}
	case string:
		m.n += jsonStringSize(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		m.n += floatSize(x)
	case []any:
		m.n += 2 + max(len(x)-1, 0)
		for _, e := range x {
			if !m.add(e) {
				return false
			}
			if m.over() {
				return true
			}
		}
	case map[string]any:
		m.n += 2 + max(len(x)-1, 0)
		for k, e := range x {
			m.n += jsonStringSize(k) + 1
			if !m.add(e) {
				return false
			}
			if m.over() {
				return true
			}
		}
	default:
		// Other types are rare in node outputs: measure them the long way.
		b, err := json.Marshal(x)
		if err != nil {
			return false
		}
		m.n += len(b)
	}
	return true
}

// jsonStringSize is the size of s as a JSON string, quotes included, as
// encoding/json escapes it (HTML characters too).
func jsonStringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '\\' || b == '"' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1, c == '\u2028', c == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// floatSize is the size of f as encoding/json writes a float64.
func floatSize(f float64) int {
	var buf [32]byte
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	n := len(b)
	if format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		n-- // e-09 is written e-9
	}
	return n
}
