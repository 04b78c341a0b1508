package dataplane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// The envelope of a raw call: the host's request is read just far enough
// to route it (id, method, tool name) and its arguments are forwarded as
// they came; the answer is written around the source's result bytes.

// toolCall is a tools/call the raw path takes, as the host sent it.
type toolCall struct {
	id   json.RawMessage // number or string
	name string          // the tool's exposed name, decoded
	// The other members of params, as sent (nil when absent).
	args, meta, inputResponses, requestState json.RawMessage
	// memo, if not nil, is the _meta read before that meta is the same
	// bytes as (see metaMemo).
	memo *metaMemo
	// plain: args, inputResponses and requestState are ASCII without
	// escapes (rawjson.ValidPlainValue), as most calls' are.
	plain bool
	// nameEnd, when not zero, is where the name's value ends in params,
	// the params object of the host's message: params are laid out as
	// rawParams lays out a source's (see forwardParams), so the source's
	// own can be written over them.
	nameEnd int32
	params  []byte
}

// parseToolCall reads the one shape of message the raw path takes: a
// JSON-RPC request {"jsonrpc":"2.0","id":…,"method":"tools/call",
// "params":{"name":…,…}} whose params hold only name, arguments, _meta,
// inputResponses, requestState and task (which is read past), each member
// once and spelled exactly, with an id that is a number or a string, and
// nothing after it. Anything else (a batch, a notification) goes the
// typed way. The id and the other members are returned as sent, and
// checked to be valid JSON, since they are forwarded without being
// decoded.
func parseToolCall(msg []byte) (tc toolCall, ok bool) {
	// One pass over the message: the envelope's walk walks the params
	// too, and each member forwarded as sent is checked as it is skipped
	// (rawjson.ValidValue).
	var rawName []byte
	var pseen [6]bool
	tc.plain = true
	// Whether the params are laid out as rawParams lays out the ones it
	// makes, so that forwardParams can make them over these (see
	// toolCall.nameEnd): the name first, then the arguments, then
	// whichever of _meta, inputResponses and requestState are present, in
	// that order, and each value right after its key, which is right
	// after the previous value (the params' opening brace for the first):
	// `,"key":` or `{"key":` between them, len(key)+4 bytes, no white
	// space. start is where the params begin, last and lastEnd the kind
	// and end of the member before.
	laidOut, start, last, lastEnd, nameEnd := true, 0, -1, 0, 0
	id, method, params, ok := walkEnvelope(msg, func(v int) int {
		start, lastEnd = v, v
		return rawjson.WalkObject(msg, v, func(key []byte, v int) int {
			k, end := -1, -1
			switch string(key) {
			case "name":
				end = rawjson.SkipValue(msg, v)
				k, rawName = 0, msg[v:max(end, v)]
			case "_meta":
				// Most hosts of 2026-07-28 send the same _meta with every
				// request: the last one read is not checked again.
				if m := lastMeta.Load(); m != nil && bytes.HasPrefix(msg[v:], m.raw) {
					end = v + len(m.raw)
					k, tc.meta, tc.memo = 2, msg[v:end], m
				} else {
					end = rawjson.ValidValue(msg, v)
					k, tc.meta = 2, msg[v:max(end, v)]
				}
			case "arguments", "inputResponses", "requestState",
				// A task-augmented request of a revision before the
				// tasks extension: the hub does not offer those tasks,
				// so, as go-sdk's server does, the call is made as a
				// plain one.
				"task":
				var plain bool
				end, plain = rawjson.ValidPlainValue(msg, v)
				tc.plain = tc.plain && (plain || string(key) == "task") // task is not forwarded
				val := msg[v:max(end, v)]
				switch string(key) {
				case "arguments":
					k, tc.args = 1, val
				case "inputResponses":
					k, tc.inputResponses = 3, val
				case "requestState":
					k, tc.requestState = 4, val
				default:
					k = 5
				}
			}
			if k < 0 || pseen[k] {
				return -1
			}
			pseen[k] = true
			// name (0), arguments (1), then 2 to 4 in order; not task (5).
			laidOut = laidOut && k > last && (k == last+1 || last >= 1) && k < 5 && v == lastEnd+len(key)+4
			if k == 0 {
				nameEnd = end
			}
			last, lastEnd = k, end
			return end
		})
	})
	if !ok || id == nil || string(method) != `"tools/call"` || params == nil || !pseen[0] || rawName[0] != '"' {
		return toolCall{}, false
	}
	tc.id = id
	if name, ok := rawjson.PlainString(rawName); ok {
		tc.name = string(name)
	} else {
		// Escapes, or UTF-8 to check. Decoded into a variable of its own:
		// &tc.name would move tc to the heap on every call.
		var name string
		if json.Unmarshal(rawName, &name) != nil {
			return toolCall{}, false
		}
		tc.name = name
	}
	if len(tc.meta) > 0 && tc.meta[0] != '{' {
		return toolCall{}, false
	}
	if laidOut && last >= 1 && lastEnd+1 == start+len(params) && string(tc.args) != "null" {
		// last >= 1: the arguments are there; the params end after the
		// last member (white space after them is the message's).
		tc.params, tc.nameEnd = params, int32(nameEnd-start)
	}
	return tc, true
}

