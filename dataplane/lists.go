package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// A host's lists (tools, prompts, resources and resource templates),
// answered by the plane wherever it would answer a tools/call of the
// same host: the page comes from the view ([View.ListPage], the one
// implementation go-sdk's server also answers with), written for the
// host's revision.

// listRequest is a list request the plane takes, as the host sent it.
type listRequest struct {
	id     json.RawMessage // number or string
	method string          // a list (junction.IsListMethod)
	cursor string
	meta   json.RawMessage // nil when absent
}

// mayBeList reports whether msg may be a list request: it names a
// method ending in /list.
func mayBeList(msg []byte) bool {
	return bytes.Contains(msg, []byte(`/list"`))
}

// parseList reads a JSON-RPC request {"jsonrpc":"2.0","id":…,
// "method":…} of a list (junction.IsListMethod) whose params, if any, are
// an object holding only a cursor (a string of printable ASCII, as every
// cursor the hub makes is) and _meta (an object), each member once and
// spelled exactly, with nothing after it. Anything else goes to go-sdk,
// which answers it.
func parseList(msg []byte) (lr listRequest, ok bool) {
	id, method, params, ok := requestEnvelope(msg)
	if !ok || len(method) < 3 || method[0] != '"' || !plainASCII(method) {
		return listRequest{}, false
	}
	lr.id, lr.method = id, string(method[1:len(method)-1])
	if !junction.IsListMethod(lr.method) {
		return listRequest{}, false
	}
	if params == nil {
		return lr, true
	}
	var pseen [2]bool
	var rawCursor []byte
	if rawjson.Object(params, func(key, val []byte) {
		k := -1
		switch string(key) {
		case "cursor":
			k, rawCursor = 0, val
		case "_meta":
			k, lr.meta = 1, val
		}
		if k < 0 || pseen[k] {
			ok = false
			return
		}
		pseen[k] = true
	}) < 0 || !ok {
		return listRequest{}, false
	}
	if rawCursor != nil {
		if rawCursor[0] != '"' || !plainASCII(rawCursor) || len(rawCursor) < 2 {
			return listRequest{}, false
		}
		lr.cursor = string(rawCursor[1 : len(rawCursor)-1])
	}
	if lr.meta != nil && (lr.meta[0] != '{' || !json.Valid(lr.meta)) {
		return listRequest{}, false
	}
	return lr, true
}

// list returns the result of lr for a host whose revision has typed
// results (2026-07-28 and later: "resultType" and the hub's serverInfo)
// or not (without that revision's members), or its error.
func (p *Plane) list(ctx context.Context, lr listRequest, typed bool) (json.RawMessage, *jsonrpc.Error) {
	res, err := p.v.ListPage(ctx, lr.method, lr.cursor)
	if err != nil {
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		return nil, werr
	}
	// As go-sdk writes results: "<", ">" and "&" as they are.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: lr.method + ": " + err.Error()}
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if typed {
		return wire.ModernResult(b, p.impl), nil
	}
	b, _ = olderMembers(b)
	return b, nil
}

// takeList answers the POST r, whose body is body, if it is a list
// request the raw path takes on a live session (sid) or, without one, of a host
// at 2026-07-28 or later (modern; version, its Mcp-Protocol-Version) or
// an older host on a handler without sessions, and reports whether it
// did. The answer is JSON: a list carries no notifications. A host that
// goes away ends the wait for the sources still connecting.
func (f *httpRaw) takeList(w http.ResponseWriter, r *http.Request, body []byte, sid, version string, modern bool) bool {
	if !mayBeList(body) {
		return false
	}
	lr, ok := parseList(body)
	if !ok || modern && (r.Header.Get("Mcp-Method") != lr.method || hasParamHeaders(r.Header)) {
		return false
	}
	mi := readMeta(lr.meta)
	if !mi.ok || mi.rev.PerRequestMeta() != modern || modern && mi.version != version {
		return false
	}
	if sid != "" && f.session(sid) == nil {
		return false
	}
	f.p.count("http", lr.method)
	res, werr := f.p.list(r.Context(), lr, modern)
	status := http.StatusOK
	if modern {
		status = modernErrorStatus(werr)
	}
	writeJSONStatus(w, status, wire.AnswerParts(lr.id, res, werr))
	return true
}
