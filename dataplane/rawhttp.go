package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// The raw path over Streamable HTTP: a POST whose body is one plain
// tools/call (as [Plane.ServeStdio] takes them) on a stateful session, or
// from a client before protocol 2026-07-28 on a handler without sessions,
// is answered by the plane itself, without go-sdk's HTTP transport and
// JSON-RPC machinery, and so are a plain list request there and
// prompts/get, resources/read and completion/complete (requests.go). A
// stateful session's requests are its line connection's (session.go). A
// client of 2026-07-28 or later without a session is the plane's
// whatever it sends (alone.go), and so is an older client's in
// HTTPStateless.
//
// The answer is application/json, unless the upstream sends log messages
// or progress during the call: then the response turns into an SSE
// stream that carries them and then the result, as go-sdk's would. With
// HTTPOptions.JSONResponse the answer is always JSON, and the
// notifications go nowhere (see linked).

// httpRaw is the raw path of one HTTP handler: the requests without a
// session (a stateful session is a line connection: session.go).
type httpRaw struct {
	p        *Plane
	jsonOnly bool // HTTPOptions.JSONResponse: answers are JSON
	mode     HTTPMode
}

// newHTTPRaw returns the raw path of a handler.
func newHTTPRaw(p *Plane, o HTTPOptions) *httpRaw {
	p.v.OfferTasks() // the raw path takes the extension's requests (tasks.go)
	return &httpRaw{p: p, jsonOnly: o.JSONResponse, mode: o.Mode}
}

// take answers the POST r, whose body checkJSONBody read as p, if it is
// for the raw path, and reports whether it did: as the body is and, if it
// is of a shape the plane does not read, in the shape it does
// (canonical). A request of a session is not: the plane's sessions take
// it (session.go).
func (f *httpRaw) take(w http.ResponseWriter, r *http.Request, p *post) bool {
	if alone, modern := f.sessionless(r); alone {
		// The plane answers every such request (alone.go). An older
		// client's that names a version in its _meta is checked first:
		// the takers read that version as the request's own.
		named := !modern && bytes.Contains(p.body, []byte(mcp.MetaKeyProtocolVersion))
		if !refuseTransport(w, r) && (named || !f.takeBody(w, r, p)) {
			c, ok := canonical(bytes.TrimSpace(p.body))
			if named || !ok {
				f.answerRestAlone(w, r, p.body, modern)
			} else if cp := readPost(c); !f.takeBody(w, r, &cp) {
				f.answerRestAlone(w, r, p.body, modern)
			}
		}
		return true
	}
	return false
}

// takeBody is take for a body as it is.
func (f *httpRaw) takeBody(w http.ResponseWriter, r *http.Request, p *post) bool {
	if !f.acceptable(r) {
		return false
	}
	version := header(r.Header, hdrProtocolVersion)
	if junction.ParseRevision(version).Stateless() {
		// The tasks extension (tasks.go), or the rest. A plain call whose
		// _meta does not name the extension is none of its.
		plain := p.isCall && !p.call.namesTasks()
		return f.mode != HTTPStateful && (!plain && f.takeTaskHTTP(w, r, p.body, version) || f.takeModern(w, r, p, version))
	}
	return f.mode == HTTPStateless && f.takeStateless(w, r, p)
}

// endCut ends the response to a call whose answer, begun on it, was cut
// short: o is how the call ended (see rawOutcome).
func (s *sseSink) endCut(to *wire.StreamTo, o rawOutcome) {
	var closer []byte
	if to.InText && o.werr == nil {
		closer = wire.TextCloser(o.res)
	}
	if !s.cutShort(closer, wire.AnswerLine(to.ID, o.res, o.werr)) {
		// A JSON body cut short where it cannot be closed: the response
		// is broken off, so the host does not read half an answer as a
		// whole one.
		panic(http.ErrAbortHandler)
	}
}

