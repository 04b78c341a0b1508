package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// A host's requests other than tools/call that the plane answers: the
// lists (tools, prompts, resources and resource templates),
// prompts/get, resources/read, completion/complete, server/discover
// and ping. The answer comes from the view ([View.ListPage],
// [View.GetPrompt], [View.ReadResource], [View.Complete],
// [View.Discover]: the one implementation each, which go-sdk's server
// also answers with), written for the host's revision; a ping's is
// empty.
//
// The lists are taken wherever the plane takes a tools/call of the
// same host. So is server/discover, which only a request of 2026-07-28
// or later has, and ping, which only an older one has, over stdio also
// before the session is initialized (go-sdk answers either in the
// other revision, with method not found). The others are taken over
// stdio where a list is; over HTTP on a session, where what the source
// sends the host meanwhile goes on the request's response as for a
// tools/call; and without a session (2026-07-28), where the progress
// and log messages the request asks for go on its response, through
// its host link, as for a tools/call (with JSON answers only, nowhere).
// An older request in stateless mode, which has no session to put
// questions to, is go-sdk's.

// hostRequest is a request of a host the plane takes, as the host sent
// it.
type hostRequest struct {
	id     json.RawMessage // number or string
	method string          // a list (junction.IsListMethod), one of requestMethods or bareMethods
	cursor string          // a list's
	meta   json.RawMessage // nil when absent
	// params is the decoded params of a request that is not a list:
	// *mcp.GetPromptParams, *mcp.ReadResourceParams, *mcp.CompleteParams,
	// *mcp.SetLoggingLevelParams, or *mcp.CallToolParamsRaw for a call of
	// one of the view's own tools (ownToolRequest).
	params any
	name   string // what the request names: a prompt's name, a resource's URI ("" for the others)
	// versions are the revisions the request's transport carries, which
	// server/discover lists (nil: every revision; see legacyVersions).
	versions []string
}

// requestMethods are the methods besides the lists that the plane takes;
// logging/setLevel and the resource subscriptions only on a session (see
// stdioHost).
var requestMethods = [...]string{"prompts/get", "resources/read", "completion/complete", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// sessionMethods are those of requestMethods that change the session's
// own state, which the session's Host keeps.
var sessionMethods = [...]string{"logging/setLevel", "resources/subscribe", "resources/unsubscribe"}

// bareMethods are the methods the plane takes whose params hold nothing
// but _meta: server/discover and ping.
var bareMethods = [...]string{"server/discover", "ping"}

// sdkMethod is a request go-sdk's server knows: its method, a new value
// of the type go-sdk's decoder reads its params into (a pointer to a
// nil pointer of go-sdk's params type, as go-sdk decodes them; for
// initialize, which go-sdk reads into a type of its own with roots
// apart, the exported one), and whether the params may be left out.
type sdkMethod struct {
	name     string
	params   func() any
	optional bool
}

// paramsOf is an sdkMethod's params for go-sdk's params type T.
func paramsOf[T any]() any { return new(*T) }

// sdkMethods are the requests go-sdk's server knows; it answers any
// other with -32601 (methodNotFound), and so does the plane
// (TestUnknownMethods checks both against go-sdk's server).
var sdkMethods = [...]sdkMethod{
	{"initialize", paramsOf[mcp.InitializeParams], false},
	{"ping", paramsOf[mcp.PingParams], true},
	{"server/discover", paramsOf[mcp.DiscoverParams], true},
	{"tools/list", paramsOf[mcp.ListToolsParams], true},
	{"tools/call", paramsOf[mcp.CallToolParamsRaw], false},
	{"prompts/list", paramsOf[mcp.ListPromptsParams], true},
	{"prompts/get", paramsOf[mcp.GetPromptParams], false},
	{"resources/list", paramsOf[mcp.ListResourcesParams], true},
	{"resources/templates/list", paramsOf[mcp.ListResourceTemplatesParams], true},
	{"resources/read", paramsOf[mcp.ReadResourceParams], false},
	{"resources/subscribe", paramsOf[mcp.SubscribeParams], false},
	{"resources/unsubscribe", paramsOf[mcp.UnsubscribeParams], false},
	{"subscriptions/listen", paramsOf[mcp.SubscriptionsListenParams], false},
	{"logging/setLevel", paramsOf[mcp.SetLoggingLevelParams], false},
	{"completion/complete", paramsOf[mcp.CompleteParams], false},
}

// sdkMethodOf returns the request of go-sdk's server whose method is
// name, if it knows one.
func sdkMethodOf(name string) (sdkMethod, bool) {
	for _, m := range sdkMethods {
		if m.name == name {
			return m, true
		}
	}
	return sdkMethod{}, false
}

// sdkMaxDepth is the deepest nesting of a message go-sdk's decoder
// reads; it refuses a deeper one as an invalid request (conn.decode).
const sdkMaxDepth = 1000

// paramsRefusal returns the error go-sdk's server answers a request of
// method with when its params, as sent (nil: none), are not what it
// takes: left out or null where it requires them, or of a shape its
// decoder refuses into its type (the same decoder: member names matched
// exactly, go-sdk's types); nil when it would take them, and for a
// method it does not know. The messages are go-sdk's, word for word,
// but for initialize's (go-sdk names its own type and writes code 0, the
// plane -32602 and the exported type). The message holding params is one
// go-sdk's decoder reads (no deeper than sdkMaxDepth).
func paramsRefusal(method string, params []byte) *jsonrpc.Error {
	m, ok := sdkMethodOf(method)
	if !ok || m.params == nil {
		return nil
	}
	if len(params) == 0 {
		if m.optional {
			return nil
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: `invalid request: missing required "params"`}
	}
	p := m.params()
	inner := reflect.ValueOf(p).Elem()
	if err := sdkDecode(params, p); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("handling '%s': invalid params: unmarshaling %q into a %T: %v", method, params, inner.Interface(), err)}
	}
	if !m.optional && inner.IsNil() {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(`handling '%s': invalid request: missing required "params"`, method)}
	}
	return nil
}

