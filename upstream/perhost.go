package upstream

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hosts' own sessions (Config.PerHost).
//
// A server before protocol 2026-07-28 sends its sampling, elicitation and
// roots requests on its connection, naming no call; on a session shared
// by several hosts, junction can only tell which host a request is for
// when calls of one host alone are in flight (see routeRequest). A
// PerHost server gives each host a session of its own: a second Server
// (an "own session") with the same configuration, started on the host's
// first request that may make the server ask, declaring the host's
// capabilities in initialize. Everything the own session's server asks
// is then for that host. The parent Server keeps its shared session for
// the catalog and the calls made without a host. A host's resource
// subscriptions go where its calls go (routeSubscribe), so that the
// update a call causes comes from the process the host subscribed on.
//
// Whose session a request takes:
//   - a host with a session (stdio, a stateful HTTP session) before
//     2026-07-28: its own session, kept until the host session ends;
//   - a host at 2026-07-28, which has no session (go-sdk's per-request
//     ServerSession ends with the request): a session for the call,
//     until the call is over, bridged parts included (its retry, which
//     names the bridge's request state, finds it);
//   - anything else, and every request of a 2026-07-28 host once the
//     shared session has negotiated 2026-07-28 (such a server asks inside
//     its results, and each request carries the host's capabilities): the
//     shared session.
//
// An own session offers the host's revision when the host is older than
// the server's, as a direct connection would have negotiated.