// rawOutcome is how an HTTP raw call ended: its answer (res or werr), or
// streamed, when the source's reader wrote the answer while it arrived
// (and cut, if it cut the answer short: res and werr are then the call's
// error answer).
type rawOutcome struct {
	res      json.RawMessage
	facts    junction.ResultFacts // what holds of res (see junction.RawAnswer)
	werr     *jsonrpc.Error
	streamed bool
	cut      error
}

// call makes the raw call of hr and waits for it. A source
// that starts calls ([junction.RawStarter]) may hand a long answer to the
// sink while it arrives (hc.link.Stream), stamped for a host at 2026-07-28
// or later (see Rewrite).
func (f *httpRaw) call(call *junction.Call, rc junction.RawCaller, params json.RawMessage, hr *httpRawCall, id json.RawMessage, stamp []byte) rawOutcome {
	hc, sink := &hr.hc, &hr.sink
	hc.link.Stamp = stamp
	rs, ok := rc.(junction.RawStarter)
	if !ok {
		// The call is cancelled with its request.
		res, werr := call.CallToolRaw(rc, params)
		return rawOutcome{res: res, werr: werr}
	}
	hr.out = make(chan rawOutcome, 2)
	hr.call = call
	hc.stream = wire.StreamTo{ID: id, Out: sink, Done: hr}
	hc.link.Stream = &hc.stream
	// The call's context is cancelled by the host (hc.cancel) and ends
	// with the request: the source's cancel func is not needed.
	call.StartToolRaw(rs, params, hr)
	return <-hr.out
}

// httpRawCall is what take keeps of one raw call, in one allocation:
// its record and its response.
type httpRawCall struct {
	hc   hostCall
	sink sseSink
	// For a started call (httpRaw.call): the call, and where its outcome
	// goes, from AnswerRaw or StreamDone.
	call *junction.Call
	out  chan rawOutcome
}

// AnswerRaw implements junction.RawAnswer: the outcome goes to the
// request's goroutine, which waits for it.
func (hr *httpRawCall) AnswerRaw(res json.RawMessage, facts junction.ResultFacts, werr *jsonrpc.Error) {
	hr.out <- rawOutcome{res: res, facts: facts, werr: werr}
}

// StreamDone implements wire.StreamDone: the source's reader wrote the
// answer while it arrived (or cut it short with err).
func (hr *httpRawCall) StreamDone(size int, isError bool, err error) {
	if err != nil {
		res, _, werr := hr.call.FinishRaw(nil, 0, err)
		hr.out <- rawOutcome{res: res, werr: werr, streamed: true, cut: err}
		return
	}
	hr.call.FinishStreamed(size, isError)
	hr.out <- rawOutcome{streamed: true}
}

// takeStateless answers a tools/call of a client before protocol
// 2026-07-28 on a handler without sessions (HTTPStateless). As in go-sdk's
// stateless mode, such a call has no session to send log messages or
// requests to; progress it asks for goes on its response, through its
// host link (with JSON answers only, nowhere: see linked). A client that
// goes away cancels the call.
func (f *httpRaw) takeStateless(w http.ResponseWriter, r *http.Request, p *post) bool {
	body, tc, ok := p.body, p.call, p.isCall
	if !ok {
		if !rawjson.Contains(body, []byte(`"tools/call"`)) {
			return f.takeRequest(w, r, body, "", "", false)
		}
		return false
	}
	rc := &httpRawCall{sink: sseSink{w: w, f: f}}
	mi := readCallMeta(&tc, &rc.hc.req)
	if !mi.ok || mi.rev.PerRequestMeta() {
		return false
	}
	call, src, taken := f.beginAlone(withHostCall(f.linked(r.Context(), rc, mi, true), &rc.hc), rc, &tc, nil)
	if call == nil {
		return taken
	}
	if call.Decoded() {
		// A source that does not forward bytes (a pack) may log to an
		// older host or ask it something: the call is made by a
		// connection of its own, whose host takes those as go-sdk's
		// stateless session did (serveAlone).
		call.Release()
		return false
	}
	f.answerAlone(rc, call, src, tc, nil)
	return true
}

