package dataplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// DefaultMaxFrame is the default limit on one newline-delimited JSON-RPC
// frame read from a host.
const DefaultMaxFrame = 16 << 20

// DrainTimeout bounds how long a stdio connection waits, after the end of
// its input, for answers to the requests it already read.
const DrainTimeout = 30 * time.Second

// StdioOptions configure [Plane.ServeStdio]. A nil *StdioOptions is the
// same as a zero one.
type StdioOptions struct {
	// MaxFrame bounds one inbound frame; zero means [DefaultMaxFrame].
	MaxFrame int
}

// HostPipeSize is the capacity [Plane.ServeStdio] asks for the pipe of
// its host (out): every result of every source goes to the host through
// it. With the default 64 KiB each piece of a long result waits for the
// host to read the one before. With 1 MiB (Linux's default maximum for an
// unprivileged user), 1 MiB results went through the hub 26-50% faster in
// five interleaved pairs, with less CPU on both sides (1.6-2.1 against
// 1.9-2.3 ms per call for the hub and its upstream, 0.60-0.74 against
// 0.87-0.99 for the host); 256 KiB made about a third of that gain.
// Small calls were unchanged. Pipe pages are allocated as data is
// written, so an idle pipe costs no more; the size counts against the
// user's pipe quota (see [wire.GrowPipe]), once per hub.
const HostPipeSize = 1 << 20

// ServeStdio serves the plane's view on in and out as the MCP stdio
// transport specifies (newline-delimited JSON-RPC; out carries nothing
// else), until in ends or ctx is done.
//
// One goroutine reads in, and the plane answers every message itself: a
// tools/call for a tool whose source is a [junction.RawCaller] is
// forwarded as bytes where it can be (see the package doc), and the
// source's result written back as bytes; the other requests are answered
// from the view (see docs/design.md, "The path of one call"). Answers go
// through one writer that coalesces lines written together into one
// system call. Bad input does not end the connection: a line that is
// not JSON is answered with -32700, one that is not a JSON-RPC message, a
// batch or a line over MaxFrame with -32600 (id null), and reading goes
// on.
//
// When out is a pipe ([os.File]), it is grown to [HostPipeSize] (see
// [wire.GrowPipe]).
//
// When in ends, the requests already read are answered first (up to
// [DrainTimeout]); when ctx is done, the connection closes at once (a
// caller that wants calls in flight to finish waits for
// [junction.Hub.WaitIdle] first: raw calls count there too).
func (p *Plane) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts *StdioOptions) error {
	if f, ok := out.(*os.File); ok {
		if err := wire.GrowPipe(f, HostPipeSize); err != nil && p.logger != nil {
			p.logger.Debug("stdout keeps its pipe size", "error", err)
		}
	}
	max := DefaultMaxFrame
	if opts != nil && opts.MaxFrame > 0 {
		max = opts.MaxFrame
	}
	return p.serveLines(ctx, in, out, lineConn{max: max})
}

// lineConn says what connection serveLines serves.
type lineConn struct {
	max int // the longest line read
	// from is the HTTP request the connection is of, nil over stdio: its
	// calls carry its values (its user, its token, the address it came
	// to).
	from *http.Request
	// legacy: a legacy HTTP+SSE session (sse.go), which serves only the
	// revisions before 2026-07-28.
	legacy bool
	// alone: one request of a client without a session over HTTP
	// (serveAlone), which cannot answer the plane's keep-alive pings.
	alone bool
	// older, for a request of an older client without a session
	// (HTTPStateless), is what the connection starts with, as go-sdk's
	// stateless handler starts the session it makes for such a request:
	// initialized with these params (the revision the request's header
	// names), at log level info, and with no way to ask the host
	// anything.
	older *mcp.InitializeParams
	// session, for a stateful Streamable HTTP session (session.go), is
	// its input and output: its requests' messages go on their POSTs'
	// responses (postLink), and a refusal of a line answers the POST
	// that fed it.
	session *planeSession
}

// serveLines serves a connection whose messages come as lines from in
// and go as lines to out: a stdio host's (ServeStdio), a legacy HTTP+SSE
// session's (sse.go), or one request without a session over HTTP
// (serveAlone). See ServeStdio. (A Streamable HTTP session's connection
// is opened the same way, but has no goroutine of its own: session.go.)
func (p *Plane) serveLines(ctx context.Context, in io.Reader, out io.Writer, o lineConn) error {
	s, ctx, cancel, closeAll := p.openLines(ctx, out, o)
	defer closeAll()
	c := s.c
	readErr := make(chan error, 1)
	go func() {
		err := readFrames(in, o.max, c, s.take, s.batch.Flush)
		c.hostGone()
		readErr <- err
	}()
	// The connection ends with ctx or the view, or with its input.
	var err error
	select {
	case <-ctx.Done():
		err = ctx.Err()
		s.stop()
	case <-p.v.Ended():
		cancel()
		s.stop()
	case err = <-readErr:
		// The input ended: answer the calls in flight first.
		s.calls.wait(DrainTimeout)
	}
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
		err = nil
	}
	return err
}

