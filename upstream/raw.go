package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// The raw call path: [Server.CallToolRaw] implements [junction.RawCaller]
// for stdio upstreams of every protocol revision. The request goes out on
// the session's stdin beside go-sdk's own (rawCall), with a
// _meta of junction's: its progress token (so the upstream's progress
// restarts the call's no-progress timer and reaches the host under the
// host's token), and, to an upstream at 2026-07-28 or later, the
// per-request protocol fields go-sdk would send (captured from go-sdk's
// own requests on the session, see captureMeta) and the log level. The
// result comes back as the upstream sent it, less what names the upstream
// rather than the hub (see wire.StripServerFields).

var _ junction.RawCaller = (*Server)(nil)

// ErrRawUnsupported is returned by [Server.CallToolRaw] for a server
// whose transport is not stdio; [Server.CanCallRaw] reports false for
// those, so the hub's data plane sends their calls the typed way.
var ErrRawUnsupported = errors.New("raw calls are supported for stdio upstreams only")

// CanCallRaw reports whether a call to tool may go through
// [Server.CallToolRaw]: the transport is stdio and the tool is served.
// The hub's data plane asks before each call.
func (s *Server) CanCallRaw(tool string) bool {
	return s.cfg.TransportKind() == TransportStdio && s.cfg.allows(tool)
}

// CallToolRaw implements [junction.RawCaller]: it forwards params (a
// tools/call params object with the upstream's tool name) to a stdio
// upstream and returns the result object as the upstream sent it, except
// that content blocks of unknown types are rewritten as in CallTool and
// the upstream's own serverInfo and "resultType":"complete" are left out.
// A JSON-RPC error from the upstream is returned as that *jsonrpc.Error;
// a server that is not connected gives an error wrapping
// [junction.ErrSourceDown]. Cancelling ctx sends notifications/cancelled
// to the upstream. A call that makes no progress for the tool's timeout
// fails with an error wrapping context.DeadlineExceeded. Progress
// notifications, when params' _meta holds a progressToken, go to the host
// session ctx names ([junction.HostSession]) under that token, and log
// messages the upstream sent before its result are forwarded to it
// before CallToolRaw returns.
//
// A call from a host at 2026-07-28 or later to an upstream before it, and
// the retry of a call that asked for input, are bridged (see bridge.go):
// the upstream leg is a raw call all the same, and a question the
// upstream asks on the way comes back as an input-required result. Other
// transports get [ErrRawUnsupported].
func (s *Server) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	if t, release, err := s.routeRaw(ctx, params); err != nil {
		return nil, err
	} else if t != s {
		defer release()
		res, err := t.CallToolRaw(ctx, name, params)
		return res, s.userCallError(ctx, t, err)
	}
	orig := params
	params, timeout, err := s.rawCheck(name, params)
	if err != nil {
		return nil, err
	}
	hm := readHostMeta(ctx, params, junction.HostSession(ctx))
	res, err := s.callToolRaw(ctx, name, params, hm, timeout)
	if errRes := rawErrorResult(res, 0); refused(errRes, err) && s.learnOldAsks(ctx, hm.rev, errRes, err) {
		return s.CallToolRaw(rerun(ctx), name, orig) // on the host's own session now
	}
	return res, err
}

// callToolRaw is CallToolRaw on s's own session, params checked.
func (s *Server) callToolRaw(ctx context.Context, name string, params json.RawMessage, hm hostMeta, timeout time.Duration) (json.RawMessage, error) {
	deadline := deadlineAfter(timeout)
	for {
		sess, err := s.sessionUntil(ctx, deadline)
		if err != nil {
			return nil, err
		}
		res, err := s.rawOnce(ctx, sess, name, params, hm, timeout)
		if errors.Is(err, errSessionGone) {
			s.awaitSessionEnd(ctx, sess, deadline)
			continue // nothing was sent: wait for the next session
		}
		for round := 0; err == nil && !hm.rev.AsksInResults() && inputRequired(sess, res); round++ {
			// A host before 2026-07-28: ask it (see fulfilOnHost).
			if round == maxInputRounds {
				return nil, fmt.Errorf("upstream %q: %s: still asking for input after %d rounds", s.name, toolWhat(name), maxInputRounds)
			}
			if params, err = s.fulfilOnHost(ctx, junction.HostSession(ctx), params, res); err != nil {
				return nil, fmt.Errorf("upstream %q: %s: %w", s.name, toolWhat(name), err)
			}
			res, err = s.callRaw(ctx, sess, name, params, hm, timeout)
		}
		return res, err
	}
}