// linked returns ctx, the context of a POST without a session whose
// request's _meta says mi, with a host link (hostlink.go) that sends the
// progress and log messages the request asks for on rc's response. An
// older client's request (older, in HTTPStateless) gets one whatever it
// asks for, its log messages at info and above: go-sdk's stateless
// handler made a session at that level for it. With JSON answers only
// (-json-response) there is no stream to send them on, and no link: they
// go nowhere, as go-sdk's handler, whose write of them fails, can deliver
// them nowhere either.
func (f *httpRaw) linked(ctx context.Context, rc *httpRawCall, mi metaInfo, older bool) context.Context {
	switch {
	case f.jsonOnly:
		return ctx
	case older:
		rc.sink.logLevel = sinkLevel{level: "info", named: true}
	case mi.progress || mi.logLevel:
		rc.sink.logLevel = sinkLevel{level: mcp.LoggingLevel(mi.level), named: mi.logLevel && mi.rev.PerRequestMeta()}
	default:
		return ctx
	}
	return junction.WithHostLink(ctx, &rc.sink)
}

// answerAlone makes a raw call for a POST without a session, and writes
// its answer: as it arrives, if it is long (see cutthrough.go), stamped
// for a host at 2026-07-28 or later (stamp, see Rewrite), whose errors
// also have their own HTTP status (modernErrorStatus). A client that
// goes away cancels the call (its request's context). readCallMeta has
// read tc's _meta into rc's call.
func (f *httpRaw) answerAlone(rc *httpRawCall, call *junction.Call, src junction.RawCaller, tc toolCall, stamp []byte) {
	f.writeAlone(rc, tc, f.call(call, src, forwardParams(call.Local(), tc, &rc.hc), rc, tc.id, stamp), stamp)
}

// beginAlone begins the raw call of tc for a POST without a session (ctx
// carries rc's host call): of a tool the view serves now, or, as go-sdk's
// handler would, once the sources still connecting are ready; a call of
// call_tool becomes the direct call it stands for (tc changes). A tool
// still unknown then gets its error answered here (taken, with no call);
// a call of a meta-tool is not taken, for the caller to answer (through
// View.CallOwnTool).
func (f *httpRaw) beginAlone(ctx context.Context, rc *httpRawCall, tc *toolCall, stamp []byte) (call *junction.Call, src junction.RawCaller, taken bool) {
	if call, src = f.p.v.BeginRaw(ctx, tc.name); call != nil {
		return call, src, true
	}
	if f.p.unwrap(tc) {
		if call, src = f.p.v.BeginRaw(ctx, tc.name); call != nil {
			return call, src, true
		}
	}
	if f.p.v.OwnTool(tc.name) {
		return nil, nil, false
	}
	call, src, werr := f.p.v.AwaitRaw(ctx, tc.name)
	if werr != nil {
		f.writeAlone(rc, *tc, rawOutcome{werr: werr}, stamp)
		return nil, nil, true
	}
	return call, src, true
}

// writeAlone writes the answer of the raw call of rc for a POST without a
// session, which ended as o.
func (f *httpRaw) writeAlone(rc *httpRawCall, tc toolCall, o rawOutcome, stamp []byte) {
	switch {
	case o.streamed && o.cut == nil:
		rc.sink.release()
	case o.streamed && rc.hc.link.Stream.Begun:
		rc.sink.endCut(rc.hc.link.Stream, o)
	case stamp != nil:
		if o.werr == nil && !rc.hc.link.Stamped.Load() {
			o.res = wire.ModernResult(o.res, stamp, o.facts)
		}
		rc.sink.finishStatus(modernErrorStatus(o.werr), wire.AnswerParts(tc.id, o.res, o.werr))
	default:
		rc.sink.finish(wire.AnswerParts(tc.id, o.res, o.werr))
	}
}