// refusedParams reads msg, a request as sent, and returns its id and
// go-sdk's error for its params (paramsRefusal); a nil error if go-sdk
// would take them or msg is not a request of the envelope's shape.
func refusedParams(msg []byte) (id []byte, werr *jsonrpc.Error) {
	id, rawMethod, params, ok := requestEnvelope(msg)
	if !ok {
		return nil, nil
	}
	method, plain := rawjson.PlainString(rawMethod)
	if !plain {
		return nil, nil
	}
	return id, paramsRefusal(string(method), params)
}

// sdkNotifications are the notifications go-sdk's server knows; the
// plane drops any other, as JSON-RPC asks.
var sdkNotifications = [...]string{
	"notifications/cancelled", "notifications/initialized",
	"notifications/roots/list_changed", "notifications/progress",
}

// isSDKMethod reports whether go-sdk's server knows method, as a
// request's or a notification's: one that comes the other way (a
// request's method without an id) is go-sdk's to refuse.
func isSDKMethod(method string) bool {
	_, ok := sdkMethodOf(method)
	return ok || slices.Contains(sdkNotifications[:], method)
}

// unknownMethod reads msg, if it is a request or a notification of the
// shape the plane reads whose method go-sdk's server does not know
// (sdkMethods, sdkNotifications) and whose _meta go-sdk would accept as
// it is: its id (nil for a notification), its method and what its _meta
// says.
func unknownMethod(msg []byte) (id []byte, method string, mi metaInfo, ok bool) {
	id, rawMethod, params, ok := envelope(msg)
	m, plain := rawjson.PlainString(rawMethod)
	if !ok || !plain || isSDKMethod(string(m)) {
		return nil, "", metaInfo{}, false
	}
	meta, ok := paramsMeta(params)
	if !ok {
		return nil, "", metaInfo{}, false
	}
	if mi = readMeta(meta); !mi.ok {
		return nil, "", metaInfo{}, false
	}
	return id, string(m), mi, true
}

// methodNotFound is the error of a request of a method the hub does not
// serve, or of a method the request's revision does not have, as go-sdk's
// server words both over stdio.
func methodNotFound(method string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: %q", method)}
}

// requestNeedles are what mayBeRequest looks for: the end of a list's
// method, and each of requestMethods and bareMethods in quotes.
var requestNeedles = [...][]byte{[]byte(`/list"`), []byte(`"prompts/get"`), []byte(`"resources/read"`), []byte(`"completion/complete"`), []byte(`"logging/setLevel"`), []byte(`"resources/subscribe"`), []byte(`"resources/unsubscribe"`), []byte(`"server/discover"`), []byte(`"ping"`)}

// mayBeRequest reports whether msg may be a request the plane answers
// other than a tools/call: it names a list, one of requestMethods or one
// of bareMethods.
func mayBeRequest(msg []byte) bool {
	for _, n := range requestNeedles {
		if bytes.Contains(msg, n) {
			return true
		}
	}
	return false
}

