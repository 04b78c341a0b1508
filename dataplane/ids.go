package dataplane

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Request ids keep their identity. JSON-RPC lets a host choose any number
// or string as a request id and expects it back as sent. The raw path
// writes the host's bytes back; go-sdk decodes an id into an int64 or a
// string and encodes it again, so some ids would come back changed:
// 18446744073709551616 overflows, 1.5 becomes 1 and 1e3 1000, "a\u0041"
// becomes "aA", "<" becomes "\u003c". So a request whose id go-sdk would
// not return byte for byte is handed to go-sdk under an id of the plane's
// own, and the answer gets the host's id back, byte for byte; so does a
// notifications/cancelled that names it. Ids that go-sdk returns as they
// came (small integers, plain ASCII strings: nearly all) pass untouched.
//
// The plane's ids are strings that start with a NUL character, which no id
// that passes untouched can contain.

// sdkKeepsID reports whether go-sdk returns the JSON id as it came: an
// integer written the shortest way that a float64 holds exactly (go-sdk
// decodes numbers as float64, so 2^53+1 would come back as 2^53), or a
// string of printable ASCII that encoding/json writes back the same (no
// escapes, no characters it escapes for HTML).
func sdkKeepsID(id []byte) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		if len(id) < 2 || id[len(id)-1] != '"' {
			return false
		}
		for _, c := range id[1 : len(id)-1] {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
		}
		return true
	}
	const maxExact = 1 << 53
	n, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && string(id) == strconv.FormatInt(n, 10) && n <= maxExact && n >= -maxExact
}

// idMap is the ids a connection handed to go-sdk in place of a host's.
type idMap struct {
	seq atomic.Uint64

	mu     sync.Mutex
	hostOf map[string][]byte // by the plane's id (the string value): the host's id, as sent
	ourOf  map[string]string // by the host's id as sent: the plane's id
}

// substitute returns the id go-sdk gets for the host's id raw, sent on
// the connection or session scope.
func (m *idMap) substitute(scope string, raw []byte) string {
	ours := "\x00jid-" + strconv.FormatUint(m.seq.Add(1), 10)
	m.mu.Lock()
	if m.hostOf == nil {
		m.hostOf = make(map[string][]byte)
		m.ourOf = make(map[string]string)
	}
	m.hostOf[ours] = bytes.Clone(raw)
	m.ourOf[scope+"\x00"+string(raw)] = ours
	m.mu.Unlock()
	return ours
}

// restore returns the host's id for the plane's id ours, and forgets
// both.
func (m *idMap) restore(scope, ours string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, ok := m.hostOf[ours]
	if ok {
		delete(m.hostOf, ours)
		key := scope + "\x00" + string(raw)
		if m.ourOf[key] == ours {
			delete(m.ourOf, key)
		}
	}
	return raw, ok
}

// hostID returns the host's id for the plane's id ours.
func (m *idMap) hostID(ours string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, ok := m.hostOf[ours]
	return raw, ok
}

// ours returns the plane's id for the host's id raw on scope, if it has
// one.
func (m *idMap) ours(scope string, raw []byte) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.ourOf[scope+"\x00"+string(raw)]
	return id, ok
}

// replaceMember returns msg with the value of its top-level member key
// replaced by val (msg itself if it has no such member).
func replaceMember(msg []byte, key string, val []byte) []byte {
	s, e, ok := rawjson.Member(msg, key)
	if !ok {
		return msg
	}
	out := make([]byte, 0, len(msg)-(e-s)+len(val))
	out = append(out, msg[:s]...)
	out = append(out, val...)
	return append(out, msg[e:]...)
}

// ourJSON is the plane's id as JSON text.
func ourJSON(ours string) []byte {
	b, _ := json.Marshal(ours) // a string: cannot fail
	return b
}

// cancelledRequestID returns the span of params.requestId in a
// notifications/cancelled message.
func cancelledRequestID(msg []byte) (start, end int, ok bool) {
	ps, pe, found := rawjson.Member(msg, "params")
	if !found {
		return 0, 0, false
	}
	s, e, found := rawjson.Member(msg[ps:pe], "requestId")
	return ps + s, ps + e, found
}

// toSDK rewrites, for go-sdk, one message a host sent on scope (a stdio
// connection, an HTTP session): the id of a request that go-sdk would not
// return as sent (ours is then the id go-sdk gets, for the answer), and
// the requestId of a cancellation that names such a request. It returns
// msg itself when nothing needs rewriting.
func (m *idMap) toSDK(scope string, msg []byte) (out []byte, ours string) {
	ms, me, hasMethod := rawjson.Member(msg, "method")
	if !hasMethod {
		return msg, "" // a response to go-sdk's own request: its id is go-sdk's
	}
	if string(msg[ms:me]) == `"notifications/cancelled"` {
		if s, e, ok := cancelledRequestID(msg); ok {
			if id, ok := m.ours(scope, msg[s:e]); ok {
				out := make([]byte, 0, len(msg)+16)
				out = append(out, msg[:s]...)
				out = append(out, ourJSON(id)...)
				return append(out, msg[e:]...), ""
			}
		}
		return msg, ""
	}
	raw, ok := idToSubstitute(msg)
	if !ok {
		return msg, ""
	}
	ours = m.substitute(scope, raw)
	return replaceMember(msg, "id", ourJSON(ours)), ours
}

// idToSubstitute returns the id of msg, a request, if go-sdk would not
// return it as sent (sdkKeepsID): a number or a string. Null, or what is
// not an id at all, go-sdk refuses itself.
func idToSubstitute(msg []byte) ([]byte, bool) {
	s, e, ok := rawjson.Member(msg, "id")
	if !ok {
		return nil, false
	}
	raw := msg[s:e]
	if c := raw[0]; c != '"' && c != '-' && (c < '0' || c > '9') || sdkKeepsID(raw) {
		return nil, false
	}
	return raw, true
}

// sdkReadable returns msg, a message a host sent, with the id of a
// request that go-sdk would not return as sent (as toSDK would
// substitute it) replaced by one it reads, so that it is read as go-sdk
// reads what it is handed; nothing is noted. The raw id is returned too
// (nil when none was replaced).
func sdkReadable(msg []byte) ([]byte, []byte) {
	if _, _, hasMethod := rawjson.Member(msg, "method"); !hasMethod {
		return msg, nil
	}
	raw, ok := idToSubstitute(msg)
	if !ok {
		return msg, nil
	}
	return replaceMember(msg, "id", []byte(`"\u0000id"`)), raw
}

// idFromSDK is the plane's id in a message go-sdk answered, if it is one.
func idFromSDK(id jsonrpc.ID) (string, bool) {
	s, ok := id.Raw().(string)
	return s, ok && len(s) > 0 && s[0] == 0
}

// sentID returns the id of msg, a request go-sdk's decoder reads, as the
// host wrote it, for the answer to carry: raw, where sdkReadable
// substituted it, else the id member as go-sdk's decoder reads it.
func sentID(msg, raw []byte) []byte {
	if raw != nil {
		return raw
	}
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	decodeParams(msg, &env)
	return env.ID
}
