package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// A call is one tools/call in flight to the upstream. It links the
// upstream's side of the call (the progress token junction chose for it)
// to the host's side (the host session and the host's own progress
// token), so notifications and requests the upstream sends about the call
// go back to the host that made it.
type call struct {
	host      junction.Host   // nil for calls made outside a host session
	hostCtx   context.Context // the host handler's context, for routing on HTTP
	hostToken any             // the host's progress token; nil if it asked for none
	srv       *Server         // the server the call is registered with
	due       monoTime        // when the no-progress timeout ends the call (see watchLocked); zero: never. Guarded by Server.mu
	bridge    *bridge         // non-nil for a call bridged to a 2026-07-28 host
	lazy      *rawFlight      // a raw call that becomes a bridge if its upstream asks (rawFlight.openBridge)
	timeout   time.Duration
	sess      *session
	caps      []byte        // the capabilities the host sent with the call (2026-07-28); nil if none. Guarded by Server.mu
	cancel    failer        // ends the request; see register
	handled   atomic.Int64  // progress notifications handled
	progress  chan struct{} // capacity 1; signalled on each one
	// progressRead counts the progress notifications read for the call,
	// ownLogs is the number of the last log message read on its own
	// response stream (see progress.go).
	progressRead atomic.Int64
	ownLogs      atomic.Int64
	// notify orders what goes to the host about the call: progress as it
	// comes, and the progress its bridge held while no host request was
	// open, which the next one gets first (setHost).
	notify sync.Mutex
	// seq is the call's number, in the order of registration (see
	// better): its key in Server.calls, and its upstream progress token
	// is "junction-<seq>" (token).
	seq uint64
}

// tokenPrefix begins the progress token of every call junction makes to
// an upstream; its number follows.
const tokenPrefix = "junction-"

// token returns the call's upstream progress token.
func (c *call) token() string {
	return tokenPrefix + strconv.FormatUint(c.seq, 10)
}

// appendToken appends the progress token of the call numbered seq to b,
// as a JSON string (it needs no escaping).
func appendToken(b []byte, seq uint64) []byte {
	b = append(b, `"`+tokenPrefix...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '"')
}

// tokenSeq returns the number of the call whose progress token is tok:
// the token as appendToken writes it; false for any other.
func tokenSeq(tok string) (uint64, bool) {
	digits, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return 0, false
	}
	return seqNum(digits)
}

// callLocked returns the call in flight whose upstream progress token is
// tok, or nil. s.mu is held.
func (s *Server) callLocked(tok string) *call {
	seq, ok := tokenSeq(tok)
	if !ok {
		return nil
	}
	return s.calls.get(seq)
}

// reset restarts the call's no-progress timer.
func (c *call) reset() {
	if c.timeout <= 0 {
		return
	}
	s := c.srv
	s.mu.Lock()
	c.due = monoNow() + monoTime(c.timeout)
	s.watchLocked(c.due)
	s.mu.Unlock()
}

// hold stops the no-progress timer while junction waits for the host (a
// person answering an elicitation is not the upstream hanging); the
// returned func restarts it.
func (c *call) hold() func() {
	if c.timeout > 0 {
		c.srv.mu.Lock()
		c.due = 0
		c.srv.mu.Unlock()
	}
	return c.reset
}

// watchLocked has the server's no-progress watchdog fire by due. One
// timer serves all of a server's calls (a timer per call cost 4% of the
// hub's CPU at 16 calls in flight): it is set for the earliest time a
// call may be due, and when it fires (watchFire) it ends the calls that
// are and sets itself for the next. A call's progress only moves its due
// time later, so the watchdog is set again only when it is idle or a
// call is due before it. s.mu must be held.
func (s *Server) watchLocked(due monoTime) {
	if s.watchDue != 0 && due >= s.watchDue {
		return
	}
	s.watchDue = due
	if s.watch == nil {
		s.watch = time.AfterFunc(due.until(), s.watchFire)
	} else {
		s.watch.Reset(due.until())
	}
}

// watchFire ends the calls whose no-progress timeout has run out, and
// sets the watchdog for the next one due.
func (s *Server) watchFire() {
	now := monoNow()
	var over []*call
	s.mu.Lock()
	s.watchDue = 0
	var next monoTime
	for _, c := range s.calls.all() {
		switch {
		case c.due == 0:
		case now >= c.due:
			c.due = 0
			over = append(over, c)
		case next == 0 || c.due < next:
			next = c.due
		}
	}
	if next != 0 {
		s.watchLocked(next)
	}
	s.mu.Unlock()
	for _, c := range over {
		c.noProgress()
	}
}

type callKey struct{}

// Causes of a call's context ending that are not the caller's doing.
var (
	errNoProgress     = errors.New("no progress")     // its no-progress timer fired
	errSessionClosing = errors.New("session closing") // the session is being closed
)

// errSessionGone is wrapped by begin's error when the session a request
// was about to be sent on closed first: nothing reached the upstream, so
// the request may go on the next session.
var errSessionGone = errors.New("session closed")

// Catalog implements [junction.Source]. It never waits for the upstream:
// before the first session the catalog is empty, and CatalogChanged
// follows when it connects. While the server reconnects the catalog of
// its last session is served, until it is withdrawn (see
// Config.WithdrawAfter).
func (s *Server) Catalog(context.Context) (*junction.Catalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.catalog == nil {
		return &junction.Catalog{}, nil
	}
	return s.catalog, nil
}

// session returns the current session for a request bounded by the
// server's call timeout; see sessionUntil.
func (s *Server) session(ctx context.Context) (*session, error) {
	return s.sessionUntil(ctx, deadlineAfter(s.cfg.callTimeout("")))
}

// deadlineAfter returns the time d from now, or the zero time (no
// deadline) for a d that is not positive.
func deadlineAfter(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return time.Now().Add(d)
}