// openLines sets up a connection whose output lines go to out (see
// serveLines): it returns the connection, its context and that
// context's cancel, and closeAll, which ends what it set up once the
// connection is over (after stop, or the end of its input).
func (p *Plane) openLines(ctx context.Context, out io.Writer, o lineConn) (*stdioSession, context.Context, context.CancelFunc, func()) {
	var undo []func() // run in reverse by closeAll, as defers would be
	pinger := new(sync.WaitGroup)
	undo = append(undo, pinger.Wait) // after cancel
	ctx, cancel := context.WithCancel(ctx)
	undo = append(undo, cancel)
	w := wire.NewWriter(out)
	undo = append(undo, func() { w.Flush() })
	closeAll := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	c := newConn(w, p.onBadFrame)
	if o.session != nil {
		c.refuse, c.malformed = o.session.in.refuse, o.session.in.malformedLine
	}
	c.listens = &listens{c: c, v: p.v}
	// The connection's Host, which answers everything the host sends.
	endCtx, end := context.WithCancel(context.Background())
	front := &stdioHost{c: c, v: p.v, ended: make(chan struct{}), endCtx: endCtx}
	if o.session != nil {
		front.id = o.session.id
	}
	undo = append(undo, end, func() { close(front.ended) })
	if !o.alone { // a request without a session is no session
		p.stdioHosts.Store(front, struct{}{})
		undo = append(undo, func() { p.stdioHosts.Delete(front) })
	}
	// The host's listens hear of the view's list changes from the plane,
	// and so does the host itself once it has initialized.
	undo = append(undo, c.tellLists(ctx, p.v, o.session != nil))
	// Raw calls are made for the connection's session; they are not
	// children of ctx (each would register with it): ServeStdio cancels
	// the ones in flight when it stops.
	base := context.Background()
	if o.from != nil {
		base = context.WithoutCancel(o.from.Context())
	}
	s := &stdioSession{p: p, c: c, front: front, base: junction.WithHostSession(base, front), legacy: o.legacy || o.session != nil, countAs: "stdio", session: o.session}
	if o.alone || o.session != nil {
		s.countAs = "http"
	}
	c.listens.ctx, c.listens.host = s.base, front
	if o.older != nil {
		front.init.Store(o.older)
		front.noAsk = true
		if !junction.ParseRevision(o.older.ProtocolVersion).TypedResults() {
			c.older.Store(true)
		}
		c.greeted.Store(true)
		s.ready = true
		p.v.SetHostLevel(front, "info")
	}
	p.v.OfferTasks() // this connection takes the extension's requests (tasks.go)
	if every := p.v.KeepAlive(); every > 0 && !o.alone {
		pinger.Go(func() { front.keepAlive(ctx, every, p.logger, cancel) })
	}
	undo = append(undo, s.endTasks)
	return s, ctx, cancel, closeAll
}

// stop ends the connection at once: its raw calls are cancelled, and
// waited for (up to DrainTimeout).
func (s *stdioSession) stop() {
	s.c.hostGone()
	s.calls.cancelAll()
	s.calls.wait(DrainTimeout)
}

func (p *Plane) onBadFrame(err error) {
	p.logger.Warn("bad frame from host", "error", err)
}

// stdioSession is one stdio connection served by a plane.
type stdioSession struct {
	p     *Plane
	c     *conn
	front *stdioHost      // the connection's Host
	base  context.Context // the raw calls' parent: names the connection's Host (junction.HostSession)
	calls inflight
	// ready is set once the host has sent notifications/initialized
	// after initialize was answered (a second one is logged). Owned by the
	// reading goroutine.
	ready bool
	// countAs is the front the requests it answers are counted for
	// (Options.Count): "stdio", or "http" for a request without a session
	// (lineConn.alone).
	countAs string
	// session: a stateful Streamable HTTP session's (lineConn.session).
	session *planeSession
	// legacy: a legacy HTTP+SSE session, of a revision before 2026-07-28
	// (its requests of 2026-07-28 are served as on stdio, but its
	// server/discover lists the revisions the transport carries).
	legacy bool
	// batch is the reading goroutine's: requests to servers queue there
	// while it handles what one read brought in (see writer.go).
	batch wire.Batch
	// The host's name for its tasks, and the end of the notifications of
	// their status: set on the first request for the tasks extension
	// (see tasks.go).
	taskMu     sync.Mutex
	owner      string
	unwatch    func()
	tasksEnded bool
}

// take answers line and reports whether it did: false only for a line
// that is not a JSON-RPC message go-sdk's decoder reads (conn.decode
// refuses it). A line of a shape the plane does not read is read again in the shape
// it does (canonical). Called by the reading goroutine.
func (s *stdioSession) take(line []byte) bool {
	if s.takeLine(line) {
		return true
	}
	if c, ok := canonical(line); ok && s.takeLine(c) {
		return true
	}
	if !rawjson.Valid(line) || rawjson.Deeper(line, sdkMaxDepth) {
		return false // refused as not JSON, or too deep (conn.decode)
	}
	return s.refuseParams(line) || s.answerRest(line)
}

// answerRest answers a message no taker above took, as go-sdk's session
// would, and reports whether it did: false for a line go-sdk's decoder
// does not read as a message, which conn.decode refuses. A notification
// the plane has no use for (one it does not know, or one of the
// session's before initialize is answered) and an answer to no request
// are dropped, as JSON-RPC asks; a request gets the error of restError.
// Called by the reading goroutine.
func (s *stdioSession) answerRest(line []byte) bool {
	sdkLine, raw := sdkReadable(line)
	msg, err := jsonrpc.DecodeMessage(sdkLine)
	if err != nil {
		return false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		if ok && req.Method == "notifications/initialized" && !s.initialized() {
			s.p.logger.Error("initialized before initialize") // as go-sdk's server logs it
		}
		return true
	}
	s.c.out.Write(wire.ErrorLine(sentID(line, raw), s.restError(req)))
	return true
}