// ownSessions are a PerHost server's own sessions; guarded by Server.mu.
type ownSessions struct {
	m      map[any]*ownSession // by host session, or by call number for sessionless hosts
	next   uint64              // the last call number given
	closed bool                // Close has begun: no more own sessions
	wg     sync.WaitGroup      // own sessions being closed
	// retired are users' sessions DropUser took out of m while requests
	// still went through them: each closes once they are over.
	retired map[*ownSession]bool

	// For tests: userIdle, if non-zero, replaces userIdleTimeout, and
	// afterFunc, if set, replaces time.AfterFunc for the idle timers.
	userIdle  time.Duration
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

// An ownSession is one host's own session.
type ownSession struct {
	srv     *Server
	key     any
	perCall bool // a sessionless host's: closed when its call is over
	users   int  // requests of the parent's going through it now; guarded by the parent's mu

	// A user's session (Config.UserAuth): stopIdle stops the timer that
	// closes it once idle (nil when none is set); idleGen counts the
	// timers set, so that one stopped too late does nothing. Guarded by
	// the parent's mu.
	stopIdle func() bool
	idleGen  uint64
}

// userIdleTimeout is how long a user's own session (Config.UserAuth) is
// kept once idle: no request of theirs going through it, no call in
// flight or parked on it, no resource subscription. It is then closed;
// the user's next request opens a new one. A hub serving many users so
// holds sessions only for those who called lately.
const userIdleTimeout = 10 * time.Minute

// noRelease is the release func of a request on the shared session.
func noRelease() {}

// route returns the Server a host request goes to: s, or the host's own
// session (see above), and a func to call when the request is over.
// host is the host's session, if it has one; hostRev is the revision
// the host's request follows (RevisionUnknown where it does not matter);
// state is the request state of a retry; caps are the capabilities a
// sessionless host sent, as JSON.
func (s *Server) route(user string, host junction.Host, hostRev junction.Revision, state string, caps []byte) (*Server, func(), error) {
	cfg := s.cfg.load()
	if cfg.UserAuth != nil {
		if user == "" {
			return s, noRelease, nil // the hub's own calls, and hosts without a user: the shared session
		}
		return s.routeUser(user, cfg)
	}
	asksInResults := hostRev.AsksInResults() // the host reads questions inside results (2026-07-28)
	if !s.perHost(cfg) || !cfg.PerHost && (host == nil || asksInResults) {
		// A server that asks the old way gives sessions of their own only
		// to the hosts it could ask that way (see oldasks.go).
		return s, noRelease, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A 2026-07-28 upstream asks a 2026-07-28 host inside its results:
	// one shared session serves them all. A host before 2026-07-28 gets a
	// session of its own at its own revision, as if it had connected
	// directly: a server written for the older revision's requests (a
	// go-sdk handler that calls CreateMessage or Elicit) is refused them
	// by its own SDK on a 2026-07-28 session.
	if s.own.closed || (s.sess != nil && s.sess.rev().AsksInResults() && (asksInResults || host == nil)) {
		return s, noRelease, nil
	}
	var key any
	switch {
	case host != nil && !asksInResults:
		key = host
	case state != "":
		if o := s.ownWithBridge(state); o != nil {
			o.users++
			return o.srv, func() { s.releaseOwn(o) }, nil
		}
		return s, noRelease, nil // the bridge is gone: the call starts again (see resumeRaw)
	case asksInResults:
		s.own.next++
		key = s.own.next
	default:
		return s, noRelease, nil // a sessionless host before 2026-07-28 cannot be asked anyway
	}
	o := s.own.m[key]
	if o == nil {
		if max := cfg.maxHostSessions(); len(s.own.m) >= max {
			return nil, nil, fmt.Errorf("upstream %q: %w: %d host sessions are open, the most max_host_sessions allows; retry when one ends, or raise it",
				s.name, junction.ErrSourceDown, max)
		}
		o = s.startOwn(key, host, caps, cfg)
	}
	o.users++
	return o.srv, func() { s.releaseOwn(o) }, nil
}

// userKey keys a user's own session (Config.UserAuth) in ownSessions.
type userKey string

// routeUser returns user's own session, started on their first request
// with their credentials (Config.UserAuth). A user's session is kept
// until DropUser or Close, or until it has been idle for
// userIdleTimeout (see ownIdle). s.mu is not held.
func (s *Server) routeUser(user string, cfg *Config) (*Server, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own.closed {
		return nil, nil, fmt.Errorf("upstream %q: %w: closing", s.name, junction.ErrSourceDown)
	}
	o := s.own.m[userKey(user)]
	if o == nil {
		if max := cfg.maxHostSessions(); len(s.own.m) >= max {
			return nil, nil, fmt.Errorf("upstream %q: %w: %d users' sessions are open, the most max_host_sessions allows; retry when one ends, or raise it",
				s.name, junction.ErrSourceDown, max)
		}
		c := cfg.clone()
		c.Auth, c.UserAuth, c.BearerToken = cfg.UserAuth(user), nil, ""
		for k := range c.Headers {
			if strings.EqualFold(k, "Authorization") {
				delete(c.Headers, k)
			}
		}
		o = &ownSession{key: userKey(user)}
		opts := s.opts
		opts.OnEvent = nil // the parent stands for the server in events and status
		opts.Logger = s.opts.Logger.With("user", user)
		o.srv = start(s.name, c, opts, &mcp.ClientCapabilities{}, func() { s.ownIdle(o) })
		o.srv.SetListener(ownListener{s})
		o.srv.SetLogLevel(s.logLevel)
		if s.own.m == nil {
			s.own.m = make(map[any]*ownSession)
		}
		s.own.m[userKey(user)] = o
		s.logger.Debug("started a user's own session", "user", user, "open", len(s.own.m))
	}
	o.users++
	o.stopIdleTimer()
	return o.srv, func() { s.releaseOwn(o) }, nil
}

// stopIdleTimer stops o's idle timer, if set. The parent's mu is held.
func (o *ownSession) stopIdleTimer() {
	if o.stopIdle != nil {
		o.stopIdle()
		o.stopIdle = nil
	}
	o.idleGen++
}

// armIdle sets the timer that closes user session o once it has been
// idle for userIdleTimeout, unless one is set. s.mu is held.
func (s *Server) armIdle(o *ownSession) {
	if o.stopIdle != nil {
		return
	}
	d := userIdleTimeout
	if s.own.userIdle > 0 {
		d = s.own.userIdle
	}
	after := s.own.afterFunc
	if after == nil {
		after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	o.idleGen++
	gen := o.idleGen
	o.stopIdle = after(d, func() { s.idleExpired(o, gen) })
}

// idleExpired closes user session o if it is still idle and its timer
// gen was not stopped since.
func (s *Server) idleExpired(o *ownSession, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own.m[o.key] != o || o.idleGen != gen {
		return // dropped, or used again since
	}
	o.stopIdle = nil
	if o.users > 0 || !o.srv.quiet() {
		return // ownIdle sets another once it is
	}
	s.logger.Debug("closing a user's idle session", "user", string(o.key.(userKey)))
	s.dropOwnLocked(o)
}

// signInElicitation turns the error of a user's call that needs them to
// sign in (an error with a SignInURL method, such as package oauth's
// LoginRequiredError with a hub sign-in link) into a URL-mode
// elicitation (-32042) when their host declared URL elicitation, so
// that the host offers the link itself; other errors, and hosts without
// it, keep err (a tool error that carries the link).
func (s *Server) signInElicitation(ctx context.Context, req *mcp.CallToolRequest, err error) error {
	var si signIn
	if err == nil || !errors.As(err, &si) || si.SignInURL() == "" {
		return err
	}
	var caps *mcp.ClientCapabilities
	if b := metaCaps(req.Params.Meta); b != nil {
		caps = parseCapabilities(b)
	} else if junction.HostSession(ctx) != nil {
		if p := junction.HostSession(ctx).InitializeParams(); p != nil {
			caps = p.Capabilities
		}
	}
	if caps == nil || caps.Elicitation == nil || caps.Elicitation.URL == nil {
		return err
	}
	id := rand.Text()
	s.mu.Lock()
	watch := !s.own.closed
	if watch {
		s.own.wg.Add(1) // closeOwn waits for it
	}
	s.mu.Unlock()
	if host, done := junction.HostSession(ctx), si.SignedIn(); !watch || host == nil || done == nil {
		if watch {
			s.own.wg.Done()
		}
	} else {
		// Tell the host when the sign-in is done (notifications/
		// elicitation/complete), so that it retries; give up with the
		// host's session, the server, or the link's life.
		go func() {
			defer s.own.wg.Done()
			t := time.NewTimer(signInWait)
			defer t.Stop()
			hostGone := make(chan struct{})
			junction.AfterEnd(host, func() { close(hostGone) })
			select {
			case <-done:
				host.NotifyElicitationComplete(s.ctx, &mcp.ElicitationCompleteParams{ElicitationID: id})
			case <-hostGone:
			case <-s.ctx.Done():
			case <-t.C:
			}
		}()
	}
	return mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", URL: si.SignInURL(), ElicitationID: id,
		Message: "Sign in to " + req.Params.Name + "'s server with your own account, then call again."}})
}