// spanAt returns where v, a slice of the same message as b that begins
// at or after b's start, begins in b.
func spanAt(b, v []byte) int { return cap(b) - cap(v) }

// requestEnvelope reads the members of a JSON-RPC request as the raw
// path takes them (see envelope): a request has an id.
func requestEnvelope(msg []byte) (id, method, params []byte, ok bool) {
	id, method, params, ok = envelope(msg)
	if !ok || id == nil {
		return nil, nil, nil, false
	}
	return id, method, params, true
}

// envelope reads the members of a JSON-RPC request or notification as
// the raw path takes them: jsonrpc "2.0", an id that is a number or a
// string (validID; nil for a notification, which has none), a method,
// and params (nil when absent), each once and spelled exactly, no other
// member, and nothing after the object. They are returned as sent.
func envelope(msg []byte) (id, method, params []byte, ok bool) {
	return walkEnvelope(msg, nil)
}

// walkEnvelope is envelope, with the params, if walk is not nil, walked
// by walk: it gets the index in msg where they start and returns the
// index just past them, or -1 to refuse the message.
func walkEnvelope(msg []byte, walk func(v int) int) (id, method, params []byte, ok bool) {
	var seen [4]bool
	ok = true
	end := rawjson.WalkObject(msg, 0, func(key []byte, v int) int {
		k, end := -1, -1
		if string(key) == "params" && walk != nil {
			end = walk(v)
		} else {
			end = rawjson.SkipValue(msg, v)
		}
		if end < 0 {
			return -1
		}
		val := msg[v:end]
		switch string(key) {
		case "jsonrpc":
			k, ok = 0, string(val) == `"2.0"` // ok until now: a refusal ends the walk
		case "id":
			k, id = 1, val
		case "method":
			k, method = 2, val
		case "params":
			k, params = 3, val
		}
		if !ok || k < 0 || seen[k] {
			ok = false
			return -1 // refused: not read further
		}
		seen[k] = true
		return end
	})
	if !ok || end < 0 || !seen[0] || !seen[2] || rawjson.SkipSpace(msg, end) < len(msg) || seen[1] && !validID(id) {
		return nil, nil, nil, false
	}
	return id, method, params, true
}

// paramsMeta returns the _meta of a request's params (nil: none) as
// go-sdk's decoder reads it (mergedMeta, when given more than once), and
// false when params are neither absent nor an object, or give a _meta
// that is neither an object nor null more than once.
func paramsMeta(params []byte) ([]byte, bool) {
	if params == nil {
		return nil, true
	}
	var meta []byte
	var metas [][]byte
	if params[0] != '{' || rawjson.Object(params, func(key, val []byte) {
		if string(key) == "_meta" || bytes.IndexByte(key, '\\') >= 0 && memberName(key) == "_meta" {
			if meta != nil {
				metas = append(metas, meta)
			}
			meta = val
		}
	}) < 0 {
		return nil, false
	}
	if metas != nil {
		return mergedMeta(append(metas, meta))
	}
	return meta, true
}