// restError returns the error for a request no taker took (answerRest),
// in the order go-sdk's server checks it: what its _meta names, the
// session's state (a request before initialize is answered), the method
// (one go-sdk knows, as a request), and its params. What is left is a
// request the plane should have taken: it is refused as an internal
// error, and logged.
func (s *stdioSession) restError(req *jsonrpc.Request) *jsonrpc.Error {
	meta, _ := paramsMeta(req.Params)
	if werr := metaRefusal(meta); werr != nil {
		return werr
	}
	method := req.Method
	switch {
	case !s.initialized() && !namesRevision(meta) && !slices.Contains(beforeInitialize[:], method):
		return earlyError(method)
	case slices.Contains(sdkNotifications[:], method):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("invalid request: unexpected id for %q", method)}
	case !isSDKMethod(method):
		return methodNotFound(method)
	}
	if werr := paramsRefusal(method, req.Params); werr != nil {
		return werr
	}
	if method == "initialize" && s.initialized() {
		return initializeAgain()
	}
	s.p.logger.Warn("request not served: the data plane took no path for it", "method", method)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: the hub did not serve this %s request", method)}
}

// refuseParams answers a request, as the host sent it, whose params
// go-sdk's server would not take (paramsRefusal) with go-sdk's error, on
// a session that has initialized, and reports whether it did. Called by
// the reading goroutine for a line no taker took, a JSON value go-sdk's
// decoder reads.
func (s *stdioSession) refuseParams(line []byte) bool {
	if !s.initialized() {
		return false
	}
	id, werr := refusedParams(line)
	if werr == nil {
		return false
	}
	s.c.out.Write(wire.ErrorLine(id, werr))
	return true
}

// takeLine is take for a line as it is.
func (s *stdioSession) takeLine(line []byte) bool {
	// A plain tools/call first, the line most read: it is no cancellation,
	// and a request for the tasks extension only if its _meta names it,
	// so the whole line is not searched for those. It is read as one
	// first, which most lines of another method stop at their first
	// member that is not a call's; only then is it searched for the name.
	if tc, ok := parseToolCall(line); ok {
		if tc.namesTasks() && s.takeTask(line) {
			return true
		}
		return s.takeCall(tc) || !s.initialized() && s.refuseEarly(line) || s.refuseMeta(line)
	}
	isCall := rawjson.Contains(line, []byte(`"tools/call"`))
	if !isCall && mayBeRequest(line) {
		if hr, ok := parseRequest(line); ok && s.takeRequest(hr) {
			return true
		}
	}
	if !isCall && s.takeInitialize(line) {
		return true
	}
	if !isCall && s.c.asks.answer("", line) {
		return true // an answer to the plane's request (stdioHost)
	}
	if s.takeTask(line) {
		return true
	}
	if rawjson.Contains(line, []byte(`"notifications/cancelled"`)) {
		id, ok := cancelledID(line)
		return ok && (s.c.listens.cancel(id) || s.calls.cancel(string(id)))
	}
	if rawjson.Contains(line, []byte(`"subscriptions/listen"`)) {
		return s.c.listens.take(line)
	}
	if !s.initialized() && s.refuseEarly(line) {
		return true
	}
	if !isCall && s.takeNotification(line) {
		return true
	}
	return !isCall && s.refuseUnknown(line) || s.refuseMeta(line)
}

// refuseMeta answers a request whose _meta go-sdk's server refuses
// (metaRefusal) with go-sdk's error, and reports whether it did: every
// taker above declines such a request. Called by the reading goroutine.
func (s *stdioSession) refuseMeta(line []byte) bool {
	id, _, params, ok := requestEnvelope(line)
	if !ok {
		return false
	}
	meta, ok := paramsMeta(params)
	if !ok {
		return false
	}
	werr := metaRefusal(meta)
	if werr == nil {
		return false
	}
	s.c.out.Write(wire.ErrorLine(id, werr))
	return true
}

// refuseUnknown answers a request of a method go-sdk's server does not
// know (sdkMethods) with -32601 and go-sdk's message, where the plane
// would take a list (initialized, or a request that stands alone with a
// _meta go-sdk accepts), and drops a notification go-sdk does not know
// (sdkNotifications), as go-sdk does; it reports whether it did. The
// tasks extension's requests and subscriptions/listen, which the plane
// answers, were taken before. Called by the reading goroutine.
func (s *stdioSession) refuseUnknown(line []byte) bool {
	id, method, mi, ok := unknownMethod(line)
	if !ok || id != nil && !s.initialized() && !mi.rev.Stateless() {
		return false
	}
	if id != nil {
		s.c.out.Write(wire.ErrorLine(id, methodNotFound(method)))
	}
	return true
}