// sessionUntil returns the current session, connecting first if needed.
// A request to a server that is down starts a connection attempt at once
// (skipping any backoff) and waits:
//
//   - while the server is reconnecting after a session ended (its catalog
//     still served), for the new session, however many attempts that
//     takes, until ctx is done, deadline (the request's own timeout; zero
//     means none) passes, or the catalog is withdrawn;
//   - otherwise (no session yet, or the catalog withdrawn), for that one
//     attempt, bounded the same way.
//
// The error wraps junction.ErrSourceDown, or ctx's error.
func (s *Server) sessionUntil(ctx context.Context, deadline time.Time) (*session, error) {
	s.mu.Lock()
	sess, start, stopped := s.sess, s.attempts, s.state == StateStopped
	s.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	if stopped || s.ctx.Err() != nil {
		return nil, fmt.Errorf("upstream %q: closed: %w", s.name, junction.ErrSourceDown)
	}
	s.Reconnect()
	var expired <-chan time.Time
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		expired = timer.C
	}
	for {
		s.mu.Lock()
		sess, attempts, err, ch := s.sess, s.attempts, s.lastErr, s.changed
		stopped = s.state == StateStopped
		reconnecting := !s.downSince.IsZero() && !s.withdrawn
		withdrawn := s.withdrawn
		s.mu.Unlock()
		switch {
		case sess != nil:
			return sess, nil
		case stopped:
			return nil, fmt.Errorf("upstream %q: closed: %w", s.name, junction.ErrSourceDown)
		case withdrawn && attempts > start:
			return nil, fmt.Errorf("upstream %q: %w: no working session for %v, so its tools are withdrawn until it reconnects (last error: %v)",
				s.name, junction.ErrSourceDown, s.cfg.withdrawAfter(), err)
		case attempts > start && needsPerson(err):
			// It cannot connect until someone acts (an OAuth login).
			cause := personCause(err)
			return nil, needPerson(fmt.Errorf("upstream %q: %w: %v", s.name, junction.ErrSourceDown, cause), cause)
		case !reconnecting && attempts > start:
			// An attempt finished after we asked, and it did not connect.
			return nil, fmt.Errorf("upstream %q: %w: %v", s.name, junction.ErrSourceDown, err)
		}
		select {
		case <-ch:
		case <-expired:
			if err == nil {
				err = errors.New(s.Snapshot().State.String())
			}
			return nil, fmt.Errorf("upstream %q: %w: no session before the call's timeout; it is still connecting (last error: %v)", s.name, junction.ErrSourceDown, err)
		case <-ctx.Done():
			return nil, fmt.Errorf("upstream %q: waiting for connection: %w", s.name, ctx.Err())
		case <-s.ctx.Done():
			return nil, fmt.Errorf("upstream %q: closed: %w", s.name, junction.ErrSourceDown)
		}
	}
}

// signIn is what an error of Config.Auth may offer: a link where the
// user signs in, and a channel closed once they have (package oauth's
// LoginRequiredError of a per-user server).
type signIn interface {
	SignInURL() string
	SignedIn() <-chan struct{}
}

// personError is a call's error (err, which wraps ErrSourceDown) when
// the server cannot be reached until a person acts: it says so
// (NeedsPerson), and offers the sign-in of the cause if it has one,
// without carrying the rest of the cause's chain (transport errors that
// would read as the call's own).
type personError struct {
	err error
	si  signIn // nil: no sign-in offered
}

func (e *personError) Error() string     { return e.err.Error() }
func (e *personError) Unwrap() error     { return e.err }
func (e *personError) NeedsPerson() bool { return true }

func (e *personError) SignInURL() string {
	if e.si == nil {
		return ""
	}
	return e.si.SignInURL()
}

func (e *personError) SignedIn() <-chan struct{} {
	if e.si == nil {
		return nil
	}
	return e.si.SignedIn()
}

// needPerson is err, saying that a person must act (cause says what),
// with cause's sign-in if it offers one.
func needPerson(err, cause error) error {
	pe := &personError{err: err}
	var si signIn
	if errors.As(cause, &si) && si.SignInURL() != "" {
		pe.si = si
	}
	return pe
}

// userCallError is the error of a call made on a user's own session
// (Config.UserAuth). When the session cannot go on until the user acts
// (no token, or one the server refused), it is dropped, not kept
// reconnecting in the background: their next call starts one with what
// they have then; and the error becomes theirs to read (what to do, the
// sign-in link), not the transport's.
func (s *Server) userCallError(ctx context.Context, t *Server, err error) error {
	if err == nil || s.cfg.load().UserAuth == nil {
		return err
	}
	cause := err
	if needsPerson(err) {
		cause = personCause(err)
	} else {
		// Inside a session the transport's error may not carry the
		// cause (go-sdk keeps its own): the user's Auth may know it.
		a, ok := t.cfg.load().Auth.(interface{ LoginNeeded() error })
		if !ok || a.LoginNeeded() == nil {
			return err
		}
		cause = a.LoginNeeded()
	}
	s.DropUser(junction.User(ctx))
	if _, ok := errors.AsType[*personError](err); ok {
		return err
	}
	return needPerson(fmt.Errorf("upstream %q: %w: %v", s.name, junction.ErrSourceDown, cause), cause)
}

// needsPerson reports whether err says no attempt can connect until a
// person acts, as the errors of Config.Auth can (an OAuth login).
func needsPerson(err error) bool {
	var e interface{ NeedsPerson() bool }
	return errors.As(err, &e) && e.NeedsPerson()
}

// personCause is the error in err's chain that says a person must act:
// what the person reads, without the transport's wrapping of it
// ("connect: calling initialize: ... rejected by transport"); err itself
// if there is none.
func personCause(err error) error {
	if p, ok := errors.AsType[interface {
		error
		NeedsPerson() bool
	}](err); ok && p.NeedsPerson() {
		return p
	}
	return err
}