// memberName returns a member's key as sent, unescaped.
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key)
	}
	var k string
	json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) // a key rawjson read: cannot fail
	return k
}

// mergedMeta returns the one _meta go-sdk's decoder reads from a _meta
// given more than once, vals in the order sent: into one map, so each
// object's members are added to those of the ones before it (the last of
// a key given twice wins, keys compared unescaped), and a null empties
// it; "null" when nothing is left. False if one of vals is neither an
// object nor null, which go-sdk's decoder refuses (paramsRefusal).
func mergedMeta(vals [][]byte) ([]byte, bool) {
	var keys []string
	var members map[string][]byte
	for _, v := range vals {
		if string(v) == "null" {
			keys, members = nil, nil
			continue
		}
		if len(v) == 0 || v[0] != '{' || !rawjson.Valid(v) {
			return nil, false
		}
		if members == nil {
			members = make(map[string][]byte)
		}
		rawjson.Object(v, func(key, val []byte) {
			k := memberName(key)
			if _, ok := members[k]; !ok {
				keys = append(keys, k)
			}
			members[k] = val
		})
	}
	if members == nil {
		return []byte("null"), true
	}
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		out = rawjson.AppendString(out, k)
		out = append(out, ':')
		out = append(out, members[k]...)
	}
	return append(out, '}'), true
}

// validID reports whether id, a member's value as sent, is a request id
// the raw path takes: a number or a string (not null), valid JSON.
func validID(id []byte) bool {
	c := id[0]
	return (c == '"' || c == '-' || c >= '0' && c <= '9') && (plainInt(id) || rawjson.Valid(id))
}

// metaInfo is what a request's _meta says, for the raw path.
type metaInfo struct {
	rev      junction.Revision // the revision version names (RevisionUnknown: none)
	version  string            // the protocol version the _meta names, as sent
	progress bool              // the host asked for progress (progressToken)
	logLevel bool              // the host asked for log messages (2026-07-28's logLevel)
	level    string            // the level it named ("" if not a string)
	ok       bool              // go-sdk would take the request as it is; false sends it the typed way, which answers it
}

// readMeta reads a request's _meta (nil: none). A request that names a
// revision with the per-request protocol fields (2026-07-28) must carry
// what that revision asks for (client capabilities, an object; client
// info, if any, an object) and name a revision go-sdk speaks exactly;
// anything else is left to the typed reading (ok false), which answers
// it with go-sdk's error.
func readMeta(meta []byte) metaInfo {
	m := wire.ReadMeta(meta, nil)
	return metaInfoOf(&m)
}

// readCallMeta is readMeta of tc's _meta, which parseToolCall checked
// is valid JSON; it keeps what it read in hr, a new record, for the
// server's side (see forwardParams). The _meta that most hosts of
// 2026-07-28 send with every request is read once (metaMemo).
func readCallMeta(tc *toolCall, hr *wire.HostRequest) metaInfo {
	if len(tc.meta) == 0 {
		// Most requests before 2026-07-28 have none: hr keeps its zero
		// Meta, and what an empty one says is known.
		return noMeta
	}
	if m := tc.memo; m != nil {
		// The values stay the memo's bytes, equal to the request's, which
		// nothing changes: the record need not keep the host's message.
		hr.Meta, hr.OtherMeta = m.meta, false
		return m.mi
	}
	hr.Meta = wire.ReadMeta(tc.meta, func(_, _ []byte) { hr.OtherMeta = true })
	mi := metaInfoOf(&hr.Meta)
	if m := &hr.Meta; mi.ok && mi.rev.PerRequestMeta() && !hr.OtherMeta && len(tc.meta) <= maxMetaMemo &&
		m.ProgressToken == nil && m.Subscription == nil && m.TraceParent == nil && m.TraceState == nil {
		// Only the members that stay the same from one request to the
		// next: a _meta with a progress token or a trace context is new
		// each time, and is read each time.
		raw := bytes.Clone(tc.meta)
		lastMeta.Store(&metaMemo{raw: raw, meta: m.Moved(tc.meta, raw), mi: mi, tasks: junction.NamesTasks(raw)})
	}
	return mi
}