// parseRequest reads a JSON-RPC request {"jsonrpc":"2.0","id":…,
// "method":…} the plane answers, each member once and spelled exactly,
// with nothing after it:
//
//   - a list (junction.IsListMethod) whose params, if any, are an object
//     holding only a cursor (a string of printable ASCII, as every cursor
//     the hub makes is) and _meta (an object);
//   - server/discover or ping whose params, if any, hold only _meta;
//   - prompts/get, resources/read, completion/complete, logging/setLevel,
//     resources/subscribe or resources/unsubscribe whose params are an
//     object, with _meta (an object or null) at most once, that decodes
//     as go-sdk decodes it (its decoder, its types); what go-sdk requires
//     of them (a prompt's name, a resource's URI, a completion's
//     reference and argument name, a log level, a URI to subscribe to) is
//     checked when they are answered, with go-sdk's errors.
//
// A message nested deeper than go-sdk's decoder reads (sdkMaxDepth) is
// not taken: it is refused as go-sdk refuses it (conn.decode). Anything
// else is answered with go-sdk's error for it (answerRest).
func parseRequest(msg []byte) (hr hostRequest, ok bool) {
	id, rawMethod, params, ok := requestEnvelope(msg)
	method, plain := rawjson.PlainString(rawMethod)
	if !ok || !plain || len(method) == 0 || rawjson.Deeper(msg, sdkMaxDepth) {
		return hostRequest{}, false
	}
	hr.id, hr.method = id, string(method)
	if junction.IsListMethod(hr.method) {
		return parseMetaParams(hr, params, true)
	}
	if isBareMethod(hr.method) {
		return parseMetaParams(hr, params, false)
	}
	if !isRequestMethod(hr.method) || params == nil {
		return hostRequest{}, false
	}
	if hr.meta, ok = paramsMeta(params); string(hr.meta) == "null" {
		hr.meta = nil // go-sdk reads it as none
	}
	if !ok || hr.meta != nil && (hr.meta[0] != '{' || !rawjson.Valid(hr.meta)) {
		return hostRequest{}, false
	}
	switch hr.method {
	case "prompts/get":
		var p mcp.GetPromptParams
		ok = decodeParams(params, &p)
		hr.params, hr.name = &p, p.Name
	case "resources/read":
		var p mcp.ReadResourceParams
		ok = decodeParams(params, &p)
		hr.params, hr.name = &p, p.URI
	case "logging/setLevel":
		var p mcp.SetLoggingLevelParams
		ok = decodeParams(params, &p)
		hr.params = &p
	case "resources/subscribe":
		var p mcp.SubscribeParams
		ok = decodeParams(params, &p)
		hr.params, hr.name = &p, p.URI
	case "resources/unsubscribe":
		var p mcp.UnsubscribeParams
		ok = decodeParams(params, &p)
		hr.params, hr.name = &p, p.URI
	default:
		var p mcp.CompleteParams
		ok = decodeParams(params, &p)
		hr.params = &p
	}
	if !ok {
		return hostRequest{}, false
	}
	return hr, true
}

func isRequestMethod(method string) bool { return slices.Contains(requestMethods[:], method) }

func isBareMethod(method string) bool { return slices.Contains(bareMethods[:], method) }

// inRevision reports whether a request of hr's method is one that a
// request of revision rev may make: server/discover from 2026-07-28 on,
// ping and the session's own requests (logging/setLevel, the resource
// subscriptions) before it, the others in every revision.
func inRevision(hr hostRequest, rev junction.Revision) bool {
	switch {
	case hr.method == "server/discover":
		return rev.HasDiscover()
	case hr.method == "ping", isSessionMethod(hr.method):
		return !rev.PerRequestMeta()
	}
	return true
}

func isSessionMethod(method string) bool { return slices.Contains(sessionMethods[:], method) }

// decodeParams decodes params into p as go-sdk's server does (the same
// decoder, which matches member names exactly), and reports whether it
// could.
func decodeParams(params []byte, p any) bool { return sdkDecode(params, p) == nil }

// sdkDecode decodes params into p as go-sdk's server does, and returns
// its decoder's error. go-sdk reads them with a json.Decoder, which
// decodes the first JSON value and ignores what follows; so does Parse,
// without the 32 KiB read buffer a Decoder allocates each time. Only when
// Parse fails is a Decoder made, for the error in go-sdk's words.
func sdkDecode(params []byte, p any) error {
	if _, err := sdkjson.Parse(params, p, sdkjson.DontMatchCaseInsensitiveStructFields); err == nil {
		return nil
	}
	dec := sdkjson.NewDecoder(bytes.NewReader(params))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(p)
}