// CallTool implements [junction.Source]. It forwards the call as it is:
// raw arguments, _meta (with the progress token replaced by one of
// junction's, mapped back to the host's), the input responses and request
// state of a multi-round-trip retry, and the result unchanged (input
// requests included). A tool error stays a result with IsError set; a
// JSON-RPC error from the upstream is returned as that *jsonrpc.Error.
// Cancelling ctx cancels the upstream call (notifications/cancelled with
// the upstream's own request id). To a stdio server the call goes out as
// a raw call (typedViaRaw). A call that makes no progress for the tool's timeout
// fails with an error wrapping context.DeadlineExceeded; the session
// stays up for other calls.
//
// A call to a server that is reconnecting waits for the new session, up
// to ctx and the tool's timeout (see sessionUntil); one that finds its
// session closing before the request was sent goes on the next one.
func (s *Server) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if req == nil || req.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing params"}
	}
	name := req.Params.Name
	if !s.cfg.allows(name) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	if t, release, err := s.routeCall(ctx, req); err != nil {
		return nil, err
	} else if t != s {
		defer release()
		res, err := t.CallTool(ctx, req)
		return res, s.signInElicitation(ctx, req, s.userCallError(ctx, t, err))
	}
	timeout := s.cfg.callTimeout(name)
	deadline := deadlineAfter(timeout)
	for {
		sess, err := s.sessionUntil(ctx, deadline)
		if err != nil {
			return nil, err
		}
		res, err := s.callTool(ctx, sess, req, timeout)
		if errors.Is(err, errSessionGone) {
			s.awaitSessionEnd(ctx, sess, deadline)
			continue // nothing was sent: wait for the next session
		}
		if text := typedResultText(res); refused(text, err) && s.learnOldAsks(ctx, callRevision(ctx, req), text, err) {
			return s.CallTool(rerun(ctx), req) // on the host's own session now
		}
		return res, err
	}
}

// awaitSessionEnd waits until sess is no longer the server's session (a
// call found it over before the supervisor did), ctx is done, the
// deadline (if any) passes, or the server closes; it returns at once if
// the session has been replaced already.
func (s *Server) awaitSessionEnd(ctx context.Context, sess *session, deadline time.Time) {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		expired = timer.C
	}
	for {
		s.mu.Lock()
		cur, ch := s.sess, s.changed
		s.mu.Unlock()
		if cur != sess {
			return
		}
		select {
		case <-ch:
		case <-expired:
			return
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// callTool makes one tools/call on sess; see CallTool.
func (s *Server) callTool(ctx context.Context, sess *session, req *mcp.CallToolRequest, timeout time.Duration) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	params := &mcp.CallToolParams{Name: name, InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState}
	if len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
		params.Arguments = req.Params.Arguments
	}
	up := sess.rev()
	params.Meta = traceMeta(ctx, hopMeta(req.Params.Meta, junction.HostSession(ctx), up))
	// Under 2026-07-28 the log level travels with each request; without
	// one the upstream sends no log messages at all. A host that names
	// none gets the level the hub asked for (SetLogLevel); the hosts' own
	// levels still filter what they receive.
	if up.PerRequestMeta() {
		if _, ok := params.Meta[mcp.MetaKeyLogLevel]; !ok {
			if params.Meta == nil {
				params.Meta = mcp.Meta{}
			}
			params.Meta[mcp.MetaKeyLogLevel] = s.LogLevel()
		}
	}
	if sess.stdio() != nil {
		// A stdio server's calls all take the raw path (one path for
		// both), bridged ones included: see typedViaRaw.
		return s.typedViaRaw(ctx, sess, req, timeout)
	}
	if !up.AsksInResults() && callRevision(ctx, req).AsksInResults() {
		params.InputResponses, params.RequestState = nil, ""
		return s.bridgedCall(ctx, sess, req, params, timeout)
	}

	c, callCtx, end, err := s.begin(ctx, sess, junction.HostSession(ctx), timeout, "tool "+strconv.Quote(name))
	if err != nil {
		return nil, err
	}
	defer end()
	s.setCaps(c, metaCaps(req.Params.Meta))
	// Without a session, the request's host link may carry the progress
	// (junction.NotifyProgress); with neither it goes nowhere.
	if hostToken := req.Params.GetProgressToken(); hostToken != nil {
		c.hostToken = hostToken
	}
	params.SetProgressToken(c.token())

	res, err := sess.cs.CallTool(callCtx, params)
	if err == nil {
		s.drainProgress(c)
		if up.TypedResults() {
			res = stripServerFields(res)
		}
		return res, nil
	}
	return nil, s.callError(ctx, callCtx, sess, "tool "+strconv.Quote(name), timeout, err)
}

