package dataplane

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The envelope of a raw call: the host's request is read just far enough
// to route it (id, method, tool name) and its arguments are forwarded as
// they came; the answer is written around the source's result bytes.

// parseToolCall reads the one shape of message the raw path takes: a
// JSON-RPC request {"jsonrpc":"2.0","id":…,"method":"tools/call",
// "params":{"name":…,"arguments":…}} with no other members (no _meta, so
// no progress token and no per-request protocol fields; no inputResponses
// or requestState), each member once and spelled exactly, an id that is a
// number or a string, and nothing after it. Anything else goes the
// ordinary way. The id and arguments are returned as sent, and checked to
// be valid JSON, since they are forwarded without being decoded.
func parseToolCall(msg []byte) (id json.RawMessage, name string, args json.RawMessage, ok bool) {
	var params, rawName []byte
	var seen [4]bool
	ok = true
	end := rawjson.Object(msg, func(key, val []byte) {
		k := -1
		switch string(key) {
		case "jsonrpc":
			k, ok = 0, ok && string(val) == `"2.0"`
		case "id":
			k, id = 1, val
		case "method":
			k, ok = 2, ok && string(val) == `"tools/call"`
		case "params":
			k, params = 3, val
		}
		if k < 0 || seen[k] {
			ok = false
			return
		}
		seen[k] = true
	})
	if !ok || end < 0 || seen != [4]bool{true, true, true, true} || len(bytes.TrimSpace(msg[end:])) > 0 {
		return nil, "", nil, false
	}
	if c := id[0]; c != '"' && c != '-' && (c < '0' || c > '9') || !json.Valid(id) {
		return nil, "", nil, false // null, or not an id at all
	}
	var pseen [2]bool
	if rawjson.Object(params, func(key, val []byte) {
		switch string(key) {
		case "name":
			ok, pseen[0], rawName = ok && !pseen[0], true, val
		case "arguments":
			ok, pseen[1], args = ok && !pseen[1], true, val
		default:
			ok = false
		}
	}) < 0 || !ok || !pseen[0] || rawName[0] != '"' {
		return nil, "", nil, false
	}
	if plainASCII(rawName) {
		name = string(rawName[1 : len(rawName)-1])
	} else if json.Unmarshal(rawName, &name) != nil { // escapes, or UTF-8 to check
		return nil, "", nil, false
	}
	if len(args) > 0 && !json.Valid(args) {
		return nil, "", nil, false
	}
	return id, name, args, true
}

// plainASCII reports whether b holds only printable ASCII without
// backslashes: a JSON string that means what it says.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// rawParams returns the params object for the source: its own name for
// the tool and the host's arguments as sent; none (or null) become {}, as
// go-sdk's client sends them on the typed path.
func rawParams(local string, args json.RawMessage) []byte {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	params := make([]byte, 0, len(args)+len(local)+32)
	params = append(params, `{"name":`...)
	params = strconv.AppendQuote(params, local)
	params = append(params, `,"arguments":`...)
	params = append(params, args...)
	return append(params, '}')
}

// answerLine is the JSON-RPC answer to the host's request id: the result
// res, or the protocol error werr; it ends in a newline.
func answerLine(id []byte, res json.RawMessage, werr *jsonrpc.Error) []byte {
	if werr != nil {
		return errorLine(id, werr)
	}
	buf := make([]byte, 0, len(id)+len(res)+40)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, res...)
	return append(buf, "}\n"...)
}

// errorLine is a JSON-RPC error answer, ending in a newline.
func errorLine(id []byte, e *jsonrpc.Error) []byte {
	msg, _ := json.Marshal(e.Message)
	buf := make([]byte, 0, len(id)+len(msg)+80)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, e.Code, 10)
	buf = append(buf, `,"message":`...)
	buf = append(buf, msg...)
	if len(e.Data) > 0 {
		buf = append(buf, `,"data":`...)
		buf = append(buf, e.Data...)
	}
	return append(buf, "}}\n"...)
}

// cancelledID returns the requestId of a notifications/cancelled message,
// as sent, and false for anything else.
func cancelledID(msg []byte) (json.RawMessage, bool) {
	var method, id, params, reqID []byte
	if !rawjson.EachMember(msg, func(key, val []byte) {
		switch string(key) {
		case "method":
			method = val
		case "id":
			id = val
		case "params":
			params = val
		}
	}) || string(method) != `"notifications/cancelled"` || id != nil || params == nil {
		return nil, false
	}
	if !rawjson.EachMember(params, func(key, val []byte) {
		if string(key) == "requestId" {
			reqID = val
		}
	}) || len(reqID) == 0 || !json.Valid(reqID) {
		return nil, false
	}
	return reqID, true
}