// noMeta is what a request without _meta says (readMeta of none).
var noMeta = readMeta(nil)

// metaInfoOf is what the _meta m was read from says, for the raw path.
func metaInfoOf(m *wire.Meta) metaInfo {
	// A version that is not a string names no revision: go-sdk reads the
	// request as one of the session's, as if it named none.
	mi := metaInfo{ok: true, rev: m.Rev, version: m.Version, progress: m.ProgressToken != nil, logLevel: m.LogLevel != nil}
	if m.LogLevel != nil {
		mi.level, _ = rawjson.String(m.LogLevel)
	}
	if mi.rev.PerRequestMeta() {
		mi.ok = mi.ok && mi.rev.Known() && mi.version == mi.rev.String() && clientMetaOK(m.Caps, m.Info)
	}
	return mi
}

// A metaMemo is a tools/call's _meta of 2026-07-28 that go-sdk would take
// (metaInfo.ok), holding only members that stay the same from request to
// request (the protocol version, client info and capabilities, a log
// level), with what readCallMeta read of it. The last one read is kept:
// a request whose _meta is the same bytes is neither checked (it is
// valid JSON) nor read again. Hosts that take turns with different ones
// each store theirs, a copy of a few hundred bytes (a _meta over
// maxMetaMemo is not kept).
type metaMemo struct {
	raw   []byte    // the _meta object, as sent (a copy)
	meta  wire.Meta // read from raw
	mi    metaInfo
	tasks bool // raw names the tasks extension (junction.NamesTasks)
}

// namesTasks reports whether tc's _meta names the tasks extension
// (junction.NamesTasks), as its memo learned if it has one.
func (tc *toolCall) namesTasks() bool {
	if tc.memo != nil {
		return tc.memo.tasks
	}
	return junction.NamesTasks(tc.meta)
}

var lastMeta atomic.Pointer[metaMemo]

// maxMetaMemo bounds the _meta a metaMemo keeps: a host's protocol fields
// take a few hundred bytes.
const maxMetaMemo = 4 << 10

// clientMetaOK reports whether a request's client capabilities (caps,
// required) and client info (info, nil when absent) decode as go-sdk's
// server decodes them (metaRefusal refuses the request otherwise). A
// host sends the same two with every request, so the last pair found
// good is kept, and a request that repeats it costs two comparisons.
func clientMetaOK(caps, info []byte) bool {
	if len(caps) == 0 || caps[0] != '{' || info != nil && (len(info) == 0 || info[0] != '{') {
		return false
	}
	if string(caps) == "{}" && info == nil {
		return true
	}
	if last := lastClientMeta.Load(); last != nil && last.caps == string(caps) && last.info == string(info) {
		return true
	}
	if clientMetaRefusal(caps, info) != nil {
		return false
	}
	lastClientMeta.Store(&clientMeta{caps: string(caps), info: string(info)})
	return true
}

// clientMetaRefusal returns go-sdk's error for a request of 2026-07-28
// whose client capabilities (caps, nil when absent) or client info (info,
// nil when absent) it cannot decode, in go-sdk's order; nil if both do.
func clientMetaRefusal(caps, info []byte) *jsonrpc.Error {
	if info != nil {
		var v *mcp.Implementation
		if string(info) == "null" || !decodeParams(info, &v) {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid _meta field %q", mcp.MetaKeyClientInfo)}
		}
	}
	var c *capabilitiesV2
	if caps == nil || string(caps) == "null" || !decodeParams(caps, &c) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyClientCapabilities)}
	}
	return nil
}