// typedViaRaw makes a typed call to a stdio server on the raw path, so
// that a server's calls take one path whichever way the host's came:
// the params are written as the host sent them (its arguments byte for
// byte), progress and log messages are forwarded as for a raw call, and
// the result is decoded at the end. An input-required result is returned
// as it is: for a host before 2026-07-28, go-sdk's server asks the host
// and calls again with the answers.
func (s *Server) typedViaRaw(ctx context.Context, sess *session, req *mcp.CallToolRequest, timeout time.Duration) (*mcp.CallToolResult, error) {
	params, err := rawParamsOf(req.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	hm := readHostMeta(ctx, params, junction.HostSession(ctx))
	hm.rev = max(hm.rev, callRevision(ctx, req))
	res, err := s.rawOnce(ctx, sess, req.Params.Name, params, hm, timeout)
	if err != nil {
		return nil, err
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, fmt.Errorf("upstream %q: %s: the result: %w", s.name, toolWhat(req.Params.Name), err)
	}
	return &out, nil
}

// rawParamsOf writes a typed call's params as JSON, the arguments byte
// for byte (json.Marshal would compact them).
func rawParamsOf(p *mcp.CallToolParamsRaw) (json.RawMessage, error) {
	b := make([]byte, 0, 64+len(p.Arguments))
	b = append(b, `{"name":`...)
	name, err := json.Marshal(p.Name)
	if err != nil {
		return nil, err
	}
	b = append(b, name...)
	b = append(b, `,"arguments":`...)
	if args := bytes.TrimSpace(p.Arguments); len(args) > 0 && string(args) != "null" {
		b = append(b, args...)
	} else {
		b = append(b, `{}`...)
	}
	for _, m := range []struct {
		key  string
		val  any
		skip bool
	}{
		{"_meta", p.Meta, len(p.Meta) == 0},
		{"inputResponses", p.InputResponses, len(p.InputResponses) == 0},
		{"requestState", p.RequestState, p.RequestState == ""},
	} {
		if m.skip {
			continue
		}
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"`+m.key+`":`...)
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// stripServerFields is wire.StripServerFields for a decoded result,
// so a result reads the same whichever path it took: without the
// upstream's serverInfo and "resultType":"complete" (go-sdk keeps both
// when it decodes and encodes a result again).
func stripServerFields(res *mcp.CallToolResult) *mcp.CallToolResult {
	b, err := json.Marshal(res)
	if err != nil {
		return res
	}
	stripped := wire.StripServerFields(b)
	if len(stripped) == len(b) {
		return res
	}
	var out mcp.CallToolResult
	if json.Unmarshal(stripped, &out) != nil {
		return res
	}
	return &out
}

// drainProgress waits, briefly, until the progress notifications and log
// messages the upstream sent before its result have been forwarded, so the
// host sees them before the result, as the upstream sent them (see
// progress.go).
func (s *Server) drainProgress(c *call) {
	s.drainLogs(c)
	want := c.progressRead.Load()
	if c.handled.Load() >= want {
		return
	}
	timer := time.NewTimer(drainWait)
	defer timer.Stop()
	for c.handled.Load() < want {
		select {
		case <-c.progress:
		case <-timer.C:
			s.logger.Debug("progress notifications not handled in time", "read", want, "handled", c.handled.Load())
			return
		}
	}
}

// drainWait bounds how long a call's result waits for the notifications
// read before it to be forwarded. The wait only happens while such
// notifications are still being handled (normally microseconds); the
// bound keeps ordering on a heavily loaded machine without holding a
// result forever.
const drainWait = 5 * time.Second

// drainLogs waits, at most drainWait, until the log messages read from the
// upstream before c's result that c's host must see first have been
// handled (forwarded to hosts): see progress.go.
func (s *Server) drainLogs(c *call) {
	want := s.logsBefore(c)
	if s.logsHandled.Load() >= want {
		return
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		// The signal is taken before the count is read again, so a
		// message handled in between closes the channel we wait on.
		s.logsMu.Lock()
		if s.logsSignal == nil {
			s.logsSignal = make(chan struct{})
		}
		ch := s.logsSignal
		s.logsMu.Unlock()
		if s.logsHandled.Load() >= want {
			return
		}
		if timer == nil {
			timer = time.NewTimer(drainWait)
		}
		select {
		case <-ch:
		case <-timer.C:
			s.logger.Debug("log messages not handled in time", "read", want, "handled", s.logsHandled.Load())
			return
		}
	}
}

// logHandled counts a log message as handled and wakes drainLogs.
func (s *Server) logHandled() {
	s.logsHandled.Add(1)
	s.logsMu.Lock()
	if s.logsSignal != nil {
		close(s.logsSignal)
		s.logsSignal = nil
	}
	s.logsMu.Unlock()
}

// begin registers a request to the upstream on sess: it gets a
// no-progress timer of timeout (none if zero), is cancelled if the session
// closes, and is known to the notification handlers by its token. Call
// end when the request is over. If sess is closing, the error wraps
// junction.ErrSourceDown and errSessionGone.
func (s *Server) begin(ctx context.Context, sess *session, host junction.Host, timeout time.Duration, what string) (*call, context.Context, func(), error) {
	callCtx, cancel := context.WithCancelCause(ctx)
	c := s.register(ctx, sess, host, nil, timeout, causeFunc(cancel), true)
	if c == nil {
		return nil, nil, nil, fmt.Errorf("upstream %q: %s: %w: %w", s.name, what, junction.ErrSourceDown, errSessionGone)
	}
	return c, context.WithValue(callCtx, callKey{}, c), func() { s.end(c) }, nil
}

// register registers a request whose end cancel brings about: it is
// called with errNoProgress by the no-progress timer, with
// errSessionClosing when the session closes, and with nil by end. begin
// passes the cancel func of the request's context; a raw call
// (CallToolRaw), which has no context of its own, one that fails its
// reply. register returns nil, having called cancel(nil), if sess is
// closing; otherwise call s.end(c) when the request is over.
//
// With drains set the call gets the channel drainProgress waits on
// (onProgress skips a nil one); raw calls do without.
func (s *Server) register(ctx context.Context, sess *session, host junction.Host, caps []byte, timeout time.Duration, cancel failer, drains bool) *call {
	return s.registerIn(new(call), ctx, sess, host, caps, timeout, cancel, drains)
}

// registerIn is register with the call's record in c, a new one (a raw
// call keeps it in its rawFlight: one allocation for both).
func (s *Server) registerIn(c *call, ctx context.Context, sess *session, host junction.Host, caps []byte, timeout time.Duration, cancel failer, drains bool) *call {
	*c = call{srv: s, host: host, hostCtx: ctx, caps: caps, sess: sess, timeout: timeout, cancel: cancel}
	if drains {
		c.progress = make(chan struct{}, 1)
	}
	var due monoTime
	if timeout > 0 {
		due = monoNow() + monoTime(timeout)
	}
	s.mu.Lock()
	if s.sess != sess {
		// The session is being closed; registering now would make its
		// Close wait for this request.
		s.mu.Unlock()
		cancel.Fail(nil)
		return nil
	}
	if due != 0 {
		c.due = due
		s.watchLocked(due)
	}
	s.nextToken++
	c.seq = s.nextToken
	s.calls.put(c.seq, c)
	s.mu.Unlock()
	return c
}

// A failer ends a request registered with register, with a cause: the
// cancel func of a typed request's context (causeFunc), or a raw call's
// Fail, which ends it with the cause as its reply. A nil cause only
// releases what the request holds.
type failer interface{ Fail(cause error) }

// causeFunc is a context's cancel func as a failer.
type causeFunc context.CancelCauseFunc

func (f causeFunc) Fail(cause error) { f(cause) }

// noProgress ends the call when its no-progress timeout has run out.
func (c *call) noProgress() { c.cancel.Fail(errNoProgress) }

// end ends a call registered by register.
func (s *Server) end(c *call) {
	c.cancel.Fail(nil)
	s.mu.Lock()
	s.calls.take(c.seq)
	if c.host != nil {
		// Log messages sent during the call may be handled just after
		// its result: keep the host as a log destination for a moment.
		r := s.last
		if r == nil || s.lastHost != c.host {
			if r = s.recent[c.host]; r == nil {
				r = new(recentHost)
				s.recent[c.host] = r
			}
			s.lastHost, s.last = c.host, r
		}
		r.callCtx, r.until = c.hostCtx, monoNow()+monoTime(recentHostGrace)
		if s.recentSweep == nil {
			s.recentSweep = time.AfterFunc(recentHostGrace, s.sweepRecent)
		}
	}
	s.mu.Unlock()
	s.noteIdle()
}

// sweepRecent forgets the recent hosts past their time, so that a host
// session that has ended is not kept alive (with all it holds) by its
// last call here, and runs again while any are left.
func (s *Server) sweepRecent() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := monoNow()
	next := time.Duration(0)
	for h, r := range s.recent {
		if left := time.Duration(r.until - now); left <= 0 {
			s.forgetRecent(h)
		} else if next == 0 || left < next {
			next = left
		}
	}
	if next == 0 {
		s.recentSweep = nil
		return
	}
	s.recentSweep.Reset(next)
}

// forgetRecent takes h out of the recent hosts. Called with s.mu held.
func (s *Server) forgetRecent(h junction.Host) {
	delete(s.recent, h)
	if s.lastHost == h {
		s.lastHost, s.last = nil, nil
	}
}

// callError classifies the failure of a request to the upstream.
func (s *Server) callError(ctx, callCtx context.Context, sess *session, what string, timeout time.Duration, err error) error {
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		return werr
	case errors.Is(context.Cause(callCtx), errNoProgress):
		return fmt.Errorf("upstream %q: %s: no progress for %v: %w", s.name, what, timeout, context.DeadlineExceeded)
	case errors.Is(context.Cause(callCtx), errSessionClosing):
		return fmt.Errorf("upstream %q: %s: %w: session closed during the call", s.name, what, junction.ErrSourceDown)
	case ctx.Err() != nil:
		return fmt.Errorf("upstream %q: %s: %w", s.name, what, ctx.Err())
	}
	if s.sessionEnded(sess, err) {
		s.Reconnect()
		return fmt.Errorf("upstream %q: %s: %w: %v", s.name, what, junction.ErrSourceDown, err)
	}
	return fmt.Errorf("upstream %q: %s: %w", s.name, what, err)
}

// sessionEnded reports whether err means the session broke (rather than
// the request failing on a live session).
//
// No waiting is needed to tell. On stdio every way a session breaks
// reaches the request as such an error: stdout ending (Read's error wraps
// io.EOF, whether the process exited or only closed its stdout), a write
// to stdin failing (wraps mcp.ErrConnectionClosed), the connection
// closing (go-sdk's errors wrap mcp.ErrConnectionClosed). A process that
// has exited but whose stdout is still being drained is seen on its
// exited channel. Over HTTP, go-sdk ends the session (sess.done) when it
// fails the connection; a request that could not reach the server (a
// refused or reset connection) is reported as such an error and leaves
// the session up, so it is classified by its kind.
func (s *Server) sessionEnded(sess *session, err error) bool {
	switch {
	case errors.Is(err, mcp.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	if sess.done != nil {
		select {
		case <-sess.done:
			return true
		default:
		}
	}
	if c := sess.stdio(); c != nil {
		select {
		case <-c.exited:
			return true
		default:
		}
	}
	return false
}

// ReadResource implements [junction.Source].
func (s *Server) ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if t, release, err := s.route(junction.User(ctx), junction.HostSession(ctx), junction.RevisionUnknown, "", nil); err != nil {
		return nil, err
	} else if t != s {
		defer release()
		return t.ReadResource(ctx, req)
	}
	params := *req.Params
	return forward(s, ctx, junction.HostSession(ctx), "resource "+strconv.Quote(req.Params.URI), nil,
		func(ctx context.Context, cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
			params.Meta = hopMeta(req.Params.Meta, junction.HostSession(ctx), revisionOf(cs))
			return cs.ReadResource(ctx, &params)
		})
}

// GetPrompt implements [junction.Source].
func (s *Server) GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	hostRev := hostRevision(req.Params.Meta, junction.HostSession(ctx))
	if t, release, err := s.route(junction.User(ctx), junction.HostSession(ctx), hostRev, req.Params.RequestState, metaCaps(req.Params.Meta)); err != nil {
		return nil, err
	} else if t != s {
		defer release()
		return t.GetPrompt(ctx, req)
	}
	if hostRev.AsksInResults() {
		// A legacy upstream that asks for input while building the prompt
		// can only ask this host through a bridge.
		d := s.cfg.callTimeout("")
		if sess, err := s.sessionUntil(ctx, deadlineAfter(d)); err == nil && !sess.rev().AsksInResults() {
			return s.bridgedPrompt(ctx, sess, req, d)
		}
	}
	params := *req.Params
	return forward(s, ctx, junction.HostSession(ctx), "prompt "+strconv.Quote(req.Params.Name), nil,
		func(ctx context.Context, cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
			params.Meta = hopMeta(req.Params.Meta, junction.HostSession(ctx), revisionOf(cs))
			return cs.GetPrompt(ctx, &params)
		})
}

// Complete implements [junction.Source]. An upstream without the
// completions capability gives an empty result.
func (s *Server) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	empty := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	params := *req.Params
	return forward(s, ctx, junction.HostSession(ctx), "completion",
		func(cs *mcp.ClientSession) (*mcp.CompleteResult, bool) {
			caps := cs.InitializeResult().Capabilities
			return empty, caps == nil || caps.Completions == nil
		},
		func(ctx context.Context, cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
			params.Meta = hopMeta(req.Params.Meta, junction.HostSession(ctx), revisionOf(cs))
			return cs.Complete(ctx, &params)
		})
}

// forward makes one request (other than a tool call) to the upstream on
// behalf of host: it waits for a session, registers the request (no-progress
// timeout, cancellation when the session closes) and maps its error. skip,
// if non-nil, may answer without asking the upstream.
func forward[R any](s *Server, ctx context.Context, host junction.Host, what string,
	skip func(*mcp.ClientSession) (R, bool), call func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	var zero R
	d := s.cfg.callTimeout("")
	deadline := deadlineAfter(d)
	for {
		sess, err := s.sessionUntil(ctx, deadline)
		if err != nil {
			return zero, err
		}
		if skip != nil {
			if res, ok := skip(sess.cs); ok {
				return res, nil
			}
		}
		res, err := forwardOn(s, ctx, sess, host, what, d, call)
		if errors.Is(err, errSessionGone) {
			continue // nothing was sent: wait for the next session
		}
		return res, err
	}
}

// forwardOn makes one request of forward on sess.
func forwardOn[R any](s *Server, ctx context.Context, sess *session, host junction.Host, what string, d time.Duration,
	call func(context.Context, *mcp.ClientSession) (R, error)) (R, error) {
	var zero R
	_, rctx, end, err := s.begin(ctx, sess, host, d, what)
	if err != nil {
		return zero, err
	}
	defer end()
	res, err := call(rctx, sess.cs)
	if err != nil {
		return zero, s.callError(ctx, rctx, sess, what, d, err)
	}
	return res, nil
}

// Subscribe implements [junction.Subscriber]. The subscription is kept
// across reconnects. An upstream that does not support subscriptions
// accepts it silently and never sends updates. With [Config.PerHost],
// the subscription of a host that has a session of its own (ctx names it,
// see [junction.HostSession]) is made on that session, where the host's
// calls go.
func (s *Server) Subscribe(ctx context.Context, uri string) error {
	return s.subscribe(ctx, uri, true)
}

// Unsubscribe implements [junction.Subscriber].
//
// Under 2026-07-28 it only stops passing the resource's updates on: the
// subscriptions/listen stream that carries the subscription stays open
// until the session ends. go-sdk v1.8.0's server forgets all of a
// session's list_changed subscriptions when any listen on it ends, so
// ending it would leave the hub deaf to the upstream's list changes
// (docs/reports/go-sdk-listen-unsubscribe.md). Subscribing again reuses
// the stream.
func (s *Server) Unsubscribe(ctx context.Context, uri string) error {
	return s.subscribe(ctx, uri, false)
}

func (s *Server) subscribe(ctx context.Context, uri string, on bool) error {
	if t, release, err := s.routeSubscribe(ctx); err != nil {
		return err
	} else if t != s {
		defer release()
		return t.subscribe(ctx, uri, on)
	}
	s.mu.Lock()
	if on {
		s.subs[uri] = true
	} else {
		delete(s.subs, uri)
	}
	sess := s.sess
	s.mu.Unlock()
	if sess == nil {
		return nil // applied on connect
	}
	caps := sess.cs.InitializeResult().Capabilities
	if caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return nil
	}
	var err error
	if on {
		err = sess.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		if err == nil && sess.rev().ListenSubscriptions() {
			s.awaitAck(ctx, sess.cs, uri)
		}
	} else if !sess.rev().ListenSubscriptions() { // see Unsubscribe
		err = sess.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}
	if err != nil {
		return fmt.Errorf("upstream %q: subscribe %q: %w", s.name, uri, err)
	}
	return nil
}

// watchAcks is client middleware that notes which resource subscriptions
// the upstream has acknowledged. Under 2026-07-28 go-sdk's Subscribe
// returns before the upstream has registered the subscription, so an
// update sent right after it would be lost; Subscribe waits for the
// acknowledgement instead.
func (s *Server) watchAcks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/subscriptions/acknowledged" {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && len(p.Notifications.ResourceSubscriptions) > 0 {
				if cs, ok := req.GetSession().(*mcp.ClientSession); ok {
					s.mu.Lock()
					if s.acked[cs] == nil {
						s.acked[cs] = make(map[string]bool)
					}
					for _, uri := range p.Notifications.ResourceSubscriptions {
						s.acked[cs][uri] = true
					}
					close(s.ackSignal)
					s.ackSignal = make(chan struct{})
					s.mu.Unlock()
				}
			}
		}
		return next(ctx, method, req)
	}
}

// awaitAck waits, up to five seconds, for the upstream to acknowledge the
// subscription to uri. An upstream that refuses it never acknowledges it,
// so the wait ends quietly.
func (s *Server) awaitAck(ctx context.Context, cs *mcp.ClientSession, uri string) {
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ok, ch := s.acked[cs][uri], s.ackSignal
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			s.logger.Debug("resource subscription not acknowledged", "uri", uri)
			return
		case <-ctx.Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// onResourceUpdated passes an update on, for a resource still subscribed
// to (a 2026-07-28 session keeps sending those unsubscribed, see
// Unsubscribe).
func (s *Server) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req.Params == nil {
		return
	}
	s.mu.Lock()
	l, subscribed := s.listener, s.subs[req.Params.URI]
	s.mu.Unlock()
	if l != nil && subscribed {
		l.ResourceUpdated(req.Params.URI)
	}
}

// onProgress restarts the call's no-progress timer and forwards the
// notification to the host that made the call, with the host's token.
func (s *Server) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req.Params == nil {
		return
	}
	token, _ := req.Params.ProgressToken.(string)
	s.mu.Lock()
	c := s.callLocked(token)
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.reset()
	defer func() {
		c.handled.Add(1)
		select {
		case c.progress <- struct{}{}:
		default:
		}
	}()
	c.notify.Lock()
	defer c.notify.Unlock()
	// A bridged call changes hosts (setHost); read them under the lock.
	s.mu.Lock()
	host, hostCtx, hostToken, b := c.host, c.hostCtx, c.hostToken, c.bridge
	if b != nil && hostCtx != nil && hostCtx.Err() != nil {
		// The host's request is over (it took a question back); its
		// retry gets this first.
		b.holdLocked(*req.Params)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if hostToken == nil || hostCtx == nil {
		return
	}
	if err := s.forwardProgress(host, hostCtx, hostToken, *req.Params); err != nil && b != nil {
		// The host's request was answered though its context lives on (a
		// raw call's host link): its retry gets this, as above.
		s.mu.Lock()
		b.holdLocked(*req.Params)
		s.mu.Unlock()
	}
}

// holdLocked keeps progress p for the host's retry of a bridged call, at
// most maxHeldProgress of them. Requires Server.mu.
func (b *bridge) holdLocked(p mcp.ProgressNotificationParams) {
	b.held = append(b.held, p)
	if len(b.held) > maxHeldProgress {
		b.held = slices.Delete(b.held, 0, len(b.held)-maxHeldProgress)
	}
}

// maxHeldProgress bounds the progress a bridged call keeps for its host's
// retry; past it the oldest go (each says how far the call is, so the
// latest matter most).
const maxHeldProgress = 64

// forwardProgress sends the upstream's progress p to the host request
// ctx, under the host's token: through the request's host link, or its
// session host (junction.NotifyProgress); with neither it goes nowhere.
// It returns the error of the sending, logged.
func (s *Server) forwardProgress(host junction.Host, ctx context.Context, token any, p mcp.ProgressNotificationParams) error {
	p.ProgressToken = token
	err := junction.NotifyProgress(ctx, host, &p)
	if err != nil {
		s.logger.Debug("forwarding progress failed", "error", err)
	}
	return err
}

// onLog logs an upstream's notifications/message and forwards it to every
// host session with a call in flight on this server, or one that just
// ended, and to each call in flight without a host session (a log
// message names no request, so those are the hosts it most likely
// concerns). junction.Log sends it where the host asked for it.
func (s *Server) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	defer s.logHandled() // see drainLogs
	if req.Params == nil {
		return
	}
	level := slog.LevelInfo
	switch req.Params.Level {
	case "debug":
		level = slog.LevelDebug
	case "notice", "info":
	case "warning":
		level = slog.LevelWarn
	default:
		level = slog.LevelError
	}
	data, _ := json.Marshal(req.Params.Data)
	s.logger.Log(context.Background(), level, "upstream log", "logger", req.Params.Logger, "data", string(data))
	for _, h := range s.logHosts() {
		// The call may end while this runs; the message still goes out.
		if err := junction.Log(context.WithoutCancel(h.ctx), h.host, req.Params); err != nil {
			s.logger.Debug("forwarding log message failed", "error", err)
		}
	}
}

// defaultLogLevel is the level upstreams are asked for until
// SetLogLevel is called.
const defaultLogLevel mcp.LoggingLevel = "info"

// SetLogLevel implements [junction.LevelSetter]: upstream log messages
// at level and above are asked for. The level is recorded and used at
// every connect; if a session is up whose upstream has the logging
// capability, logging/setLevel is sent to it in the background, so
// SetLogLevel never waits for the upstream. Under protocol 2026-07-28,
// which has no logging/setLevel, the level goes in the _meta of each
// tool call whose host named none. An empty level means "info".
func (s *Server) SetLogLevel(level mcp.LoggingLevel) {
	if level == "" {
		level = defaultLogLevel
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logLevel = level
	meta := appendLevelMeta(nil, level)
	s.levelMeta.Store(&meta)
	s.pushLevel()
	for _, o := range s.own.m {
		o.srv.SetLogLevel(level)
	}
}

// LogLevel returns the level upstream log messages are asked for (see
// SetLogLevel).
func (s *Server) LogLevel() mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logLevel == "" {
		return defaultLogLevel
	}
	return s.logLevel
}

// defaultLevelMeta is the _meta member naming defaultLogLevel.
var defaultLevelMeta = appendLevelMeta(nil, defaultLogLevel)

// appendLevelMeta appends to b the member of a request's _meta that asks
// an upstream of 2026-07-28 for log messages at level and above, with
// the comma before it.
func appendLevelMeta(b []byte, level mcp.LoggingLevel) []byte {
	b = append(b, `,"`+mcp.MetaKeyLogLevel+`":`...)
	return rawjson.AppendString(b, string(level))
}

// takesSetLevel reports whether sess's upstream is asked for its log
// level with logging/setLevel: it has the logging capability and speaks
// a protocol before 2026-07-28.
func takesSetLevel(sess *session) bool {
	res := sess.cs.InitializeResult()
	return res != nil && res.Capabilities != nil && res.Capabilities.Logging != nil &&
		!junction.ParseRevision(res.ProtocolVersion).PerRequestMeta()
}

// pushLevel starts sendLevels if the current session should be sent a
// new log level and no sendLevels runs for it. Called with s.mu held.
//
// The WaitGroup Add is safe against Close: with s.sess set, the
// supervisor is serving it and cannot have returned (Close's Wait waits
// for it, and so for this goroutine too).
func (s *Server) pushLevel() {
	sess := s.sess
	if sess == nil || s.levelPushing || s.ctx.Err() != nil || s.levelSent == s.logLevel || !takesSetLevel(sess) {
		return
	}
	s.levelPushing = true
	s.wg.Add(1)
	go s.sendLevels(sess)
}

// sendLevels sends logging/setLevel to sess until the upstream has the
// level last asked for, one request at a time (so they cannot arrive out
// of order). It ends when the session does: the request is registered
// like a call, so closing the session cancels it.
func (s *Server) sendLevels(sess *session) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		want := s.logLevel
		if s.sess != sess || want == s.levelSent {
			s.levelPushing = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		_, ctx, end, err := s.begin(s.ctx, sess, nil, s.cfg.connectTimeout(), "logging/setLevel")
		if err == nil {
			err = sess.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: want})
			end()
		}
		s.mu.Lock()
		if s.sess == sess {
			s.levelSent = want // tried: a failure is not retried until the level changes
		}
		s.mu.Unlock()
		if err != nil {
			s.logger.Debug("logging/setLevel failed", "level", want, "error", err)
		}
	}
}

// A monoTime is a time read from the monotonic clock alone, as the time
// since the process began (monoNow): one clock read where time.Now makes
// two (the wall clock's and the monotonic one), for the deadlines every
// call sets and the time every call ends.
type monoTime time.Duration

// processStart is monoNow's origin.
var processStart = time.Now()

// monoNow returns the time now.
func monoNow() monoTime { return monoTime(time.Since(processStart)) }

// until returns the time from now until t.
func (t monoTime) until() time.Duration { return time.Duration(t - monoNow()) }

// recentHostGrace is how long a host stays a destination for an
// upstream's log messages after its last call on the server ended.
const recentHostGrace = 2 * time.Second

type recentHost struct {
	callCtx context.Context // the context of the host's last call (see ctx)
	until   monoTime
}

// ctx is the context log messages go to the host with: that of its last
// call, without its cancellation. Made when a message needs it rather
// than at the end of each call.
func (r *recentHost) ctx() context.Context {
	return context.WithoutCancel(streamOf{r.callCtx})
}

// logHosts returns the host sessions an upstream log message goes to:
// those with a call in flight or one that ended a moment ago.
func (s *Server) logHosts() []hostRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []hostRef
	seen := make(map[junction.Host]bool)
	for _, c := range s.hostsCalls(func(*call) bool { return true }) {
		seen[c.host] = true
		out = append(out, hostRef{c.host, streamOf{c.hostCtx}})
	}
	now := monoNow()
	for h, r := range s.recent {
		if now > r.until {
			s.forgetRecent(h)
			continue
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, hostRef{h, r.ctx()})
		}
	}
	if len(out) == 0 && s.sole != nil {
		out = append(out, hostRef{s.sole, context.Background()})
	}
	// A request without a session (2026-07-28 over HTTP) may still have
	// asked for log messages: its call's host link carries them.
	for _, c := range s.calls.all() {
		if c.host == nil && c.hostCtx != nil {
			out = append(out, hostRef{nil, streamOf{c.hostCtx}})
		}
	}
	return out
}

// hostRef is a host session (nil: a request without one) and a context
// to reach it with.
type hostRef struct {
	host junction.Host
	ctx  context.Context
}

// hostCalls returns one in-flight call per distinct host session, and
// each call bridged or bridgeable to a 2026-07-28 host (which may have no
// session: a stateless request).
func (s *Server) hostCalls() []*call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*call
	for _, c := range s.calls.all() {
		if c.bridge != nil || c.lazy != nil {
			out = append(out, c)
		}
	}
	return append(out, s.hostsCalls(func(c *call) bool { return c.bridge == nil && c.lazy == nil })...)
}

// routeRequest finds the host call that a sampling or elicitation request
// from the upstream belongs to.
//
// Under protocol 2026-07-28 such requests never get here: they come back
// inside the tool call's result and go to the host with it. Under older
// protocols the upstream sends a server-to-client request that names no
// call. A request made with a call's context (a go-sdk in-process
// client) is routed by that; otherwise it goes to the host session that
// has calls in flight on this server, and is refused when there is none
// or more than one, rather than guessed.
func (s *Server) routeRequest(ctx context.Context, method string) (*call, error) {
	if c, ok := ctx.Value(callKey{}).(*call); ok && s.routable(c) {
		return c, nil
	}
	calls := s.hostCalls()
	switch len(calls) {
	case 1:
		return calls[0], nil
	case 0:
		if c := s.soleCall(); c != nil {
			return c, nil
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("%s: no host call in flight to route the request to", method)}
	}
	if c := s.onlyAsker(calls); c != nil {
		return c, nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("%s: calls from %d host sessions are in flight; cannot tell which one asked", method, len(calls))}
}

// onlyAsker returns the one call of calls that can be asking, if there
// is one and every call is the same user's: a call bridged to a
// 2026-07-28 host whose question is still with the host (asked and not
// answered, or queued) is parked, its upstream handler waiting for the
// answer, so a new request is most likely another call's. The calls
// left parked by hosts that never answered (for 5 minutes, see
// bridgeIdle) would otherwise make every later question ambiguous. The
// guess is made only among one user's calls (junction.User): a wrong one
// puts a question to the same user who made both calls, never to
// another. Otherwise nil.
func (s *Server) onlyAsker(calls []*call) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var asker *call
	userOf := func(c *call) string {
		if c.hostCtx == nil {
			return ""
		}
		return junction.User(c.hostCtx)
	}
	user := userOf(calls[0])
	for _, c := range calls {
		if userOf(c) != user {
			return nil
		}
		if b := c.bridge; b != nil && (len(b.pending) > 0 || len(b.queue) > 0) {
			continue // parked on its question
		}
		if asker != nil {
			return nil
		}
		asker = c
	}
	return asker
}

// routable reports whether a request from the upstream can go to c's
// host: it has a session, or the call is bridged (or bridgeable) to a
// 2026-07-28 host.
func (s *Server) routable(c *call) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.host != nil || c.bridge != nil || c.lazy != nil
}

// hostContext returns a context for a request to the host: the host
// handler's context (so HTTP fronts route it on the right stream),
// cancelled also when the upstream's request is.
func (s *Server) hostContext(upstreamCtx context.Context, c *call) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(streamOf{c.hostCtx}) // see streamOf
	stop1 := context.AfterFunc(upstreamCtx, cancel)
	stop2 := context.AfterFunc(s.ctx, cancel) // Close must not wait for a host
	return ctx, func() { stop1(); stop2(); cancel() }
}

func (s *Server) onCreateMessage(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c, err := s.routeAsk(ctx, "sampling/createMessage", capSampling)
	if err != nil {
		return nil, err
	}
	if b := s.bridgeOf(c); b != nil {
		return s.sampleViaBridge(ctx, c, b, req.Params)
	}
	hctx, cancel := s.hostContext(ctx, c)
	defer cancel()
	defer c.hold()()
	return c.host.CreateMessage(hctx, req.Params)
}

func (s *Server) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	c, err := s.routeAsk(ctx, "elicitation/create", capElicitation)
	if err != nil {
		return nil, err
	}
	if b := s.bridgeOf(c); b != nil {
		return s.elicitViaBridge(ctx, c, b, req.Params)
	}
	hctx, cancel := s.hostContext(ctx, c)
	defer cancel()
	defer c.hold()()
	return c.host.Elicit(hctx, req.Params)
}