// takeInitialize answers the host's initialize, if line is one of the
// shape the plane reads, and reports whether it did: the answer is the
// view's (View.Initialize), the revision it negotiates is the
// connection's, and the host's params are its Host's (stdioHost). An
// initialize whose _meta names a revision of 2026-07-28 or later, which
// has no initialize, gets go-sdk's error, at any time, and a second
// initialize after the first was answered -32600 (go-sdk's server wrote
// code 0); one whose params go-sdk's decoder would not read is refused
// with the decoder's error (answerRest), and leaves the connection
// uninitialized. Called by the reading goroutine.
func (s *stdioSession) takeInitialize(line []byte) bool {
	if !rawjson.Contains(line, []byte(`"initialize"`)) {
		return false
	}
	id, method, params, ok := requestEnvelope(line)
	if !ok || string(method) != `"initialize"` || len(params) == 0 || params[0] != '{' {
		return false
	}
	meta, ok := paramsMeta(params)
	if !ok {
		return false
	}
	if namesRevision(meta) {
		// A request of 2026-07-28 or later, which has no initialize: go-sdk
		// refuses it as it refuses a _meta it cannot read (metaRefusal),
		// or as a method of no revision it names. It is not the host's
		// initialize.
		if mi := readMeta(meta); !mi.rev.PerRequestMeta() {
			return false
		}
		werr := metaRefusal(meta)
		if werr == nil {
			werr = methodNotFound("initialize")
		}
		s.c.out.Write(wire.ErrorLine(id, werr))
		return true
	}
	if s.c.greeted.Load() {
		s.c.out.Write(wire.ErrorLine(id, initializeAgain()))
		return true
	}
	ip, ok := decodeInitialize(params)
	if !ok {
		return false
	}
	s.p.count(s.countAs, "initialize")
	res := s.p.v.Initialize(ip)
	s.front.init.Store(ip)
	if !junction.ParseRevision(res.ProtocolVersion).TypedResults() {
		s.c.older.Store(true)
	}
	b, err := json.Marshal(res)
	if err != nil {
		s.c.out.Write(wire.ErrorLine(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}))
		return true
	}
	// The answer first: nothing of the session's (a list change) comes
	// before it.
	s.c.out.Write(wire.AnswerLine(id, b, nil))
	s.c.greeted.Store(true)
	return true
}

// decodeInitialize decodes the params of an initialize as go-sdk's
// server does: its decoder, and the roots capability, whose presence
// go-sdk's ClientCapabilities type cannot hold, in RootsV2 (and copied to
// Roots). junction.MarshalInitializeParams writes them back.
func decodeInitialize(params []byte) (*mcp.InitializeParams, bool) {
	var p struct {
		mcp.InitializeParams
		Capabilities *capabilitiesV2 `json:"capabilities"`
	}
	if !decodeParams(params, &p) {
		return nil, false
	}
	ip := p.InitializeParams
	ip.Capabilities = p.Capabilities.v1()
	return &ip, true
}

// capabilitiesV2 is a client's capabilities as go-sdk's server decodes
// them: roots a member of its own, whose presence go-sdk's
// ClientCapabilities type cannot hold.
type capabilitiesV2 struct {
	mcp.ClientCapabilities
	Roots *mcp.RootCapabilities `json:"roots,omitempty"`
}

// v1 returns c as go-sdk's type holds it: roots in RootsV2, and copied
// to Roots for older readers; nil for nil.
func (c *capabilitiesV2) v1() *mcp.ClientCapabilities {
	if c == nil {
		return nil
	}
	caps := c.ClientCapabilities
	caps.RootsV2 = c.Roots
	if c.Roots != nil {
		caps.Roots = *c.Roots
	}
	return &caps
}

// refuseEarly answers a request of a revision before 2026-07-28 that
// comes before the host has sent initialize (other than ping, and
// server/discover, which go-sdk refuses by revision) with -32600 and an
// error that says to initialize first, and reports whether it did. It
// notes the host's initialize, after which requests are served (a host
// may send them without waiting for initialize's answer). A request of
// 2026-07-28, which names its revision in its _meta and stands alone,
// is not refused. Called by the reading goroutine.
func (s *stdioSession) refuseEarly(line []byte) bool {
	id, rawMethod, params, ok := envelope(line)
	method, plain := rawjson.PlainString(rawMethod)
	if !ok || !plain {
		return false // read again in the plane's shape (canonical)
	}
	meta, ok := paramsMeta(params)
	switch {
	case string(method) == "initialize":
		return false
	case id == nil || !ok:
		return false
	case namesRevision(meta):
		return false // a request that stands alone: go-sdk checks its revision
	case string(method) == "ping", string(method) == "server/discover":
		return false // allowed, and refused only by revision
	case string(method) == "notifications/initialized", string(method) == "notifications/roots/list_changed":
		return false // a notification's method with an id: refused as such (restError)
	}
	s.c.out.Write(wire.ErrorLine(id, earlyError(string(method))))
	return true
}

// beforeInitialize are the methods go-sdk's server looks at in a request
// sent before initialize has been answered, as it looks at any other
// after: every other is refused (earlyError). Those of notifications are
// then refused for their id (restError), and the plane refuses the
// session's own (logging/setLevel, the resource subscriptions) too.
var beforeInitialize = [...]string{"initialize", "ping", "notifications/initialized", "notifications/roots/list_changed"}

// earlyError is the error of a request of a revision before 2026-07-28
// that comes before initialize has been answered (go-sdk's server wrote
// code 0, "… is invalid during session initialization").
func earlyError(method string) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("%s before initialize: a client of a revision before 2026-07-28 sends initialize first", method),
	}
}

// initializeAgain is the error of an initialize after the first (go-sdk's
// server wrote code 0, "duplicate \"initialize\" received").
func initializeAgain() *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidRequest,
		Message: "initialize again: this connection is initialized already (a client initializes once)",
	}
}