// parseMetaParams reads the params of hr, a list request (cursor) or one
// of bareMethods (see parseRequest).
func parseMetaParams(hr hostRequest, params []byte, cursor bool) (hostRequest, bool) {
	if params == nil {
		return hr, true
	}
	var pseen [2]bool
	var rawCursor []byte
	ok := true
	if rawjson.Object(params, func(key, val []byte) {
		k := -1
		switch string(key) {
		case "cursor":
			if cursor {
				k, rawCursor = 0, val
			}
		case "_meta":
			k, hr.meta = 1, val
		}
		if k < 0 || pseen[k] {
			ok = false
			return
		}
		pseen[k] = true
	}) < 0 || !ok {
		return hostRequest{}, false
	}
	if rawCursor != nil {
		cursor, plain := rawjson.PlainString(rawCursor)
		if !plain {
			return hostRequest{}, false
		}
		hr.cursor = string(cursor)
	}
	if hr.meta != nil && (hr.meta[0] != '{' || !rawjson.Valid(hr.meta)) {
		return hostRequest{}, false
	}
	return hr, true
}

// answer returns the result of hr for host, the host's session (nil: a
// request that stands alone), whose revision has typed results
// (2026-07-28 and later: "resultType" and the hub's serverInfo) or not
// (without that revision's members), or its error. ctx names the host
// (junction.HostSession) and, over HTTP, its user.
func (p *Plane) answer(ctx context.Context, hr hostRequest, host junction.Host, extra *mcp.RequestExtra, typed bool) (json.RawMessage, *jsonrpc.Error) {
	var res mcp.Result
	var err error
	switch params := hr.params.(type) {
	case *mcp.GetPromptParams:
		res, err = nonNil(p.v.GetPrompt(ctx, &mcp.GetPromptRequest{Params: params, Extra: extra}))
	case *mcp.ReadResourceParams:
		res, err = nonNil(p.v.ReadResource(ctx, &mcp.ReadResourceRequest{Params: params, Extra: extra}))
	case *mcp.CompleteParams:
		res, err = nonNil(p.v.Complete(ctx, &mcp.CompleteRequest{Params: params, Extra: extra}))
	case *mcp.CallToolParamsRaw:
		res, err = nonNil(p.v.CallOwnTool(ctx, &mcp.CallToolRequest{Params: params, Extra: extra}))
	case *mcp.SetLoggingLevelParams:
		if werr := p.v.SetHostLevel(host, params.Level); werr != nil {
			return nil, werr
		}
		return json.RawMessage(`{}`), nil
	case *mcp.SubscribeParams, *mcp.UnsubscribeParams:
		_, on := params.(*mcp.SubscribeParams)
		if err = p.v.SubscribeHost(ctx, host, hr.name, on); err == nil {
			return json.RawMessage(`{}`), nil
		}
	default:
		switch hr.method {
		case "ping":
			return json.RawMessage(`{}`), nil
		case "server/discover":
			res = p.v.Discover(hr.versions)
		default:
			res, err = p.v.ListPage(ctx, hr.method, hr.cursor)
		}
	}
	if err != nil {
		return nil, wireError(err)
	}
	b, err := junction.MarshalResult(res, host)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: hr.method + ": " + err.Error()}
	}
	if typed {
		return wire.ModernResult(b, p.impl, 0), nil
	}
	return olderMembers(b), nil
}

// wireError returns err, a view's error, as the protocol error the host
// gets: a JSON-RPC error as it is, anything else an internal error with
// its message.
func wireError(err error) *jsonrpc.Error {
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return werr
}

// nonNil returns res as an mcp.Result, or an error if a source answered
// neither a result nor an error (go-sdk would write null).
func nonNil[R interface {
	comparable
	mcp.Result
}](res R, err error) (mcp.Result, error) {
	var zero R
	if err == nil && res == zero {
		return nil, errors.New("the source answered no result")
	}
	return res, err
}