// takeModern answers a tools/call of a client at 2026-07-28 or later,
// which comes without a session: the request carries its protocol fields
// in _meta and names its method and tool in headers (Mcp-Method,
// Mcp-Name). It is not taken unless everything go-sdk checks holds as it
// is: the rest of the plane answers it then, with go-sdk's error
// (alone.go). Progress and log messages
// the host asks for go on the call's response, through its host link
// (with JSON answers only, nowhere: see linked). The result
// gets "resultType" and the hub's serverInfo, as go-sdk's does.
func (f *httpRaw) takeModern(w http.ResponseWriter, r *http.Request, p *post, version string) bool {
	body, tc, ok := p.body, p.call, p.isCall
	if header(r.Header, hdrMethod) != "tools/call" {
		return f.takeRequest(w, r, body, "", version, true)
	}
	if !ok && !rawjson.Contains(body, []byte(`"tools/call"`)) {
		return f.takeRequest(w, r, body, "", version, true)
	}
	if !ok || header(r.Header, hdrName) != tc.name {
		return false
	}
	rc := &httpRawCall{sink: sseSink{w: w, f: f}}
	mi := readCallMeta(&tc, &rc.hc.req)
	if !mi.ok || !mi.rev.PerRequestMeta() || mi.version != version {
		return false
	}
	named := tc.name // the tool the headers are of, not the one a call_tool names
	call, src, taken := f.beginAlone(withHostCall(f.linked(r.Context(), rc, mi, false), &rc.hc), rc, &tc, f.p.impl)
	if call == nil && !taken && f.p.v.OwnTool(tc.name) {
		hr, ok := ownToolRequest(tc) // a meta-tool's call
		if ok {
			f.answerWithoutSession(w, r, hr, mi)
		}
		return ok
	}
	if call == nil {
		return taken
	}
	if tc.name == named {
		if werr := f.p.checkParamHeaders(r.Header, call.Tool(), tc.args); werr != nil {
			call.Release()
			writeJSONStatus(w, http.StatusBadRequest, wire.AnswerParts(tc.id, nil, werr))
			return true
		}
	}
	f.answerAlone(rc, call, src, tc, f.p.impl)
	return true
}

// modernErrorStatus is the HTTP status of an answer to a request at
// 2026-07-28 or later that failed with err, as that revision fixes it for
// some error codes (and go-sdk's handler sends): 404 for an unknown
// method, 400 for invalid params, an unsupported protocol version or a
// missing client capability (an upstream's -32021, say); 200 otherwise.
func modernErrorStatus(err *jsonrpc.Error) int {
	if err == nil {
		return http.StatusOK
	}
	switch err.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeJSONStatus writes answer as an application/json response with the
// given status, and reports whether it left the Content-Length to
// net/http: then the response must not be flushed before its handler
// returns (see heldLength).
func writeJSONStatus(w http.ResponseWriter, status int, answer [][]byte) (held bool) {
	n := 0
	for _, p := range answer {
		n += len(p)
	}
	h := w.Header()
	setHeader(h, hdrContentType, "application/json")
	held = n <= heldLength
	if !held {
		setHeader(h, hdrContentLength, strconv.Itoa(n))
	}
	w.WriteHeader(status)
	for _, p := range answer {
		w.Write(p)
	}
	return held
}

// heldLength is the longest JSON response whose Content-Length is left
// to net/http: it holds the first 2 KiB of a response until the handler
// returns or flushes, and sets the length of a body that all fits there
// when the handler returns, writing the header itself, which costs less
// than a header of the handler's own (net/http copies, sorts and checks
// those). A response flushed before then is sent chunked: correct, but
// a second write. Most answers are this short; a longer one gets its
// length from here.
const heldLength = 2 << 10

// acceptable reports whether r is a POST go-sdk would take: JSON in, and
// both JSON and SSE accepted (JSON alone with JSONResponse).
func (f *httpRaw) acceptable(r *http.Request) bool {
	if ct := header(r.Header, hdrContentType); !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), "application/json") {
		return false
	}
	jsonOK, sseOK := accepts(r.Header[hdrAccept])
	return jsonOK && (sseOK || f.jsonOnly)
}

// sseSink writes the response of one HTTP raw call without a session:
// JSON when the answer is all there is, an SSE stream when log messages
// or progress come first.
type sseSink struct {
	w http.ResponseWriter
	f *httpRaw

	logLevel sinkLevel // see LogLevel

	mu      sync.Mutex
	started bool // the SSE stream has begun
	done    bool // the answer is written (or there will be none)
}