// clientMeta is a pair of client capabilities and client info (as sent)
// that decode as go-sdk decodes them.
type clientMeta struct{ caps, info string }

var lastClientMeta atomic.Pointer[clientMeta]

// metaRefusal returns the error go-sdk's server answers a request whose
// _meta (nil: none) is meta with, when that _meta names a revision from
// 2026-07-28 on that go-sdk will not serve it at, in go-sdk's order:
// client info it cannot decode, client capabilities missing or that it
// cannot decode (-32602), a version it does not speak (-32022, with the
// versions it does); nil for any other _meta. A version that is not a
// string, or one before 2026-07-28, makes the request one of the older
// revisions for go-sdk, and is not refused.
func metaRefusal(meta []byte) *jsonrpc.Error {
	var m map[string]json.RawMessage
	if len(meta) == 0 || meta[0] != '{' || !decodeParams(meta, &m) {
		return nil
	}
	var version string
	if v, ok := m[mcp.MetaKeyProtocolVersion]; !ok || string(v) == "null" || !decodeParams(v, &version) || !junction.ParseRevision(version).PerRequestMeta() {
		return nil
	}
	if werr := clientMetaRefusal(m[mcp.MetaKeyClientCapabilities], m[mcp.MetaKeyClientInfo]); werr != nil {
		return werr
	}
	if r := junction.ParseRevision(version); !r.Known() || r.String() != version {
		data, _ := json.Marshal(&mcp.UnsupportedProtocolVersionData{Supported: mcp.SupportedProtocolVersions(), Requested: version})
		return &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: "unsupported protocol version", Data: data}
	}
	return nil
}

// namesRevision reports whether a request's _meta (nil: none) names a
// protocol revision, known or not: a request of 2026-07-28 or later, which
// stands alone. A version that is not a string names none (readMeta).
func namesRevision(meta []byte) bool {
	return wire.ReadMeta(meta, nil).Version != ""
}