// signInWait bounds how long a URL elicitation's completion is awaited
// (a sign-in link is good for 10 minutes).
const signInWait = 10 * time.Minute

// DropUser retires user's own session (Config.UserAuth), if they have
// one: their next request starts a new one, with what UserAuth gives
// then (a new token, or none). Requests going through it now end there,
// with the credentials they began with, and it closes once they have.
func (s *Server) DropUser(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.own.m[userKey(user)]
	if o == nil {
		return
	}
	if o.users == 0 && o.srv.idle() {
		s.dropOwnLocked(o)
		return
	}
	// Requests of the user's go through it now: they end there, and the
	// next ones start a session with the credentials as they are now.
	delete(s.own.m, o.key)
	o.stopIdleTimer()
	if s.own.retired == nil {
		s.own.retired = map[*ownSession]bool{}
	}
	s.own.retired[o] = true
}

// startOwn starts an own session for key. s.mu is held.
func (s *Server) startOwn(key any, host junction.Host, caps []byte, cfg *Config) *ownSession {
	if s.own.m == nil {
		s.own.m = make(map[any]*ownSession)
	}
	c := cfg.clone()
	c.PerHost = false
	if host != nil {
		if p := host.InitializeParams(); p != nil && !junction.ParseRevision(p.ProtocolVersion).AsksInResults() &&
			(c.ProtocolVersion == "" || c.ProtocolVersion > p.ProtocolVersion) {
			c.ProtocolVersion = p.ProtocolVersion // the host's revision, not a newer one
		}
	}
	o := &ownSession{key: key, perCall: key != any(host)}
	opts := s.opts
	opts.OnEvent = nil // the parent stands for the server in events and status
	what := "call " + strconv.FormatUint(s.own.next, 10)
	if !o.perCall {
		what = "session " + host.ID()
	}
	opts.Logger = s.opts.Logger.With("host", what) // start adds the source
	declared := &mcp.ClientCapabilities{}
	switch {
	case caps != nil:
		declared = parseCapabilities(caps)
	case host != nil:
		if p := host.InitializeParams(); p != nil && p.Capabilities != nil {
			declared = p.Capabilities
		}
	}
	o.srv = start(s.name, c, opts, declared, func() { s.ownIdle(o) })
	o.srv.SetListener(ownListener{s})
	o.srv.SetLogLevel(s.logLevel)
	s.own.m[key] = o
	s.logger.Debug("started a host's own session", "host", what, "open", len(s.own.m))
	if !o.perCall {
		s.own.wg.Add(1)
		go func() {
			defer s.own.wg.Done()
			done := make(chan struct{})
			junction.AfterEnd(host, func() { close(done) })
			select {
			case <-done:
			case <-s.ctx.Done():
			}
			s.dropOwn(o)
		}()
	}
	return o
}