// notify sends a notification (a log message, progress) with params, as
// an SSE event, unless the call has been answered, and reports whether
// it did.
func (s *sseSink) notify(method string, params mcp.Params) bool {
	b, err := notification(method, params)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return false
	}
	s.startStream()
	s.event(b)
	return true
}

// finish writes answer (a JSON-RPC line), or ends the response without
// one when answer is nil. The sink lets go of the response then: the
// call's context, which holds the sink, may outlive the request (a
// source keeps a host it has just served as a destination of its log
// messages for a moment), and must not keep the request and response
// alive with it.
func (s *sseSink) finish(answer [][]byte) {
	s.finishStatus(http.StatusOK, answer)
}

// finishStatus is finish, with the HTTP status of a JSON answer (an SSE
// stream, once begun, has its status).
func (s *sseSink) finishStatus(status int, answer [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	defer s.let()
	if !s.started && answer != nil {
		writeJSONStatus(s.w, status, answer)
		return
	}
	s.startStream()
	if answer != nil {
		s.event(bytes.TrimRight(bytes.Join(answer, nil), "\n"))
	}
}

// BeginLine starts the answer as one line written in parts, by the
// source's reader while the answer arrives (see cutthrough.go): the body
// of an application/json response, or, if the response has become an SSE
// stream, the data of an event (a JSON line has no raw newline). No
// notification or request goes on the response after it.
func (s *sseSink) BeginLine() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.w == nil {
		return errAnswered
	}
	s.done = true
	if s.started {
		_, err := s.w.Write([]byte("data: "))
		return err
	}
	setHeader(s.w.Header(), hdrContentType, "application/json")
	s.w.WriteHeader(http.StatusOK)
	return nil
}

// errAnswered is the error of beginLine, and of a host link's Notify
// (hostlink.go), once the call has its answer.
var errAnswered = errors.New("the call has been answered")

// LinePart writes a part of the line begun with BeginLine.
func (s *sseSink) LinePart(p []byte) error {
	_, err := s.w.Write(p)
	return err
}

// EndLine ends the line begun with BeginLine (its last part ends in a
// newline; an SSE event wants a blank line after it), and flushes it.
func (s *sseSink) EndLine() {
	if s.started {
		s.w.Write([]byte("\n"))
	}
	s.flush()
}

func (s *sseSink) flush() {
	if fl, ok := s.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// release lets go of the response once the answer is written (see
// finish).
func (s *sseSink) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.let()
}

// let lets go of the response, for good: nothing more goes on the
// stream. Called with mu held.
func (s *sseSink) let() {
	s.w = nil
}

// cutShort ends an answer cut short, and lets go of the response. With
// closer (see textCloser), the answer is closed as a tool error, whole.
// Otherwise, on an SSE stream, the event cut short ends as an event of a
// type of junction's own ("junction-cut"), which a client takes for no
// message (go-sdk's reads only "message" events, as the transport's
// messages are), and answer, the call's error, follows as an event of
// its own. It reports false for a JSON body that cannot be closed.
func (s *sseSink) cutShort(closer, answer []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.let()
	switch {
	case closer != nil:
		s.w.Write(closer)
		if s.started {
			s.w.Write([]byte("\n"))
		}
	case s.started:
		s.w.Write([]byte("\nevent: junction-cut\n\n"))
		s.event(bytes.TrimRight(answer, "\n"))
	default:
		return false
	}
	s.flush()
	return true
}

// startStream writes the SSE response header once; called with mu held.
func (s *sseSink) startStream() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	setHeader(h, hdrContentType, "text/event-stream")
	setHeader(h, hdrCacheControl, "no-cache, no-transform")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one SSE message event holding the JSON data (one line)
// and flushes it; called with mu held.
func (s *sseSink) event(data []byte) {
	buf := make([]byte, 0, len(data)+64)
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if s.w != nil {
		s.w.Write(buf)
	}
	s.flush()
}