// plainInt reports whether b is a JSON number made of digits only (no
// sign, fraction or exponent), as most hosts' request ids are: valid
// JSON without running the general validator.
func plainInt(b []byte) bool {
	if len(b) == 0 || len(b) > 1 && b[0] == '0' {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// unwrap turns tc, if it is a call of the view's call meta-tool
// (call_tool) that stands for a direct call of another tool, into that
// call, and reports whether it did: the raw path then makes it as the
// direct call it is. Only a call the view has no tool for is looked at.
func (p *Plane) unwrap(tc *toolCall) bool {
	name, args, ok := p.v.Unwrap(tc.name, tc.args)
	if ok {
		tc.name, tc.args, tc.plain = name, args, false // args not checked as the host's were
		tc.params, tc.nameEnd = nil, 0
	}
	return ok
}

// rawParams returns the params object for the source: its own name for
// the tool and the rest as the host sent it; arguments absent (or null)
// become {}, as go-sdk's client sends them on the typed path.
func rawParams(local string, tc toolCall) []byte {
	params, _ := rawParamsAt(nil, local, tc)
	return params
}

// forwardParams returns the params of tc's call for its source
// (rawParams), and records them in hc's link for the server's side
// (wire.Link's Request), with what readCallMeta read of tc's _meta into
// hc.req: a forwarded call has its _meta read once. The params are made
// over the host's own where they can be (paramsInPlace): the host's
// message is not read again once the call is taken.
func forwardParams(local string, tc toolCall, hc *hostCall) []byte {
	params, at, inPlace := paramsInPlace(local, tc, hc)
	if !inPlace {
		params, at = rawParamsAt(hc.params[:0], local, tc)
	}
	hc.req.Params, hc.req.MetaAt, hc.req.Retry = params, at, tc.inputResponses != nil || tc.requestState != nil
	// The tool's own name is written by rawjson.AppendString, whose text
	// is clean whatever the name.
	hc.req.Clean = tc.plain
	if at != [2]int{} && tc.memo == nil && !inPlace {
		// What was read points into the host's message; the record keeps
		// the params instead, which the call keeps anyway (params made in
		// place are in that message).
		hc.req.Meta = hc.req.Meta.Moved(tc.meta, hc.req.RawMeta())
	}
	hc.link.Request = &hc.req
	return params
}

// paramsInPlace makes the params rawParamsAt would make for tc's call
// over its params in the host's message, when they are laid out as those
// are (see toolCall.nameEnd) and the source's name for the tool takes no more
// room than the host's: only the head of the object, up to the name's
// end, is written. It reports false when it cannot. That saves most
// calls a copy of their params, and those of a host of 2026-07-28, whose
// _meta is a few hundred bytes, an allocation too.
//
// The host's message must be the call's own, read by nothing once the
// call is taken: a line of a line connection (wire.LineReader gives each
// its own bytes) or a POST's body. Its id is outside the bytes written.
func paramsInPlace(local string, tc toolCall, hc *hostCall) (params []byte, metaAt [2]int, ok bool) {
	if tc.nameEnd == 0 {
		return nil, metaAt, false
	}
	const head = `{"name":`
	if rawjson.Plain(local) {
		// Most names: quoted as they are.
		start := int(tc.nameEnd) - len(head) - len(local) - 2
		if start < 0 {
			return nil, metaAt, false // the source's name is the longer
		}
		params = tc.params[start:]
		n := copy(params, head)
		params[n] = '"'
		n += 1 + copy(params[n+1:], local)
		params[n] = '"'
	} else {
		name := rawjson.AppendString(hc.params[:0], local)
		start := int(tc.nameEnd) - len(head) - len(name)
		if start < 0 {
			return nil, metaAt, false
		}
		params = tc.params[start:]
		copy(params[copy(params, head):], name)
	}
	if tc.meta != nil {
		at := spanAt(params, tc.meta)
		metaAt = [2]int{at - len(`,"_meta":`), at + len(tc.meta)}
	}
	return params, metaAt, true
}

// rawParamsAt is rawParams, also returning where the _meta member is in
// them, its leading comma included (zero if none). They are made in buf
// if they fit in its capacity, else in a buffer of their own.
func rawParamsAt(buf []byte, local string, tc toolCall) (params []byte, metaAt [2]int) {
	args := tc.args
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	params = buf[:0]
	if n := len(args) + len(tc.meta) + len(tc.inputResponses) + len(tc.requestState) + len(local) + 64; n > cap(buf) {
		params = make([]byte, 0, n)
	}
	params = append(params, `{"name":`...)
	params = rawjson.AppendString(params, local)
	params = append(params, `,"arguments":`...)
	params = append(params, args...)
	for _, m := range []struct {
		key string
		val json.RawMessage
	}{{"_meta", tc.meta}, {"inputResponses", tc.inputResponses}, {"requestState", tc.requestState}} {
		if len(m.val) > 0 {
			start := len(params)
			params = append(params, `,"`...)
			params = append(params, m.key...)
			params = append(params, `":`...)
			params = append(params, m.val...)
			if m.key == "_meta" {
				metaAt = [2]int{start, len(params)}
			}
		}
	}
	return append(params, '}'), metaAt
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
	}) || len(reqID) == 0 || !rawjson.Valid(reqID) {
		return nil, false
	}
	return reqID, true
}

