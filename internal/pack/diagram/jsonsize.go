package diagram

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unsafe"
)

// jsonSizeAtMost returns the size of v as json.Marshal writes it, without
// writing it, or -1 if v is not JSON. It stops counting once the size
// passes limit (if limit > 0), returning a number over limit: a value
// that holds one large value many times (a map of references to the same
// string) is measured without building its text. Strings are measured by
// encoding/json itself, each distinct one once, so that the count follows
// its escaping whatever the Go release.
func jsonSizeAtMost(v any, limit int) int {
	m := sizer{limit: limit}
	if !m.add(v) {
		return -1
	}
	return m.n
}

type sizer struct {
	n, limit int

	buf  bytes.Buffer
	enc  *json.Encoder
	seen map[strKey]int // long strings measured, by their bytes
}

// strKey names a string by its bytes' address and length: the same
// string held many times is measured once.
type strKey struct {
	p *byte
	n int
}

// longString is the length from which a string's size is kept (see
// strKey); shorter ones are measured each time.
const longString = 1024

// stringSize is the size of s as encoding/json writes it.
func (m *sizer) stringSize(s string) int {
	var k strKey
	if len(s) >= longString {
		k = strKey{unsafe.StringData(s), len(s)}
		if n, ok := m.seen[k]; ok {
			return n
		}
	}
	if m.enc == nil {
		m.enc = json.NewEncoder(&m.buf)
	}
	m.buf.Reset()
	m.enc.Encode(s)      // a string always encodes
	n := m.buf.Len() - 1 // Encode ends with a newline
	if len(s) >= longString {
		if m.seen == nil {
			m.seen = make(map[strKey]int)
		}
		m.seen[k] = n
	}
	return n
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
		if m.limit > 0 && m.n+len(x)+2 > m.limit {
			m.n += len(x) + 2 // at least that: over the limit, whatever its escapes
			return true
		}
		m.n += m.stringSize(x)
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
			m.n += m.stringSize(k) + 1
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