// parseCapabilities reads capabilities as protocol 2026-07-28 writes
// them (roots as a member of its own); unreadable ones declare nothing.
func parseCapabilities(b []byte) *mcp.ClientCapabilities {
	var v struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots"`
	}
	if json.Unmarshal(b, &v) != nil {
		return &mcp.ClientCapabilities{}
	}
	c := v.ClientCapabilities
	c.RootsV2 = v.Roots
	return &c
}

// ownWithBridge returns the own session whose server has the bridge
// state names. s.mu is held.
func (s *Server) ownWithBridge(state string) *ownSession {
	for _, o := range s.own.m {
		if o.srv.bridgeFor(state) != nil {
			return o
		}
	}
	return nil
}

// releaseOwn ends a request's use of o; a sessionless host's session
// closes once its call is over.
func (s *Server) releaseOwn(o *ownSession) {
	s.mu.Lock()
	o.users--
	s.mu.Unlock()
	s.ownIdle(o)
}

// ownIdle closes o if it is a sessionless host's and nothing is left of
// its call: no request of the parent's goes through it, and its server
// has no call in flight and no parked bridge. A user's session it
// closes only once it has been idle (also without a subscription) for
// userIdleTimeout: it sets the timer.
func (s *Server) ownIdle(o *ownSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.users > 0 {
		return
	}
	if s.own.retired[o] {
		if o.srv.idle() {
			delete(s.own.retired, o)
			s.closeOwnLocked(o)
		}
		return
	}
	if s.own.m[o.key] != o {
		return
	}
	switch _, user := o.key.(userKey); {
	case o.perCall && o.srv.idle():
		s.dropOwnLocked(o)
	case user && o.srv.quiet():
		s.armIdle(o)
	}
}

// idle reports whether s has no call in flight and no parked bridge.
func (s *Server) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.len() == 0 && len(s.bridges) == 0
}

// quiet reports whether s is idle and has no resource subscription
// (closing it would lose the updates).
func (s *Server) quiet() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls.len() == 0 && len(s.bridges) == 0 && len(s.subs) == 0
}

// noteIdle tells the parent of an own session that it may be idle now:
// a call or a bridge of it has ended.
func (s *Server) noteIdle() {
	if s.onIdle != nil {
		s.onIdle()
	}
}

// dropOwn forgets o and closes its server, without waiting for it
// (Close waits for all of them).
func (s *Server) dropOwn(o *ownSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropOwnLocked(o)
}

// dropOwnLocked is dropOwn with s.mu held.
func (s *Server) dropOwnLocked(o *ownSession) {
	if s.own.m[o.key] != o {
		return
	}
	delete(s.own.m, o.key)
	o.stopIdleTimer()
	s.closeOwnLocked(o)
}