// takeNotification takes the host's notifications of its session once
// initialize has been answered, and reports whether it did:
// notifications/initialized and notifications/roots/list_changed, which
// the hub hears of (View.HostInitialized, View.HostRootsChanged) with the
// connection's Host; a second notifications/initialized, which is logged
// as go-sdk's server logs it; and notifications/progress, which a server
// of the hub's has no use for (go-sdk's server ignores it too). go-sdk's
// session never hears of them. Before the answer they are dropped
// (answerRest), as go-sdk's server drops them. Called by the reading
// goroutine.
func (s *stdioSession) takeNotification(line []byte) bool {
	id, method, _, ok := envelope(line)
	if !ok || id != nil {
		return false
	}
	if !s.c.greeted.Load() {
		return false // dropped (answerRest), as go-sdk's server drops it before initialize
	}
	switch string(method) {
	case `"notifications/initialized"`:
		if s.ready {
			s.p.logger.Error("duplicate initialized notification")
		} else {
			s.ready = true
			s.p.v.HostInitialized(junction.HostSession(s.base))
		}
	case `"notifications/roots/list_changed"`:
		s.p.v.HostRootsChanged(junction.HostSession(s.base))
	case `"notifications/progress"`:
	default:
		return false
	}
	s.p.count(s.countAs, string(method[1:len(method)-1]))
	return true
}

// initialized reports whether the raw path takes the host's requests
// that need a session: once initialize has been answered, as go-sdk's
// server serves them from then on, without waiting for
// notifications/initialized.
func (s *stdioSession) initialized() bool { return s.c.greeted.Load() }

// takeCall answers tc, a plain tools/call, on the raw path if it can, and
// reports whether it did. Called by the reading goroutine.
func (s *stdioSession) takeCall(tc toolCall) bool { return s.takeCallIn(tc, &s.batch) }

// takeCallIn is takeCall, its request to a server queued in batch b: the
// reading goroutine's, or a POST's own on a Streamable HTTP session,
// which takes its plain calls without the session's lock
// (planeSession.feed). A call taken owns the message tc was read from:
// its params may be written over (forwardParams).
func (s *stdioSession) takeCallIn(tc toolCall, b *wire.Batch) bool {
	sc := &stdioCall{}
	hc := &sc.hostCall
	mi := readCallMeta(&tc, &hc.req)
	// Before initialize only a request of 2026-07-28 or later stands on
	// its own.
	if !mi.ok || !s.initialized() && !mi.rev.Stateless() {
		return false
	}
	s.noteStandalone(mi)
	// The closures below take id, not tc, which then stays on the stack.
	id, key := tc.id, string(tc.id)
	ctx := withHostCall(s.linked(key, hc, mi), hc)
	call, rc := s.p.v.BeginRaw(ctx, tc.name)
	if call == nil {
		if s.p.unwrap(&tc) {
			return s.takeCallIn(tc, b) // call_tool's call, made directly
		}
		if s.p.v.OwnTool(tc.name) {
			hr, ok := ownToolRequest(tc)
			return ok && s.takeRequest(hr)
		}
		return s.awaitCall(tc, mi)
	}
	rs, starts := rc.(junction.RawStarter)
	var cancelCtx context.CancelCauseFunc
	if !starts {
		// A source that only calls and waits is cancelled through the
		// call's context: begin again with one that can be.
		call.Release()
		ctx, cancelCtx = context.WithCancelCause(ctx)
		hc.cancel = junction.RawCancelFunc(cancelCtx)
		if call, rc = s.p.v.BeginRaw(ctx, tc.name); call == nil {
			cancelCtx(nil)
			return false
		}
	}
	if !s.calls.add(key, hc) {
		call.Release()
		if cancelCtx != nil {
			cancelCtx(nil)
		}
		return s.refuseReused(id)
	}
	if s.session != nil && call.Decoded() {
		call.SetRequestExtra(s.session.requestExtra(key))
	}
	params := forwardParams(call.Local(), tc, hc)
	typed := mi.rev.TypedResults()
	if typed {
		hc.link.Stamp = s.p.impl
	}
	var started *junction.Call
	if starts {
		started = call
	}
	sc.answerAs(s, key, id, typed, cancelCtx, started)
	if starts {
		// A long answer may come to the host while it arrives (see
		// cutthrough.go), rewritten on the way for a host at 2026-07-28
		// or later as wire.ModernResult rewrites it whole.
		hc.stream = wire.StreamTo{ID: id, Out: s.c.out, Done: sc}
		hc.link.Stream = &hc.stream
		// No goroutine waits: the source's reader answers (see
		// junction.RawStarter). The request queues with this read's. A
		// cancellation from the host comes on this goroutine too, after
		// StartToolRaw has returned the call's cancel func.
		hc.link.From.Store(b)
		s.calls.setCancel(hc, call.StartToolRaw(rs, params, sc))
		hc.link.From.Store(nil)
		return true
	}
	go func() {
		res, werr := call.CallToolRaw(rc, params)
		sc.AnswerRaw(res, 0, werr)
	}()
	return true
}

// stdioCall is a raw call of a line connection (its hostCall) with what
// it takes to answer the host: it is the call's junction.RawAnswer and,
// for a call whose answer may go to the host while it arrives, its
// wire.StreamDone, so that the answer needs no closure of its own.
type stdioCall struct {
	hostCall
	s     *stdioSession
	key   string                  // the host's id as a key of the session's calls
	id    []byte                  // the host's id as sent
	typed bool                    // a result for the host's revision of 2026-07-28 or later
	done  context.CancelCauseFunc // called after the answer, if not nil
	// call is set for a call that was started (junction.RawStarter), for
	// StreamDone: its answer may be given by a server's reading goroutine
	// within its delivery, and then queues in that goroutine's batch
	// (wire.Link's Via). Otherwise (nil) the answer is given by a
	// goroutine that waited for it, which must not touch the batch of a
	// reader still delivering to it, and is written at once.
	call *junction.Call
}