var _ junction.RawStarter = (*Server)(nil)

// StartToolRaw implements [junction.RawStarter]: it is [Server.CallToolRaw]
// without waiting. While the server is connected, the request is written
// and StartToolRaw returns; done is then called from the goroutine that
// reads the server's stdout (or from the call's timer, or its
// cancellation), so no goroutine waits for the answer. A call that must
// wait for a session, resumes a bridge, or asks a host before 2026-07-28
// for input, goes on as CallToolRaw on a goroutine of its own.
func (s *Server) StartToolRaw(ctx context.Context, name string, params json.RawMessage, done junction.RawDone) junction.RawCancel {
	if t, release, err := s.routeRaw(ctx, params); err != nil {
		done.RawDone(nil, 0, err)
		return junction.NoCancel
	} else if t != s {
		return t.StartToolRaw(ctx, name, params, junction.RawDoneFunc(func(res json.RawMessage, facts junction.ResultFacts, err error) {
			release()
			done.RawDone(res, facts, s.userCallError(ctx, t, err))
		}))
	}
	return s.startToolRaw(ctx, name, params, done)
}

// startToolRaw is StartToolRaw on s's own session.
func (s *Server) startToolRaw(ctx context.Context, name string, sent json.RawMessage, done junction.RawDone) junction.RawCancel {
	params, timeout, err := s.rawCheck(name, sent)
	if err != nil {
		done.RawDone(nil, 0, err)
		return junction.NoCancel
	}
	host := junction.HostSession(ctx)
	f := &rawFlight{s: s, ctx: ctx, host: host, name: name, params: params, timeout: timeout, done: done, async: true}
	f.hm = readHostMeta(ctx, params, host)
	var cancel junction.RawCancel = f
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if s.mayLearnOldAsks(ctx, host, f.hm.rev, sess) {
		// The call may have to run again, on the host's own session (see
		// oldasks.go): its outcome goes through the flight's
		// retryingStart, part of the flight, so that a call that is not
		// made again (nearly every one) makes no record of its own for
		// it.
		f.retry = retryingStart{s: s, ctx: ctx, rev: f.hm.rev, name: name, params: sent, done: done, cancel: f}
		f.done, cancel = &f.retry, &f.retry
	}
	if sess == nil || resumes(f.hm, sess) {
		f.goSlow(params)
	} else {
		f.bridgeable = bridgeable(f.hm, sess)
		f.start(sess)
	}
	return cancel
}

// resumes reports whether a call is the retry, with answers, of a call
// bridged to a host at 2026-07-28 or later (see bridge) by a server
// before it.
func resumes(hm hostMeta, sess *session) bool {
	return hm.retry && !sess.rev().AsksInResults()
}

// rawOnce makes one raw call on sess, or resumes a bridged one, and waits
// for it.
func (s *Server) rawOnce(ctx context.Context, sess *session, name string, params json.RawMessage, hm hostMeta, timeout time.Duration) (json.RawMessage, error) {
	if resumes(hm, sess) {
		return s.resumeRaw(ctx, sess, name, params, hm, timeout)
	}
	return s.callRaw(ctx, sess, name, params, hm, timeout)
}

// callRaw makes one raw call on sess and waits for it; see CallToolRaw.
func (s *Server) callRaw(ctx context.Context, sess *session, name string, params json.RawMessage, hm hostMeta, timeout time.Duration) (json.RawMessage, error) {
	type outcome struct {
		res json.RawMessage
		err error
	}
	ch := make(chan outcome, 1)
	f := &rawFlight{s: s, ctx: ctx, host: junction.HostSession(ctx), name: name, params: params, hm: hm, timeout: timeout, bridgeable: bridgeable(hm, sess),
		done: junction.RawDoneFunc(func(res json.RawMessage, _ junction.ResultFacts, err error) { ch <- outcome{res, err} })}
	f.start(sess)
	o := <-ch
	return o.res, o.err
}