// takeRequest answers the POST r, whose body is body, if it is a
// request the raw path takes on a live session (sid) or, without one, of
// a host at 2026-07-28 or later (modern; version, its
// Mcp-Protocol-Version) or an older host on a handler without sessions,
// and reports whether it did: a list, server/discover or ping (where
// the request's revision has it) in each of these cases, answered JSON;
// prompts/get, resources/read and completion/complete on a session
// (answerOnSession), and without one at 2026-07-28, answered JSON, or,
// when the request asks for progress or log messages (unless answers are
// JSON only: then they go nowhere), on an SSE stream that carries them.
// A host that goes away ends the request.
func (f *httpRaw) takeRequest(w http.ResponseWriter, r *http.Request, body []byte, sid, version string, modern bool) bool {
	if !mayBeRequest(body) {
		return f.refuseUnknown(w, r, body, sid, version, modern)
	}
	hr, ok := parseRequest(body)
	if !ok {
		return f.refuseUnknown(w, r, body, sid, version, modern)
	}
	if modern && header(r.Header, hdrMethod) != hr.method {
		return false
	}
	mi := readMeta(hr.meta)
	if !mi.ok || mi.rev.PerRequestMeta() != modern || modern && mi.version != version || !inRevision(hr, mi.rev) {
		return false
	}
	if hr.method == "server/discover" && sid != "" {
		return false // a request of 2026-07-28 has no session: go-sdk's to refuse
	}
	if isSessionMethod(hr.method) {
		// go-sdk's: an HTTP session's log messages and resource updates
		// outside a call go on its GET stream, which go-sdk serves, as
		// its session's level and subscriptions say.
		return false
	}
	if hr.params != nil && sid == "" && !modern {
		return false // no session to ask
	}
	if modern && hr.name != "" && header(r.Header, hdrName) != hr.name {
		return false // go-sdk checks the header against the body
	}
	if hr.params != nil {
		f.answerWithoutSession(w, r, hr, mi)
		return true
	}
	f.p.count("http", hr.method)
	res, werr := f.p.answer(r.Context(), hr, nil, nil, modern)
	writeAnswer(w, modern, hr.id, res, werr)
	return true
}

// writeAnswer writes the answer to request id as JSON, with the HTTP
// status of a request of 2026-07-28 or later (modern: modernErrorStatus),
// 200 for an older one.
func writeAnswer(w http.ResponseWriter, modern bool, id []byte, res json.RawMessage, werr *jsonrpc.Error) {
	status := http.StatusOK
	if modern {
		status = modernErrorStatus(werr)
	}
	writeJSONStatus(w, status, wire.AnswerParts(id, res, werr))
}

// refuseUnknown answers the POST r, whose body is body, if it is a
// request of a method go-sdk's server does not know, where takeRequest
// would take a list, and reports whether it did: -32601 as JSON, with
// HTTP 404 for a request of 2026-07-28 (as go-sdk answers it) and 200
// for an older one; a notification of a method go-sdk does not know is
// accepted (202) and dropped. go-sdk's handler answers both with a
// plain-text 400, which is no JSON-RPC answer (docs/deviations.md).
func (f *httpRaw) refuseUnknown(w http.ResponseWriter, r *http.Request, body []byte, sid, version string, modern bool) bool {
	id, method, mi, ok := unknownMethod(body)
	if !ok || id != nil && mi.rev.PerRequestMeta() != modern || modern && (mi.version != version || header(r.Header, hdrMethod) != method) {
		return false
	}
	if id == nil {
		w.WriteHeader(http.StatusAccepted)
		return true
	}
	writeAnswer(w, modern, id, nil, methodNotFound(method))
	return true
}

// answerWithoutSession answers hr, a request other than a list, of a
// 2026-07-28 host without a session, whose _meta says mi: JSON, or, when
// it asks for progress or log messages, an SSE stream that carries them
// (its host link) and then the answer.
func (f *httpRaw) answerWithoutSession(w http.ResponseWriter, r *http.Request, hr hostRequest, mi metaInfo) {
	f.p.count("http", hr.method)
	rc := &httpRawCall{sink: sseSink{w: w, f: f}}
	res, werr := f.p.answer(f.linked(r.Context(), rc, mi, false), hr, nil, requestExtra(r), true)
	rc.sink.finishStatus(modernErrorStatus(werr), wire.AnswerParts(hr.id, res, werr))
}

// requestExtra is what a source's handler gets of the HTTP request r, as
// go-sdk gives it: the caller's token and the request's header. A source
// may close its stream for the host to resume (SEP-1699); the streams of
// the requests answered here stay open.
func requestExtra(r *http.Request) *mcp.RequestExtra {
	return &mcp.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header, CloseSSEStream: func(mcp.CloseSSEStreamArgs) {}}
}

// ownToolRequest returns tc, a tools/call of one of the view's own tools
// (the meta-tools), as a request the plane answers through
// View.CallOwnTool, its params decoded as go-sdk decodes them; false if
// they do not decode (go-sdk answers it then).
func ownToolRequest(tc toolCall) (hostRequest, bool) {
	var p mcp.CallToolParamsRaw
	if !decodeParams(rawParams(tc.name, tc), &p) {
		return hostRequest{}, false
	}
	return hostRequest{id: tc.id, method: "tools/call", meta: tc.meta, params: &p}, true
}