// answerAs sets how sc, the call of s with the host's id id (key as a
// key of s's calls), is answered: see the fields of stdioCall.
func (sc *stdioCall) answerAs(s *stdioSession, key string, id []byte, typed bool, done context.CancelCauseFunc, started *junction.Call) {
	sc.s, sc.key, sc.id, sc.typed, sc.done, sc.call = s, key, id, typed, done, started
}

// AnswerRaw implements junction.RawAnswer: it answers the host with a
// result for its revision, or a protocol error; not if the host
// cancelled the call, as JSON-RPC asks. Then it calls sc.done, if set.
func (sc *stdioCall) AnswerRaw(res json.RawMessage, facts junction.ResultFacts, werr *jsonrpc.Error) {
	s, hc := sc.s, &sc.hostCall
	stamp := werr == nil && sc.typed && !hc.link.Stamped.Load()
	s.calls.finish(sc.key, hc, func() {
		if s.session != nil {
			// Straight to the POST that waits for it (session.go).
			s.session.out.answer(sc.key, sc.line(res, facts, werr, stamp))
			return
		}
		if werr == nil && len(res) > wire.BigWrite {
			if stamp {
				res = wire.ModernResult(res, s.p.impl, facts)
			}
			s.c.out.WriteAnswer(sc.id, res) // not held back: no copy
			return
		}
		// The line is made where it is queued (wire.Writer.AppendLine).
		size, add := sc.lineSize(res, stamp), func(dst []byte) []byte { return sc.appendLine(dst, res, facts, werr, stamp) }
		if via := hc.link.Via.Load(); via != nil && sc.call != nil {
			s.c.out.AppendDeferred(size, 0, via, add) // the server's reader flushes it
		} else {
			s.c.out.AppendLine(size, 0, add)
		}
	})
	if sc.done != nil {
		sc.done(nil)
	}
}

// line is the host's answer line: res stamped for the host's revision
// when stamp is set (wire.ModernAnswerLine), or werr.
func (sc *stdioCall) line(res json.RawMessage, facts junction.ResultFacts, werr *jsonrpc.Error, stamp bool) []byte {
	return sc.appendLine(make([]byte, 0, sc.lineSize(res, stamp)), res, facts, werr, stamp)
}

// appendLine appends line's line to dst; facts are what holds of res.
func (sc *stdioCall) appendLine(dst []byte, res json.RawMessage, facts junction.ResultFacts, werr *jsonrpc.Error, stamp bool) []byte {
	if stamp {
		return wire.AppendModernAnswer(dst, sc.id, res, sc.s.p.impl, facts)
	}
	return wire.AppendAnswer(dst, sc.id, res, werr)
}

// lineSize is the length of line's line, about.
func (sc *stdioCall) lineSize(res json.RawMessage, stamp bool) int {
	if stamp {
		return wire.ModernAnswerSize(sc.id, res, sc.s.p.impl)
	}
	return wire.AnswerSize(sc.id, res)
}

// StreamDone implements wire.StreamDone for a started call whose answer
// went to the host while it arrived.
func (sc *stdioCall) StreamDone(size int, isError bool, err error) {
	s, hc, call := sc.s, &sc.hostCall, sc.call
	if err == nil {
		call.FinishStreamed(size, isError)
		s.calls.finish(sc.key, hc, nil)
		return
	}
	res, _, werr := call.FinishRaw(nil, 0, err)
	if to := hc.link.Stream; s.session != nil && to.Begun && (!to.InText || werr != nil || wire.TextCloser(res) == nil) {
		s.session.out.cutting() // the line ends broken, and the answer follows
	}
	if hc.link.Stream.EndCutLine(s.c.out, res, werr) {
		s.calls.finish(sc.key, hc, nil) // the line was closed as the answer
		return
	}
	s.calls.finish(sc.key, hc, func() { s.c.out.Write(wire.AnswerLine(sc.id, res, werr)) })
}

