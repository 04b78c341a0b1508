package junction

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Byte-level edits for the tasks extension: a request's params and a
// result as JSON, changed member by member without decoding what they
// carry (the task member of a call, _meta's task fields, a wire error).

// taskParams returns the host's params without the answers of a retry
// (a task's later rounds carry their own).
func taskParams(params json.RawMessage) json.RawMessage {
	out := make([]byte, 0, len(params))
	out = append(out, '{')
	rawjson.Object(params, func(key, val []byte) {
		if k := string(key); k != "inputResponses" && k != "requestState" {
			out = appendMember(out, key, val)
		}
	})
	return append(out, '}')
}

// toolResultJSON is res as a host at 2026-07-28 gets it: a result with
// input requests says so ("resultType":"input_required").
func toolResultJSON(res *mcp.CallToolResult) (json.RawMessage, error) {
	b, err := json.Marshal(res)
	if err != nil || len(res.InputRequests) == 0 || len(b) < 2 {
		return b, err
	}
	var has bool
	rawjson.Object(b, func(key, _ []byte) { has = has || string(key) == "resultType" })
	if has {
		return b, nil
	}
	out := append([]byte(`{"resultType":"input_required"`), b[1:]...)
	if len(b) > 2 {
		out = append([]byte(`{"resultType":"input_required",`), b[1:]...)
	}
	return out, nil
}

// asWireError returns err as the protocol error a host gets.
func asWireError(err error) *jsonrpc.Error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// withMember returns the JSON object obj with member key set to val (in
// place of the first one of that name, or first).
func withMember(obj json.RawMessage, key string, val []byte) json.RawMessage {
	out := make([]byte, 0, len(obj)+len(val)+len(key)+4)
	out = append(out, '{')
	done := false
	rawjson.Object(obj, func(k, v []byte) {
		if string(k) == key {
			if done {
				return
			}
			done, v = true, val
		}
		out = appendMember(out, k, v)
	})
	if !done {
		head := append(append(append([]byte(`{"`), key...), `":`...), val...)
		if len(out) > 1 {
			head = append(head, ',')
		}
		out = append(head, out[1:]...)
	}
	return append(out, '}')
}

// appendMember appends the member key (as read, without quotes) and val
// to out, a JSON object's text being written ("{" and the members so
// far).
func appendMember(out, key, val []byte) []byte {
	if len(out) > 1 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, key...)
	out = append(out, `":`...)
	return append(out, val...)
}

// mustString is s as a JSON string.
func mustString(s string) []byte {
	b, _ := json.Marshal(s) // a string: cannot fail
	return b
}

// withoutTasks returns params (a tools/call params object) without the
// tasks extension in its client capabilities, when src runs tasks of its
// own now: a call the hub does not make through [View.CallToolTask] cannot
// map a task the source would create, so the source must not be offered
// one. Params that do not name the extension are returned as they are,
// unread.
func withoutTasks(src Source, params json.RawMessage) json.RawMessage {
	if ts, ok := src.(TaskSource); !ok || !ts.OffersTasks() || !NamesTasks(params) {
		return params
	}
	return withoutPath(params, "_meta", mcp.MetaKeyClientCapabilities, "extensions", TasksExtension)
}

// NamesTasks reports whether the JSON text b names the tasks extension
// ([TasksExtension]), as bytes.Contains(b, TasksExtension) does. The
// extension's name shares its first 24 bytes with each protocol member
// of a 2026-07-28 request's _meta (io.modelcontextprotocol/...), where
// bytes.Contains would compare them all: its last part is looked for
// first.
func NamesTasks(b []byte) bool {
	return bytes.Contains(b, []byte("/tasks")) && bytes.Contains(b, []byte(TasksExtension))
}

// withoutPath returns the JSON object obj without the member at path (a
// member of a member ...), as it is otherwise.
func withoutPath(obj []byte, path ...string) []byte {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	rawjson.Object(obj, func(k, v []byte) {
		if string(k) == path[0] {
			if len(path) == 1 {
				return
			}
			if len(v) > 0 && v[0] == '{' {
				v = withoutPath(v, path[1:]...)
			}
		}
		out = appendMember(out, k, v)
	})
	return append(out, '}')
}

// withoutTasksMeta is withoutTasks for a typed request's _meta: a copy
// without the extension, or meta itself.
func withoutTasksMeta(src Source, meta mcp.Meta) mcp.Meta {
	if _, ok := meta[mcp.MetaKeyClientCapabilities]; !ok {
		return meta
	}
	if ts, ok := src.(TaskSource); !ok || !ts.OffersTasks() {
		return meta
	}
	b, err := json.Marshal(meta)
	if err != nil || !bytes.Contains(b, []byte(TasksExtension)) {
		return meta
	}
	var out mcp.Meta
	if json.Unmarshal(withoutPath(append([]byte(`{"_meta":`), append(b, '}')...), "_meta", mcp.MetaKeyClientCapabilities, "extensions", TasksExtension), &struct {
		Meta *mcp.Meta `json:"_meta"`
	}{&out}) != nil {
		return meta
	}
	return out
}