// A rawFlight is one raw call on its way: written to the server, and
// ended by the server's answer, its no-progress timer, the session's
// closing, or its context. Whichever comes first takes the call from the
// connection's waiting ones (rawCall.Take) and ends it, once.
type rawFlight struct {
	s       *Server
	ctx     context.Context // the host's; guarded by mu once the call is set up (openBridge detaches it)
	host    junction.Host   // the host session ctx names (junction.HostSession), read once
	name    string
	params  json.RawMessage
	hm      hostMeta
	timeout time.Duration
	rc      *rawCall // &raw while the call is raw; nil once it went on as CallToolRaw (slowContext)
	raw     rawCall  // the call's record with the connection (rc)

	mu       sync.Mutex // held while the call is set up; guards the fields below, but async and bridgeable
	done     junction.RawDone
	finished bool // done has been called (or handed to a goroutine)
	streams  bool // the answer may go to the host while it arrives (CanStream)
	// async: a StartToolRaw call, which goes on by itself when nothing
	// was sent (session gone) and when a host before 2026-07-28 must be
	// asked for input; a CallToolRaw call loops over those itself. Set
	// before the call starts. (The four flags share a word: a flight is
	// allocated for every call, and it is 696 bytes, which with the
	// runtime's 8-byte header of a large object that holds pointers is
	// the size class of 704; one word more takes it to 768.)
	async bool
	// bridgeable: the call becomes a bridge if the server asks for input
	// (see bridgeable, openBridge). Set before the call starts.
	bridgeable bool
	b          *bridge // the bridge the call became, if it did
	c          *call   // &rec once registered; nil: setting up failed, and start ends the call
	rec        call    // the call's record with the server (see registerIn)
	stop       func() bool
	// For a call that went on as CallToolRaw: cancels its context
	// (slowCancel), or the cause it was cancelled with first.
	slowCancel  context.CancelCauseFunc
	cancelledBy error

	// retry: the call may have to run again on the host's own session
	// (StartToolRaw's mayLearnOldAsks); done is then &retry.
	retry retryingStart
}

// start writes the call on sess; f.done gets its outcome, once. An
// error wrapping errSessionGone means nothing was sent.
func (f *rawFlight) start(sess *session) {
	s := f.s
	// A raw call has no context of its own: the no-progress timer and the
	// session's closing end it by failing it (see register), and the
	// host's cancellation is ctx. Its reply may come before it is set up
	// (the server's stdout ending): f.mu holds it back until then.
	f.mu.Lock()
	sess.stdio().addRawCall(&f.raw, f)
	f.rc = &f.raw
	c := s.registerIn(&f.rec, f.ctx, sess, f.host, f.hm.caps, f.timeout, f.rc, f.hm.token != nil)
	if c == nil {
		f.rc.Forget()
		f.mu.Unlock()
		f.finish(nil, 0, fmt.Errorf("upstream %q: %s: %w: %w", s.name, toolWhat(f.name), junction.ErrSourceDown, errSessionGone), false)
		return
	}
	if f.bridgeable || f.hm.token != nil {
		s.mu.Lock()
		if f.hm.token != nil {
			c.hostToken = f.hm.token // see junction.NotifyProgress
		}
		if f.bridgeable {
			c.lazy = f
		}
		s.mu.Unlock()
	}
	f.c = c
	// From here on the call may become a bridge (openBridge), which puts
	// a context of its own in f.ctx: what follows uses the one read now.
	ctx := f.ctx
	if ctx.Done() != nil {
		f.stop = context.AfterFunc(ctx, func() { f.CancelRaw(context.Cause(ctx)) })
	}
	f.mu.Unlock()
	// A failure to write ends the call through ReceiveRaw. The _meta is
	// copied into the request: its buffer can be this frame's.
	var meta [512]byte
	f.rc.Send(ctx, s.rawMeta(meta[:0], c.seq, sess, f.hm, junction.TraceContextOf(ctx)), f.params)
}

// ReceiveRaw implements rawReceiver: it ends the call with the
// connection's reply.
func (f *rawFlight) ReceiveRaw(r rawReply) {
	f.mu.Lock()
	c, stop, ctx := f.c, f.stop, f.ctx
	f.mu.Unlock()
	if c == nil {
		return // setting up failed; start has ended the call
	}
	if stop != nil {
		stop()
	}
	// The rare outcomes are in functions of their own; the tool's name is
	// quoted for messages only when there is one to write.
	res, facts, err := f.s.rawResult(ctx, f.rc, c, f.name, f.timeout, r)
	f.s.end(c)
	f.finish(res, facts, err, r.Shape.MayAskInput())
}