// takeRequest answers hr, a request other than tools/call (a list,
// prompts/get, resources/read, completion/complete, server/discover or
// ping), if the session is where takeCall would answer a call
// (initialized, or a request of 2026-07-28 that stands on its own; a
// ping at any time) and hr's revision has its method, and reports
// whether it did. The answer is made on a goroutine of its own, as it
// may wait for the sources still connecting or for a source; the
// host's cancellation of the request ends it without an answer.
// Messages and questions for the host go through its session, on this
// connection, or, for a request that names its own log level or stands
// alone, through a host link (see linked). Called by the reading
// goroutine.
func (s *stdioSession) takeRequest(hr hostRequest) bool {
	mi := readMeta(hr.meta)
	if !mi.ok {
		return false
	}
	if !inRevision(hr, mi.rev) {
		// As go-sdk's server answers it, before initialize too.
		s.c.out.Write(wire.ErrorLine(hr.id, methodNotFound(hr.method)))
		return true
	}
	if !s.initialized() && !mi.rev.Stateless() && hr.method != "ping" {
		return false
	}
	if hr.method == "logging/setLevel" {
		s.setLevel(hr)
		return true
	}
	if s.legacy {
		hr.versions = legacyVersions()
	}
	key := string(hr.id)
	sc := &stdioCall{}
	hc := &sc.hostCall
	parent, host := s.linked(key, hc, mi), junction.Host(s.front)
	s.noteStandalone(mi)
	if !s.initialized() && mi.rev.PerRequestMeta() {
		// A request that stands alone (2026-07-28, on a connection that
		// did not initialize) is answered as one without a session over
		// HTTP is: what the view does for it goes by the revision and
		// capabilities its _meta names (a script's inner calls carry
		// them on), not by a session, and its progress and the log
		// messages at the level it names go to the host through its link.
		parent = junction.WithHostLink(s.base, &lineLink{s: s, key: key, hc: hc, level: mcp.LoggingLevel(mi.level)})
		host = nil
	}
	ctx, cancel := context.WithCancelCause(parent)
	hc.cancel = junction.RawCancelFunc(cancel)
	if !s.calls.add(key, hc) {
		cancel(nil)
		return s.refuseReused(hr.id)
	}
	s.p.count(s.countAs, hr.method)
	// A session that began with an older initialize gets that revision's
	// results, whatever a request names, as from go-sdk (see conn.older).
	typed := mi.rev.TypedResults() && !s.c.older.Load()
	sc.answerAs(s, key, hr.id, false, cancel, nil)
	if on := hr.method == "resources/subscribe"; on || hr.method == "resources/unsubscribe" {
		// A resource subscription of the host's own: the connection
		// keeps it with those of its listens (listen.go).
		go func() {
			if err := s.c.listens.hostSubscribe(ctx, hr.name, on); err != nil {
				sc.AnswerRaw(nil, 0, wireError(err))
				return
			}
			sc.AnswerRaw(json.RawMessage(`{}`), 0, nil)
		}()
		return true
	}
	go func() {
		res, werr := s.p.answer(ctx, hr, host, nil, typed)
		sc.AnswerRaw(res, 0, werr)
	}()
	return true
}

// noteStandalone notes the revision a request that stands alone (of
// 2026-07-28 or later, whose _meta says mi, on a connection that did not
// initialize) names, the first time one does: the connection's, as
// go-sdk's server takes it (Plane.Sessions). That first request is the
// host's greeting too (View.HostInitialized with no session): a hub that
// serves one stdio host settles once it has come (its startup pages given
// back, its collector tuned for load), not after waiting for an
// initialize that will not come.
func (s *stdioSession) noteStandalone(mi metaInfo) {
	if s.front != nil && mi.rev.PerRequestMeta() && s.front.standalone.Load() == nil && !s.initialized() {
		v := mi.version
		if s.front.standalone.CompareAndSwap(nil, &v) {
			s.p.v.HostInitialized(nil)
		}
	}
}

// refuseReused answers a request the table of calls in flight did not
// take, whose id is id, and reports that it did: on a connection that is
// closing, nothing more is served or answered; otherwise the id was that
// of a request of the host's still in flight when it was read. JSON-RPC
// asks every request of a session for an id of its own, and an answer
// with id would be taken for the other request's, so the refusal goes
// with a null id, as for a message whose id cannot be read; the host's
// request is not served. (go-sdk's server drops such a request without
// an answer.) Called by the reading goroutine.
func (s *stdioSession) refuseReused(id []byte) bool {
	if s.calls.isClosing() {
		return true
	}
	msg := fmt.Sprintf("request id %s is in use by a request still in flight; give each request an id of its own", id)
	if s.session != nil {
		// The POST that carried it waits under its id: it gets the
		// refusal (session.go).
		s.session.out.answer(string(id), wire.ErrorLine([]byte("null"), &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}))
		return true
	}
	s.c.reject(jsonrpc.CodeInvalidRequest, msg)
	return true
}

// setLevel answers the host's logging/setLevel at once, on the reading
// goroutine, so that what is read after it is served at the new level.
// The level is the hub's record of the session (View.SetHostLevel), its
// only one: the session's log messages go out through its stdioHost,
// filtered by it.
func (s *stdioSession) setLevel(hr hostRequest) {
	s.p.count(s.countAs, hr.method)
	res, werr := s.p.answer(s.base, hr, s.front, nil, false)
	s.c.out.Write(wire.AnswerLine(hr.id, res, werr))
}

// linked returns the parent of the context of the raw call hc, under key,
// of a request whose _meta says mi: the connection's base, with a host
// link (see hostlink.go) when the request names its own log level.
func (s *stdioSession) linked(key string, hc *hostCall, mi metaInfo) context.Context {
	if s.session != nil {
		if l := s.session.link(key, s.front); l != nil {
			return junction.WithHostLink(s.base, l)
		}
	}
	if !mi.logLevel || !mi.rev.PerRequestMeta() {
		return s.base
	}
	return junction.WithHostLink(s.base, &lineLink{s: s, key: key, hc: hc, level: mcp.LoggingLevel(mi.level)})
}

// awaitCall answers tc, a call of a tool the view does not serve now, on
// a goroutine of its own: it waits for the sources still connecting
// (View.AwaitRaw) and makes the call, or answers the protocol error of a
// tool still unknown then, as go-sdk's handler would. Called by the
// reading goroutine, which goes on reading meanwhile (a cancellation of
// the call among what it reads reaches it).
func (s *stdioSession) awaitCall(tc toolCall, mi metaInfo) bool {
	key := string(tc.id)
	sc := &stdioCall{}
	hc := &sc.hostCall
	ctx, cancel := context.WithCancelCause(s.linked(key, hc, mi))
	hc.cancel = junction.RawCancelFunc(cancel)
	ctx = withHostCall(ctx, hc)
	if !s.calls.add(key, hc) {
		cancel(nil)
		return s.refuseReused(tc.id)
	}
	sc.answerAs(s, key, tc.id, mi.rev.TypedResults(), cancel, nil)
	go func() {
		call, rc, werr := s.p.v.AwaitRaw(ctx, tc.name)
		if werr != nil {
			sc.AnswerRaw(nil, 0, werr)
			return
		}
		res, werr := call.CallToolRaw(rc, rawParams(call.Local(), tc))
		sc.AnswerRaw(res, 0, werr)
	}()
	return true
}