// olderMembers returns res, a result object, for a client before
// protocol 2026-07-28, without the members that revision added: ttlMs
// and cacheScope, a resultType of "complete" and the serverInfo in its
// _meta (see [wire.StripServerFields]).
func olderMembers(res []byte) []byte {
	kept := make([]byte, 0, len(res))
	kept = append(kept, '{')
	dropped := false
	rawjson.ObjectSpans(res, func(key []byte, vs, ve int) {
		if k := string(key); k == "ttlMs" || k == "cacheScope" {
			dropped = true
			return
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(kept, '"')
		kept = append(kept, key...)
		kept = append(kept, `":`...)
		kept = append(kept, res[vs:ve]...)
	})
	kept = append(kept, '}')
	if !dropped {
		kept = res
	}
	return wire.StripServerFields(kept)
}

// canonical returns msg, a JSON-RPC request or notification the plane
// did not take as it is, in the shape the plane reads, as go-sdk's server
// reads it (its decoder: member names matched exactly once unescaped, the
// last of a member given twice, members it does not know left out), and
// reports whether that shape differs from msg: jsonrpc, id, method and
// params, each once; for a tools/call, a list, ping and server/discover
// only the params members the plane reads (the others go-sdk's server
// ignores too). A message go-sdk would not read as a request or a
// notification (no "2.0", no method, an id that is not a number or a
// string, params that are not an object) is not rewritten: it stays
// go-sdk's to answer. A _meta given more than once is written as the one
// go-sdk's decoder reads (mergedMeta). Members of those params that are
// null are left out, as go-sdk reads null as a member's zero value (a tools/call's
// arguments excepted, which go-sdk keeps as they are, and its name,
// which is "" when null or left out); so are null params of a method
// whose params may be left out; a cursor is written without escapes it
// need not have.
func canonical(msg []byte) ([]byte, bool) {
	var env struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	var version, method string
	if len(msg) == 0 || msg[0] != '{' || !rawjson.Valid(msg) || !decodeParams(msg, &env) ||
		!decodeParams(env.JSONRPC, &version) || version != "2.0" ||
		!decodeParams(env.Method, &method) || method == "" || env.ID != nil && !validID(env.ID) {
		return nil, false
	}
	if m, ok := sdkMethodOf(method); ok && m.optional && string(env.Params) == "null" {
		env.Params = nil // go-sdk reads null params of such a method as none
	}
	if env.Params != nil && env.Params[0] != '{' {
		return nil, false
	}
	params := env.Params
	if params != nil {
		var keep []string
		switch {
		case method == "tools/call":
			keep = []string{"name", "arguments", "_meta", "inputResponses", "requestState", "task"}
		case junction.IsListMethod(method):
			keep = []string{"cursor", "_meta"}
		case isBareMethod(method):
			keep = []string{"_meta"}
		}
		if keep != nil {
			var members map[string]json.RawMessage
			if !decodeParams(params, &members) {
				return nil, false
			}
			meta, ok := paramsMeta(params) // merged, if given more than once
			if !ok {
				return nil, false
			}
			if meta != nil {
				members["_meta"] = meta
			}
			if method == "tools/call" && (members["name"] == nil || string(members["name"]) == "null") {
				members["name"] = json.RawMessage(`""`) // go-sdk reads a name left out or null as ""
			}
			params = append(params[:0:0], '{')
			for _, k := range keep {
				v, ok := members[k]
				if !ok || string(v) == "null" && k != "arguments" {
					continue // go-sdk reads null as the member's zero value, as if left out
				}
				if k == "cursor" {
					var cursor string
					if !decodeParams(v, &cursor) {
						return nil, false
					}
					v = rawjson.AppendString(nil, cursor) // with no escape it need not have
				}
				if len(params) > 1 {
					params = append(params, ',')
				}
				params = rawjson.AppendString(params, k)
				params = append(params, ':')
				params = append(params, v...)
			}
			params = append(params, '}')
		}
	}
	out := make([]byte, 0, len(msg))
	out = append(out, `{"jsonrpc":"2.0"`...)
	if env.ID != nil {
		out = append(out, `,"id":`...)
		out = append(out, env.ID...)
	}
	out = append(out, `,"method":`...)
	out = rawjson.AppendString(out, method)
	if params != nil {
		out = append(out, `,"params":`...)
		out = append(out, params...)
	}
	out = append(out, '}')
	if bytes.Equal(out, msg) {
		return nil, false
	}
	return out, true
}
