package dataplane

import (
	"encoding/json"
	"strconv"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// Request ids keep their identity. JSON-RPC lets a host choose any number
// or string as a request id and expects it back as sent, and the plane
// writes the host's bytes back. Where it reads a message with go-sdk's
// decoder, to check it as go-sdk's server would (answerRest), an id that
// decoder would change (it decodes an id into an int64 or a string:
// 18446744073709551616 overflows, 1.5 becomes 1 and 1e3 1000, "a\u0041"
// becomes "aA", "<" becomes "\u003c") is replaced by one it reads as it
// is (sdkReadable), and the answer carries the host's bytes (sentID).

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
// request that go-sdk would not return as sent replaced by one it reads, so that it is read as go-sdk
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