// readFrames reads in line by line, each without the JSON white space
// around it. A line take answers (nil: none) is done with; any other is
// answered with an error if it is not a JSON-RPC message, and reported
// if it is (c.untaken). flush (if not nil) runs before each read of in.
// It returns the reader's error (io.EOF at the end).
func readFrames(in io.Reader, max int, c *conn, take func([]byte) bool, flush func()) error {
	r := wire.NewLineReader(in, max)
	r.BeforeRead(flush)
	defer func() {
		if flush != nil {
			flush()
		}
	}()
	for {
		line, tooLong, err := r.Next()
		if tooLong {
			c.reject(jsonrpc.CodeInvalidRequest, fmt.Sprintf("frame exceeds %d bytes", max))
		} else if line = rawjson.TrimSpace(line); len(line) > 0 && (take == nil || !take(line)) {
			if msg, ok := c.decode(line); ok {
				c.untaken(msg)
			}
		}
		if err != nil {
			return err
		}
	}
}

// legacyCarries reports whether the legacy HTTP+SSE transport carries
// protocol version: one before 2026-07-28, which has no binding for it.
func legacyCarries(version string) bool { return !junction.ParseRevision(version).Stateless() }

// legacyVersions are the protocol versions the hub speaks that the
// legacy HTTP+SSE transport carries (legacyCarries).
func legacyVersions() []string {
	var out []string
	for _, v := range mcp.SupportedProtocolVersions() {
		if legacyCarries(v) {
			out = append(out, v)
		}
	}
	return out
}

// conn is a line connection as the plane keeps it: its writer, its
// requests to the host (asks), its listens and what it knows of the
// host's session.
type conn struct {
	out    *wire.Writer
	onBad  func(error)
	refuse func(line []byte) bool // see lineConn.session; nil: none
	// malformed, on an HTTP session, answers the POST of a line go-sdk's
	// decoder does not read (err) as go-sdk's handler does; nil: none.
	malformed func(err error) bool

	// older: the host negotiated a revision before 2026-07-28, so results
	// go without that revision's members (olderMembers).
	older atomic.Bool
	// listens are the host's subscriptions/listen streams, which the
	// plane answers (see listen.go).
	listens *listens
	// greeted: initialize has been answered (see
	// stdioSession.initialized). Until then the host is told of no list
	// change: nothing reaches a host before it initializes (a 2026-07-28
	// host, which never does, hears of them only on a
	// subscriptions/listen stream, tagged with its id).
	greeted atomic.Bool

	// asks are the requests the plane sent the host (stdioHost), whose
	// answers the reading goroutine takes; gone is closed when no answer
	// can come any more (the input ended, or the connection closed).
	asks     asks
	gone     chan struct{}
	goneOnce sync.Once
}

func newConn(out *wire.Writer, onBad func(error)) *conn {
	return &conn{
		out:   out,
		onBad: onBad,
		gone:  make(chan struct{}),
	}
}

// untaken reports msg, a message go-sdk's decoder reads that no path of
// the plane took or answered (stdioSession.answerRest answers every
// request): a defect, reported as a bad frame; msg is dropped.
func (c *conn) untaken(msg jsonrpc.Message) {
	if h := testHookUntaken.Load(); h != nil {
		(*h)(msg)
	}
	if c.onBad != nil {
		b, _ := jsonrpc.EncodeMessage(msg)
		c.onBad(fmt.Errorf("no path of the plane took this message, which is dropped: %.200s", b))
	}
}

// decode parses one frame, answering it with an error if it is not a
// JSON-RPC message.
func (c *conn) decode(line []byte) (jsonrpc.Message, bool) {
	if !rawjson.Valid(line) {
		c.reject(jsonrpc.CodeParseError, "parse error: frame is not valid JSON")
		return nil, false
	}
	if line[0] == '[' {
		c.reject(jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported")
		return nil, false
	}
	line, _ = sdkReadable(line)
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil && c.malformed != nil && c.malformed(err) {
		return nil, false
	}
	if err != nil {
		c.reject(jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil, false
	}
	return msg, true
}

// testHookUntaken, if set, sees every message the plane neither took nor
// answered (untaken).
var testHookUntaken atomic.Pointer[func(jsonrpc.Message)]

// reject writes an error answer with a null id (on an HTTP session, the
// answer of the POST whose line it refuses: refuse).
func (c *conn) reject(code int64, message string) {
	if c.onBad != nil {
		c.onBad(errors.New(message))
	}
	line := wire.ErrorLine([]byte("null"), &jsonrpc.Error{Code: code, Message: message})
	if c.refuse != nil && c.refuse(line) {
		return
	}
	c.out.Write(line)
}

// hostGone marks the end of the host's answers: the input ended, or the
// connection closed.
func (c *conn) hostGone() { c.goneOnce.Do(func() { close(c.gone) }) }