var _ streamReceiver = (*rawFlight)(nil)

// CanStream implements streamReceiver: the result may go to
// the host while it arrives when the flight hands it on as the server
// sent it, but for what wire.Rewrite does on the way (rawResult
// also rewrites content blocks of unknown types, which the data plane
// rewrites on the way too): a StartToolRaw call that has not become a
// bridge. A server at 2026-07-28 or later names itself in its results
// (StripServerFields), and for a host before that revision, a result
// asking for input is for the hub to act on (finish), so only a complete
// one may go on. Once it has said yes, the call no longer becomes a
// bridge (openBridge): its answer has begun.
func (f *rawFlight) CanStream() (wire.Rewrite, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.async || f.c == nil || f.b != nil || f.finished {
		return wire.Rewrite{}, false
	}
	f.streams = true
	typed := f.c.sess.rev().TypedResults()
	return wire.Rewrite{Strip: typed, OnlyComplete: typed && !f.hm.rev.AsksInResults()}, true
}

// ReceiveStream implements streamReceiver: the answer is on
// its way to the host, so the call ends here as ReceiveRaw would end it
// (the progress and log messages read before it go to the host first),
// and a failure in the middle of the answer is named as rawError names
// the failure of a call. A pause in the middle of the answer is bounded
// by the tool's no-progress timeout, where that is the shorter bound.
func (f *rawFlight) ReceiveStream() (func(error) error, time.Duration) {
	f.mu.Lock()
	c, stop, ctx := f.c, f.stop, f.ctx
	f.finished = true
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
	if c.progress != nil {
		f.s.drainProgress(c)
	} else {
		f.s.drainLogs(c)
	}
	f.s.end(c)
	return func(cause error) error { return f.s.rawError(ctx, f.name, f.timeout, cause) }, f.timeout
}

// CancelRaw implements junction.RawCancel: it ends the call with cause
// (the host cancelled it, or its context is done), and tells the server.
func (f *rawFlight) CancelRaw(cause error) {
	if cause == nil {
		cause = context.Canceled
	}
	f.mu.Lock()
	if f.cancelledBy == nil {
		f.cancelledBy = cause // a call going on as CallToolRaw later starts cancelled
	}
	rc, slow := f.rc, f.slowCancel
	f.mu.Unlock()
	switch {
	case slow != nil:
		slow(cause)
	case rc != nil && rc.Take():
		rc.Cancel(cause)
		f.ReceiveRaw(rawReply{Fail: fmt.Errorf("%w: %w", context.Canceled, cause)})
	}
}

// finish hands the outcome on: to done, or, for a StartToolRaw call that
// is not over (nothing sent; input to ask a host for), to a goroutine
// that carries on as CallToolRaw would. mayAsk is false when the reader
// of the answer found that res cannot ask for input
// (wire.ResultShape.MayAskInput). facts are what holds of res
// (junction.ResultFacts).
func (f *rawFlight) finish(res json.RawMessage, facts junction.ResultFacts, err error, mayAsk bool) {
	f.mu.Lock()
	done := f.done
	f.finished = true
	f.mu.Unlock()
	switch {
	case !f.async:
	case errors.Is(err, errSessionGone):
		f.goSlow(f.params) // nothing was sent
		return
	case err == nil && mayAsk && !f.hm.rev.AsksInResults() && inputRequired(f.c.sess, res):
		ctx := f.slowContext()
		carryOn(ctx, done, func() (json.RawMessage, error) {
			retry, err := f.s.fulfilOnHost(ctx, junction.HostSession(ctx), f.params, res)
			if err != nil {
				return nil, fmt.Errorf("upstream %q: %s: %w", f.s.name, toolWhat(f.name), err)
			}
			return f.s.CallToolRaw(ctx, f.name, retry)
		})
		return
	}
	done.RawDone(res, facts, err)
}

// goSlow makes the call with params as CallToolRaw does, on a goroutine of
// its own (carryOn), and hands on its outcome.
func (f *rawFlight) goSlow(params json.RawMessage) {
	ctx := f.slowContext()
	f.mu.Lock()
	done := f.done
	f.finished = true
	f.mu.Unlock()
	carryOn(ctx, done, func() (json.RawMessage, error) { return f.s.CallToolRaw(ctx, f.name, params) })
}