// closeOwnLocked closes o's server, which is in no table any more,
// without waiting for it (Close waits for all of them). s.mu is held.
func (s *Server) closeOwnLocked(o *ownSession) {
	if s.own.closed {
		return // closeOwn closes it
	}
	s.own.wg.Add(1)
	s.logger.Debug("closing a host's own session", "open", len(s.own.m))
	go func() {
		defer s.own.wg.Done()
		o.srv.Close()
	}()
}

// closeOwn closes every own session and waits for them; part of Close.
func (s *Server) closeOwn() {
	s.mu.Lock()
	s.own.closed = true
	all := make([]*ownSession, 0, len(s.own.m))
	for _, o := range s.own.m {
		o.stopIdleTimer()
		all = append(all, o)
	}
	for o := range s.own.retired {
		all = append(all, o)
	}
	s.own.m, s.own.retired = nil, nil
	s.mu.Unlock()
	for _, o := range all {
		o.srv.Close()
	}
	s.own.wg.Wait()
}

// ownServers returns the servers of the own sessions open now.
func (s *Server) ownServers() []*Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Server, 0, len(s.own.m))
	for _, o := range s.own.m {
		out = append(out, o.srv)
	}
	return out
}

// routeCall routes a typed tools/call (see route).
func (s *Server) routeCall(ctx context.Context, req *mcp.CallToolRequest) (*Server, func(), error) {
	if cfg := s.cfg.load(); !s.perHost(cfg) && cfg.UserAuth == nil {
		return s, noRelease, nil
	}
	return s.route(junction.User(ctx), junction.HostSession(ctx), callRevision(ctx, req), req.Params.RequestState, metaCaps(req.Params.Meta))
}

// routeSubscribe routes a host's resources/subscribe and unsubscribe to
// the session its calls go to: a host with a session before 2026-07-28
// to its own (see route); anything else (no host, a 2026-07-28 host,
// whose calls may each have a session that ends with the call) to the
// shared session. A 2026-07-28 host over stdio has a session but no
// initialize: its revision is known only from its requests' _meta, and
// its subscriptions go where its calls that name it do, to the shared
// session.
func (s *Server) routeSubscribe(ctx context.Context) (*Server, func(), error) {
	host := junction.HostSession(ctx)
	if cfg := s.cfg.load(); cfg.UserAuth != nil {
		return s.route(junction.User(ctx), host, junction.RevisionUnknown, "", nil)
	}
	if !s.perHost(s.cfg.load()) || host == nil {
		return s, noRelease, nil
	}
	rev := hostRevision(nil, host)
	if rev == junction.RevisionUnknown || rev.AsksInResults() {
		return s, noRelease, nil
	}
	return s.route(junction.User(ctx), host, rev, "", nil)
}

// ownListener is an own session's listener: its resource updates go to
// the parent's listener; its catalog is not served (the parent's is).
type ownListener struct{ parent *Server }

func (l ownListener) CatalogChanged() {}

func (l ownListener) ResourceUpdated(uri string) {
	l.parent.mu.Lock()
	pl := l.parent.listener
	l.parent.mu.Unlock()
	if pl != nil {
		pl.ResourceUpdated(uri)
	}
}

// routeRaw routes a raw tools/call (see route): host is the host's
// session, params the call's params.
func (s *Server) routeRaw(ctx context.Context, params json.RawMessage) (*Server, func(), error) {
	if cfg := s.cfg.load(); !s.perHost(cfg) && cfg.UserAuth == nil {
		return s, noRelease, nil
	}
	host := junction.HostSession(ctx)
	hm := readHostMeta(ctx, params, host)
	var state string
	if hm.retry && rawjson.Contains(params, []byte(`"requestState"`)) {
		var p struct {
			RequestState string `json:"requestState"`
		}
		if json.Unmarshal(params, &p) == nil {
			state = p.RequestState
		}
	}
	return s.route(junction.User(ctx), host, hm.rev, state, hm.caps)
}