// carryOn runs the rest of a started call, rest, on a goroutine of its
// own, and hands its outcome to done. That goroutine is no server's
// reader, though a reader may be delivering to the call's link (ctx's)
// as it answers (the reply that sent the call on, or the one that wakes
// it): it clears the link's Via first, so that the answer to the host
// does not queue in that reader's batch (see wire.Link).
func carryOn(ctx context.Context, done junction.RawDone, rest func() (json.RawMessage, error)) {
	go func() {
		res, err := rest()
		if l := wire.LinkOf(ctx); l != nil {
			l.Via.Store(nil)
		}
		done.RawDone(res, 0, err)
	}()
}

// slowContext is the context of the call going on as CallToolRaw: f.ctx,
// cancelled also by f.CancelRaw.
func (f *rawFlight) slowContext() context.Context {
	ctx, cancel := context.WithCancelCause(f.ctx)
	f.mu.Lock()
	f.rc, f.slowCancel = nil, cancel
	by := f.cancelledBy
	f.mu.Unlock()
	if by != nil {
		cancel(by)
	}
	return ctx
}

// toolWhat names a tool in error messages.
func toolWhat(name string) string { return "tool " + strconv.Quote(name) }

// rawCheck checks a raw call's transport, tool and params, and returns
// the params trimmed and the tool's no-progress timeout.
func (s *Server) rawCheck(name string, params json.RawMessage) (json.RawMessage, time.Duration, error) {
	if s.cfg.TransportKind() != TransportStdio {
		return nil, 0, fmt.Errorf("upstream %q: %w", s.name, ErrRawUnsupported)
	}
	if !s.cfg.allows(name) {
		return nil, 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	params = bytes.TrimSpace(params)
	if len(params) < 2 || params[0] != '{' {
		return nil, 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: not a JSON object"}
	}
	return params, s.cfg.callTimeout(name), nil
}

// hostMeta is what a raw call's params say about the host's request.
type hostMeta struct {
	token    any                   // the host's progress token; nil if it asked for none
	rev      junction.Revision     // the host's revision: the later of its session's and the one the _meta names
	retry    bool                  // the params answer input requests (inputResponses, requestState)
	logLevel []byte                // the host's own log level for the call, as sent; nil if none
	caps     []byte                // the host's capabilities for the call, as sent (2026-07-28); nil if none
	init     *mcp.InitializeParams // the host session's initialize, if it has one; read once per call
	extra    []byte                // other _meta members, as sent, comma-separated
	// The host's W3C trace context, as sent; nil if none. The upstream
	// gets the hub's span in their place when there is one (rawMeta).
	traceParent, traceState []byte
}

// readHostMeta reads params' _meta, and whether the call is the retry of
// one that asked for input. host is the host's session, if it has one.
// What the host's side read of the same params (wire.RequestOf) is taken
// as it read it.
func readHostMeta(ctx context.Context, params json.RawMessage, host junction.Host) hostMeta {
	var hm hostMeta
	if host != nil {
		hm.init = host.InitializeParams()
		if p := hm.init; p != nil {
			hm.rev = junction.ParseRevision(p.ProtocolVersion)
		}
	}
	if hr := wire.RequestOf(ctx, params); hr != nil {
		hm.retry = hr.Retry
		if hr.OtherMeta {
			wire.ReadMeta(hr.RawMeta(), hm.addExtra)
		}
		hm.takeMeta(&hr.Meta)
		return hm
	}
	if !rawjson.Contains(params, []byte(`"_meta"`)) && !rawjson.Contains(params, []byte(`"request`)) && !rawjson.Contains(params, []byte(`"input`)) {
		return hm // the common case: a plain call
	}
	rawjson.Object(params, func(key, val []byte) {
		switch string(key) {
		case "inputResponses", "requestState":
			hm.retry = true
		case "_meta":
			m := wire.ReadMeta(val, hm.addExtra)
			hm.takeMeta(&m)
		}
	})
	return hm
}

// addExtra adds a member of the host's _meta that the hub does not read:
// it passes on as sent.
func (hm *hostMeta) addExtra(k, v []byte) {
	if len(hm.extra) > 0 {
		hm.extra = append(hm.extra, ',')
	}
	hm.extra = append(hm.extra, '"')
	hm.extra = append(hm.extra, k...)
	hm.extra = append(hm.extra, `":`...)
	hm.extra = append(hm.extra, v...)
}

// takeMeta takes what the hub reads of the host's _meta, m.
func (hm *hostMeta) takeMeta(m *wire.Meta) {
	if m.ProgressToken != nil {
		var tok any
		if json.Unmarshal(m.ProgressToken, &tok) == nil {
			hm.token = tok
		}
	}
	hm.rev = max(hm.rev, m.Rev)
	hm.logLevel = m.LogLevel
	hm.caps = m.Caps // for an upstream at 2026-07-28 (see rawMeta)
	// The host's own connection (clientInfo, subscriptionId) is not
	// passed on: the upstream gets junction's.
	hm.traceParent, hm.traceState = m.TraceParent, m.TraceState
}

// rawMeta appends to b the _meta members of a raw call's request: the
// progress token of junction's call seq; to an upstream at 2026-07-28 or later, the protocol
// fields go-sdk would send, with the host's capabilities in place of
// junction's (see hostCapabilities), and the log level (the host's, or
// the one the hub asked for); the host's other _meta members; and the
// trace context: tc, the hub's span, if the call is traced (see
// junction.Options.Trace), else the host's as sent.
func (s *Server) rawMeta(b []byte, seq uint64, sess *session, hm hostMeta, tc junction.TraceContext) []byte {
	b = append(b, `"progressToken":`...)
	b = appendToken(b, seq)
	if sess.rev().PerRequestMeta() {
		if len(sess.meta) > 0 {
			b = append(b, ',')
			b = sess.appendProtocolMeta(b, s.hostCapabilities(hm.caps, hm.init))
		}
		switch level := s.levelMeta.Load(); {
		case hm.logLevel != nil:
			b = append(b, `,"`+mcp.MetaKeyLogLevel+`":`...)
			b = append(b, hm.logLevel...)
		case level != nil:
			b = append(b, *level...)
		default:
			b = append(b, defaultLevelMeta...)
		}
	}
	if len(hm.extra) > 0 {
		b = append(b, ',')
		b = append(b, hm.extra...)
	}
	return appendTraceMeta(b, hm, tc)
}

// appendTraceMeta appends the trace context members of a raw call's
// _meta (see rawMeta).
func appendTraceMeta(b []byte, hm hostMeta, tc junction.TraceContext) []byte {
	if tc.Parent != "" {
		b = append(b, `,"`+junction.MetaKeyTraceParent+`":`...)
		b = rawjson.AppendString(b, tc.Parent)
		if tc.State != "" {
			b = append(b, `,"`+junction.MetaKeyTraceState+`":`...)
			b = rawjson.AppendString(b, tc.State)
		}
		return b
	}
	if hm.traceParent != nil {
		b = append(b, `,"`+junction.MetaKeyTraceParent+`":`...)
		b = append(b, hm.traceParent...)
	}
	if hm.traceState != nil {
		b = append(b, `,"`+junction.MetaKeyTraceState+`":`...)
		b = append(b, hm.traceState...)
	}
	return b
}

// rawResult turns the reply to a raw call into CallToolRaw's return
// values, with the facts the reader of the answer learned of the result
// (junction.ResultFacts).
func (s *Server) rawResult(ctx context.Context, rc *rawCall, c *call, name string, timeout time.Duration, r rawReply) (json.RawMessage, junction.ResultFacts, error) {
	switch {
	case errors.Is(r.Fail, wire.ErrNotSent):
		// The server's stdout had ended before the call was made: it may
		// go on the next session.
		return nil, 0, fmt.Errorf("upstream %q: %s: %w: %w", s.name, toolWhat(name), junction.ErrSourceDown, errSessionGone)
	case r.Fail != nil:
		if errors.Is(r.Fail, errNoProgress) || errors.Is(r.Fail, errSessionClosing) {
			rc.Cancel(r.Fail) // junction gave up: tell the upstream
		}
		return nil, 0, s.rawError(ctx, name, timeout, r.Fail)
	case r.Err != nil:
		return nil, 0, r.Err
	}
	// Only a server at 2026-07-28 or later names itself in results: an
	// older one's results (a megabyte, say) are not scanned for that. Its
	// members go out where the reader found them (r.Shape), or in one
	// pass that also puts the hub's name in for a host of that revision
	// and looks for content blocks of unknown types.
	res, n, facts := r.Result, 0, r.Shape.Facts(false)
	if c.sess.rev().TypedResults() {
		var l *wire.Link
		if rc != nil {
			l = rc.link // ctx's, found when the request was sent
		}
		if l == nil {
			l = wire.LinkOf(ctx)
		}
		res, n, facts = wire.ServerResult(res, l, r.Shape)
	} else if r.Shape.Unknown() {
		// The reader found blocks it may have to replace (a clean
		// result was checked on the way: deliverRaw).
		res, n = wire.SanitizeContent(res)
		facts = 0
	}
	if n > 0 {
		s.logger.Warn("replaced content blocks of unknown type", "count", n)
	}
	if c.progress != nil {
		s.drainProgress(c) // and the logs
	} else {
		s.drainLogs(c)
	}
	return res, facts, nil
}

// rawError classifies the failure of a raw call: err is the cause it
// ended with (errNoProgress, errSessionClosing, a failed write, the end
// of the server's stdout, the host's cancellation).
func (s *Server) rawError(ctx context.Context, name string, timeout time.Duration, err error) error {
	what := toolWhat(name)
	switch {
	case errors.Is(err, errNoProgress):
		return fmt.Errorf("upstream %q: %s: no progress for %v: %w", s.name, what, timeout, context.DeadlineExceeded)
	case errors.Is(err, errSessionClosing), errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF):
		// However the session ended (the process exited, its stdout
		// closed, a write failed, junction closed it), the host reads one
		// message; the cause goes to the log.
		s.Reconnect()
		s.logger.Debug("call ended with its session", junction.LogKeyTool, name, "cause", err)
		return fmt.Errorf("upstream %q: %s: %w: %s", s.name, what, junction.ErrSourceDown, msgSessionEnded)
	case ctx.Err() != nil:
		return fmt.Errorf("upstream %q: %s: %w", s.name, what, ctx.Err())
	}
	return fmt.Errorf("upstream %q: %s: %w", s.name, what, err)
}

// msgSessionEnded is what a call whose session ended under it says.
const msgSessionEnded = "the server's session ended during the call (junction reconnects)"

// captureMeta is the client's sending middleware that keeps, per
// session, the per-request protocol members go-sdk puts in the _meta of
// every request at 2026-07-28 or later (protocol version, client info,
// client capabilities), so that raw calls on the session send the same:
// go-sdk computes them from options it does not export.
func (s *Server) captureMeta(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if cs, ok := req.GetSession().(*mcp.ClientSession); ok {
			if p := req.GetParams(); p != nil && !isNilParams(p) {
				if m := p.GetMeta(); m != nil {
					if _, ok := m[mcp.MetaKeyProtocolVersion]; ok {
						s.noteMeta(cs, m)
					}
				}
			}
		}
		return next(ctx, method, req)
	}
}

// isNilParams reports whether p is a typed nil.
func isNilParams(p mcp.Params) (isNil bool) {
	defer func() {
		if recover() != nil {
			isNil = true
		}
	}()
	p.GetMeta()
	return false
}

// noteMeta records m's protocol members for cs, once.
func (s *Server) noteMeta(cs *mcp.ClientSession, m map[string]any) {
	s.mu.Lock()
	_, done := s.metaOf[cs]
	s.mu.Unlock()
	if done {
		return
	}
	var b []byte
	for _, k := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities} {
		v, ok := m[k]
		if !ok {
			continue
		}
		enc, err := json.Marshal(v)
		if err != nil {
			continue
		}
		if len(b) > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, k)
		b = append(b, ':')
		b = append(b, enc...)
	}
	s.mu.Lock()
	if s.metaOf == nil {
		s.metaOf = make(map[*mcp.ClientSession][]byte)
	}
	s.metaOf[cs] = b
	s.mu.Unlock()
}

// rev returns the revision the session speaks.
func (sess *session) rev() junction.Revision { return sess.revision }

// revisionOf returns the revision cs speaks.
func revisionOf(cs *mcp.ClientSession) junction.Revision {
	return junction.ParseRevision(cs.InitializeResult().ProtocolVersion)
}
