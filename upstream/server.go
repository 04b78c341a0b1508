package upstream

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/wire"
)

// A Server is one upstream MCP server: a supervised connection that
// reconnects for as long as the Server is open, and a [junction.Source]
// that serves the upstream's tools, resources, templates and prompts.
//
// A Server is safe for concurrent use. Close it to stop its goroutines and
// its process.
type Server struct {
	name   string
	cfg    liveConfig // replaced by Update; read without a lock
	opts   Options
	logger *slog.Logger
	client *mcp.Client

	ctx    context.Context // the supervisor's lifetime; cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the supervisor and its session watchers
	closed sync.Once

	ready     chan struct{} // closed once the first connection attempt has finished, or at Close
	readyOnce sync.Once
	kick      chan struct{} // capacity 1: connect now, skipping the backoff
	relist    chan struct{} // capacity 1: the upstream announced a list change
	// relistWhich are the lists announced changed since serve last
	// listed (listTools, listPrompts, listResources).
	relistWhich atomic.Uint32
	// lastCaps: the capabilities of the last host a raw call to a
	// 2026-07-28 server named, as JSON (see Server.hostCapabilities).
	lastCaps atomic.Pointer[initCaps]

	mu      sync.Mutex // guards the fields below
	state   State
	lastErr error
	// sandboxEvents are the last MaxSandboxEvents denials and warnings of
	// a sandboxed stdio server (sandboxNote).
	sandboxEvents []SandboxEvent
	lastErrAt     time.Time // when lastErr was set
	backoffUntil  time.Time
	sess          *session      // nil unless connected
	changed       chan struct{} // closed and replaced on every state change
	attempts      int           // finished connection attempts
	catalog       *junction.Catalog
	tools         []*mcp.Tool     // the last tool list, unfiltered: the drift baseline
	drift         *junction.Drift // the last non-empty drift; never modified once set
	listener      junction.Listener
	subs          map[string]bool // resource URIs the hub subscribed to
	connects      int
	since         time.Time
	info          *mcp.Implementation
	calls         numTable[call] // in-flight calls by number (call.seq; their progress tokens say it)
	watch         *time.Timer    // the calls' no-progress watchdog (see watchLocked); nil until a call has a timeout
	watchDue      monoTime       // when watch fires; zero when it is not set
	recent        map[junction.Host]*recentHost
	lastHost      junction.Host                          // the host whose call ended last; nil once its entry in recent is gone
	last          *recentHost                            // lastHost's entry in recent, which its next call updates without a lookup
	sole          junction.Host                          // the hub's only host session, if it has one (see sole.go)
	recentSweep   *time.Timer                            // runs sweepRecent while recent has hosts
	acked         map[*mcp.ClientSession]map[string]bool // resource subscriptions acknowledged (2026-07-28)
	ackSignal     chan struct{}                          // closed and replaced on every acknowledgement
	http          *http.Client                           // built on first use
	ownTransport  *http.Transport                        // nil when Config.HTTPClient is set
	nextToken     uint64
	logsRead      atomic.Int64                  // log messages read (see progress.go)
	logsFree      atomic.Int64                  // the number of the last one read on a stream of no call
	logsHandled   atomic.Int64                  // log messages handled by onLog, for drainLogs
	bridges       map[string]*bridge            // parked calls, by requestState (see bridge)
	hostCaps      *mcp.ClientCapabilities       // a host's own session: the capabilities declared (see perhost.go)
	own           ownSessions                   // Config.PerHost: the hosts' own sessions
	onIdle        func()                        // a host's own session: see start
	noDiscover    atomic.Bool                   // the server failed the server/discover probe: offer legacyProtocol (see connect)
	oldAsks       atomic.Bool                   // the server asks the old way on 2026-07-28 sessions (see oldasks.go)
	metaOf        map[*mcp.ClientSession][]byte // per-request protocol _meta, until connect moves it to the session

	// Withdrawal (see Config.WithdrawAfter). downSince is when the last
	// session ended, zero while a session is up and before the first
	// one; withdrawn means the catalog was emptied because no session
	// came back within WithdrawAfter; withdrawTimer fires withdrawDue.
	downSince     time.Time
	withdrawn     bool
	withdrawTimer *time.Timer

	// Log level (see SetLogLevel). logLevel is the level asked for
	// ("info" until SetLogLevel); levelSent is the one last sent to the
	// current session (or tried); levelPushing is set while sendLevels
	// runs for it.
	logLevel     mcp.LoggingLevel
	levelSent    mcp.LoggingLevel
	levelPushing bool
	// levelMeta is logLevel as the member of a request's _meta that
	// names it for an upstream of 2026-07-28 (see rawMeta), made when the
	// level is set; nil until then ("info").
	levelMeta atomic.Pointer[[]byte]

	logsMu     sync.Mutex    // guards logsSignal
	logsSignal chan struct{} // nil unless drainLogs waits; closed when onLog handles a message
}

// session is one established connection.
type session struct {
	cs        *mcp.ClientSession
	transport mcp.Transport
	done      chan struct{} // closed when cs has ended
	cancel    context.CancelFunc
	meta      []byte // at 2026-07-28: the protocol members of each request's _meta (see captureMeta)
	metaHead  []byte // meta without its capabilities member (see appendProtocolMeta)
	// revision is the protocol revision cs negotiated, read once: a call
	// asks it several times.
	revision junction.Revision
}

var (
	_ junction.Source      = (*Server)(nil)
	_ junction.Notifier    = (*Server)(nil)
	_ junction.Subscriber  = (*Server)(nil)
	_ junction.Readier     = (*Server)(nil)
	_ junction.LevelSetter = (*Server)(nil)
)

// New validates cfg and starts connecting to the server in the
// background; it never waits for the upstream. Until the first session is
// up, the server's catalog is empty and calls wait for the connection (up
// to the call's context and Config.ConnectTimeout).
func New(name string, cfg Config, opts *Options) (*Server, error) {
	if name == "" {
		return nil, errors.New("upstream: name must not be empty")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("upstream %q: %w", name, err)
	}
	return start(name, cfg, opts.withDefaults(), nil, nil), nil
}

// start makes a Server and starts its supervisor. caps, if non-nil, are
// the capabilities its client declares, and onIdle is called whenever
// one of its calls or bridges ends (a host's own session, see
// perhost.go); nil caps mean junction's.
func start(name string, cfg Config, o Options, caps *mcp.ClientCapabilities, onIdle func()) *Server {
	s := &Server{
		name:      name,
		opts:      o,
		logger:    o.Logger.With(junction.LogKeySource, name),
		ready:     make(chan struct{}),
		kick:      make(chan struct{}, 1),
		relist:    make(chan struct{}, 1),
		changed:   make(chan struct{}),
		subs:      make(map[string]bool),
		recent:    make(map[junction.Host]*recentHost),
		acked:     make(map[*mcp.ClientSession]map[string]bool),
		ackSignal: make(chan struct{}),
		bridges:   make(map[string]*bridge),
		logLevel:  defaultLogLevel,
		hostCaps:  caps,
		onIdle:    onIdle,
	}
	s.cfg.store(cfg.clone())
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.client = mcp.NewClient(o.ClientInfo, s.clientOptions())
	s.client.AddReceivingMiddleware(s.watchAcks, s.forwardRoots)
	s.client.AddSendingMiddleware(s.captureMeta)
	s.wg.Add(1)
	go s.run()
	return s
}

// Name returns the server's name.
func (s *Server) Name() string { return s.name }

// Config returns a copy of the server's configuration.
func (s *Server) Config() Config { return s.cfg.load().clone() }

// Update applies cfg to the running server if that needs no new process
// or connection (see [Config.NeedsRestart]), and keeps the session: the
// call timeouts and the Allow and Deny filters apply to the calls that
// start from then on, the connect timeout to the next connection attempt
// or catalog read, WithdrawAfter at once (counted from the end of the
// last session), and StopTimeout from the next process the server
// starts. A new filter re-filters the served tools and tells the
// listener.
//
// If cfg differs in a field that needs a restart, Update changes nothing
// and reports restart: the caller starts a new Server with cfg and closes
// this one (see [Registry.Replace]). An invalid cfg changes nothing and
// is an error.
func (s *Server) Update(cfg Config) (restart bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, fmt.Errorf("upstream %q: %w", s.name, err)
	}
	s.mu.Lock()
	old := s.cfg.load()
	if cfg.NeedsRestart(*old) {
		s.mu.Unlock()
		return true, nil
	}
	if cfg.Equal(*old) {
		s.mu.Unlock()
		return false, nil
	}
	next := cfg.clone()
	s.cfg.store(next)
	filtered := !slices.Equal(old.Allow, next.Allow) || !slices.Equal(old.Deny, next.Deny)
	if filtered && s.catalog != nil {
		cat := *s.catalog
		cat.Tools = s.serveTools(s.tools, &next, false)
		s.catalog = &cat
	} else {
		filtered = false
	}
	if old.withdrawAfter() != next.withdrawAfter() {
		s.armWithdraw()
	}
	l := s.listener
	s.mu.Unlock()
	for _, o := range s.ownServers() {
		c := next.clone()
		c.PerHost = false
		o.Update(c)
	}
	s.logger.Info("upstream configuration updated in place")
	if filtered {
		if l != nil {
			l.CatalogChanged()
		}
		s.emit(Event{Kind: EventCatalog})
	}
	return false, nil
}

// Close stops the server: it ends the session, stops the process group of
// a stdio server, and waits for every goroutine the server started. Calls
// in flight fail. Close is idempotent.
func (s *Server) Close() error {
	s.closed.Do(func() {
		s.cancel()
	})
	s.closeOwn()
	s.wg.Wait()
	s.mu.Lock()
	if s.ownTransport != nil {
		s.ownTransport.CloseIdleConnections()
	}
	s.mu.Unlock()
	return nil
}

// SetListener implements [junction.Notifier].
func (s *Server) SetListener(l junction.Listener) {
	s.mu.Lock()
	s.listener = l
	s.mu.Unlock()
}

// Ready implements [junction.Readier]: the channel is closed once the
// server's first connection attempt has finished, connected (its catalog
// installed) or failed, and at Close.
func (s *Server) Ready() <-chan struct{} { return s.ready }

func (s *Server) markReady() { s.readyOnce.Do(func() { close(s.ready) }) }

// Reconnect asks the server to connect now if it is not connected,
// skipping any backoff wait. It does not wait.
func (s *Server) Reconnect() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// sandboxNote records a sandbox event of the server: one line its
// sandbox wrote on stderr ("sandbox: ..."), or a connection its egress
// proxy refused.
func (s *Server) sandboxNote(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sandboxEvents) == MaxSandboxEvents {
		s.sandboxEvents = slices.Delete(s.sandboxEvents, 0, 1)
	}
	s.sandboxEvents = append(s.sandboxEvents, SandboxEvent{At: time.Now(), Text: text})
}

// Snapshot returns the server's status.
func (s *Server) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{
		Name:      s.name,
		Transport: s.cfg.TransportKind(),
		State:     s.state,
		Connects:  s.connects,
		Withdrawn: s.withdrawn,
		Drift:     s.drift,
		Own:       len(s.own.m),
	}
	if s.lastErr != nil {
		snap.LastError = s.lastErr.Error()
		snap.LastErrorAt = s.lastErrAt
	}
	if s.state == StateFailed || s.state == StateDegraded {
		snap.BackoffUntil = s.backoffUntil
	}
	if s.state == StateConnected {
		snap.ConnectedSince = s.since
	}
	if s.sess != nil {
		if c := s.sess.stdio(); c != nil {
			snap.PID = c.pgid
		}
	}
	if s.info != nil {
		info := *s.info
		snap.ServerInfo = &info
	}
	if s.cfg.TransportKind() == TransportStdio {
		lvl, _ := s.cfg.load().Sandbox.ParsedLevel()
		snap.Sandbox = lvl.String()
		snap.SandboxEvents = slices.Clone(s.sandboxEvents)
	}
	if s.catalog != nil {
		for _, t := range s.catalog.Tools {
			snap.Tools = append(snap.Tools, t.Name)
		}
		sort.Strings(snap.Tools)
	}
	return snap
}

// Tools returns the tools served now (after filters), in the upstream's
// order, with the upstream's names. Empty before the first session and
// after the catalog has been withdrawn (see Config.WithdrawAfter); the
// tools stay while the server reconnects.
func (s *Server) Tools() []*mcp.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.catalog == nil {
		return nil
	}
	return slices.Clone(s.catalog.Tools)
}

// WaitReady waits until the server has finished its first connection
// attempt (it is connected, or the attempt failed) or ctx is done. It
// returns the connection error, if any.
func (s *Server) WaitReady(ctx context.Context) error {
	for {
		s.mu.Lock()
		st, err, ch := s.state, s.lastErr, s.changed
		s.mu.Unlock()
		switch st {
		case StateConnected:
			return nil
		case StateFailed, StateDegraded, StateStopped:
			if err == nil {
				err = errors.New(st.String())
			}
			return fmt.Errorf("upstream %q: %w", s.name, err)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Server) clientOptions() *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		Logger:    s.logger,
		KeepAlive: s.cfg.load().KeepAlive,
		// Input requests (elicitation, sampling) of protocol 2026-07-28
		// come back to the host inside the result, and the host's
		// answers are forwarded on the retried call: junction does not
		// answer them itself.
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.signalRelist(listTools) },
		PromptListChangedHandler:    func(context.Context, *mcp.PromptListChangedRequest) { s.signalRelist(listPrompts) },
		ResourceListChangedHandler:  func(context.Context, *mcp.ResourceListChangedRequest) { s.signalRelist(listResources) },
		ResourceUpdatedHandler:      s.onResourceUpdated,
		ProgressNotificationHandler: s.onProgress,
		LoggingMessageHandler:       s.onLog,
		CreateMessageHandler:        s.onCreateMessage,
		ElicitationHandler:          s.onElicit,
	}
	if c := s.hostCaps; c != nil {
		// A host's own session declares what the host declared.
		o.Capabilities = &mcp.ClientCapabilities{RootsV2: c.RootsV2, Sampling: c.Sampling, Elicitation: c.Elicitation}
		if c.Sampling == nil {
			o.CreateMessageHandler = nil
		}
		if c.Elicitation == nil {
			o.ElicitationHandler = nil
		}
	}
	return o
}

// The lists an upstream can announce a change of (signalRelist).
const (
	listTools uint32 = 1 << iota
	listPrompts
	listResources
)

// signalRelist asks serve to list again what changed (listTools, ...):
// only that, so that a host waiting for the change (a list_changed of the
// hub's own) is not kept waiting for lists that did not change.
func (s *Server) signalRelist(which uint32) {
	s.relistWhich.Or(which)
	select {
	case s.relist <- struct{}{}:
	default:
	}
}

// run is the supervisor: connect, serve until the session ends, reconnect;
// until Close.
func (s *Server) run() {
	defer s.wg.Done()
	defer s.stopped()
	defer s.markReady()
	failures := 0
	for s.ctx.Err() == nil {
		sess, err := s.connect()
		s.markReady()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			failures++
			delay := s.opts.backoff(failures)
			s.mu.Lock()
			s.backoffUntil = time.Now().Add(delay)
			s.attempts++
			s.mu.Unlock()
			s.logger.Warn("upstream connection failed", "error", err, "retry_in", delay.Round(time.Millisecond))
			s.setState(StateFailed, err)
			if !s.sleep(delay) {
				return
			}
			continue
		}
		start := time.Now()
		err = s.serve(sess)
		s.endSession(sess)
		if s.ctx.Err() != nil {
			return
		}
		// A session that ends soon after it began counts as a failure, so
		// a server that dies right after initialize is not respawned in a
		// tight loop; after a session that lasted, reconnect at once.
		if time.Since(start) >= stableSession {
			failures = 0
		} else {
			failures++
		}
		var delay time.Duration
		if failures > 0 {
			delay = s.opts.backoff(failures)
			s.mu.Lock()
			s.backoffUntil = time.Now().Add(delay)
			s.mu.Unlock()
		}
		s.logger.Warn("upstream session ended; reconnecting", "error", err, "retry_in", delay.Round(time.Millisecond))
		s.setState(StateDegraded, err)
		if delay > 0 && !s.sleep(delay) {
			return
		}
	}
}

// stableSession is how long a session must last for its end to reset the
// backoff.
const stableSession = 10 * time.Second

// stopped is the supervisor's last act: the server serves nothing more.
func (s *Server) stopped() {
	s.mu.Lock()
	if s.withdrawTimer != nil {
		s.withdrawTimer.Stop()
	}
	hadCatalog := s.catalog != nil
	s.catalog = nil
	l := s.listener
	s.mu.Unlock()
	s.setState(StateStopped, nil)
	if hadCatalog {
		if l != nil {
			l.CatalogChanged()
		}
		s.emit(Event{Kind: EventCatalog})
	}
}

// sleep waits d, or less if a call kicks; it reports false if the server
// is closing.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.kick:
	case <-s.ctx.Done():
		return false
	}
	return true
}

// legacyProtocol is the protocol offered, with initialize, to a server
// that does not survive the server/discover probe.
const legacyProtocol = "2025-11-25"

// connect establishes a session and lists the catalog.
//
// At 2026-07-28 (the default) go-sdk's client opens with a
// server/discover request, and falls back to initialize when the server
// answers it with an error. A strict server may instead close the
// connection on a method it does not know (or the stdio process may
// exit), and then the fallback has nothing to go on. So when a connection
// attempt that probed fails, connect tries once more at once without the
// probe (initialize at 2025-11-25); if that works, the server is never
// probed again.
func (s *Server) connect() (*session, error) {
	cfg := s.cfg.load()
	probes := (cfg.ProtocolVersion == "" || junction.ParseRevision(cfg.ProtocolVersion).HasDiscover()) && !s.noDiscover.Load()
	sess, err := s.connectWith(cfg, cfg.ProtocolVersion, nil)
	if err == nil || !probes || s.ctx.Err() != nil {
		return sess, err
	}
	sess, err2 := s.connectWith(cfg, legacyProtocol, func() {
		// Before the server is made ready: whoever waits for that may
		// read the log and the setting at once.
		s.noDiscover.Store(true)
		s.logger.Warn("the server failed the server/discover probe and connected with initialize; it will be offered protocol "+legacyProtocol+" from now on (set protocol_version to say so in the config)",
			"probe_error", err)
	})
	if err2 != nil {
		return nil, err // the first error says more: it is how the server meets junction's default
	}
	return sess, nil
}

// connectWith makes one connection attempt offering protocol ("": the
// newest go-sdk speaks). connected, if not nil, runs once the session is
// up, before its tools are installed and the server is made ready.
func (s *Server) connectWith(cfg *Config, protocol string, connected func()) (*session, error) {
	if protocol == "" && s.noDiscover.Load() {
		protocol = legacyProtocol
	}
	sessCtx, sessCancel := context.WithCancel(s.ctx)
	ctx, cancel := context.WithTimeout(sessCtx, cfg.connectTimeout())
	defer cancel()
	var copts *mcp.ClientSessionOptions
	if protocol != "" {
		copts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	transport := s.transport(cfg, sessCtx, sessCancel)
	cs, err := s.client.Connect(ctx, transport, copts)
	if err != nil {
		sessCancel()
		if ctx.Err() == context.DeadlineExceeded {
			// Say which bound ran out, whatever the cause looks like
			// (often the bare deadline: a server that never answers).
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("connect: timed out after %v waiting for the server to answer initialize: %w", cfg.connectTimeout(), err)
			}
			return nil, fmt.Errorf("connect: timed out after %v: %v: %w", cfg.connectTimeout(), err, context.DeadlineExceeded)
		}
		if t, ok := transport.(*commandTransport); ok && t.conn != nil && t.conn.endedFirst.Load() {
			// The server ended the connection during initialize: how the
			// process ended (exit status, last lines on stderr) says more
			// than go-sdk's "connection closed" or "broken pipe".
			return nil, fmt.Errorf("connect: %w", t.conn.endErr())
		}
		return nil, fmt.Errorf("connect: %w", err)
	}
	cat, tools, err := s.list(ctx, cs)
	s.mu.Lock()
	meta := s.metaOf[cs]
	delete(s.metaOf, cs)
	s.mu.Unlock()
	if err != nil {
		cs.Close()
		sessCancel()
		return nil, err
	}
	sess := &session{cs: cs, transport: transport, done: make(chan struct{}), cancel: sessCancel, meta: meta, metaHead: protocolMetaHead(meta), revision: revisionOf(cs)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		cs.Wait()
		close(sess.done)
	}()

	// Upstreams send no log messages until asked: ask for the level the
	// hub asked for (SetLogLevel), or "info"; hosts filter further by
	// their own level. Under 2026-07-28 the level travels with each
	// request instead (see CallTool).
	s.mu.Lock()
	level := s.logLevel
	s.mu.Unlock()
	var sent mcp.LoggingLevel
	if takesSetLevel(sess) {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			s.logger.Debug("logging/setLevel failed", "level", level, "error", err)
		}
		sent = level // tried: pushLevel does not try again unless the level changes
	}

	s.mu.Lock()
	subs := make([]string, 0, len(s.subs))
	for uri := range s.subs {
		subs = append(subs, uri)
	}
	s.mu.Unlock()
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Resources != nil && caps.Resources.Subscribe {
		for _, uri := range subs {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				s.logger.Warn("resubscribe failed", "uri", uri, "error", err)
			}
		}
	}

	s.mu.Lock()
	s.sess = sess
	s.attempts++
	s.connects++
	s.since = time.Now()
	s.backoffUntil = time.Time{}
	s.info = cs.InitializeResult().ServerInfo
	s.downSince, s.withdrawn = time.Time{}, false
	if s.withdrawTimer != nil {
		s.withdrawTimer.Stop()
	}
	s.levelSent = sent
	s.pushLevel() // SetLogLevel may have been called since level was read
	s.mu.Unlock()
	if connected != nil {
		connected()
	}
	s.install(cat, tools)
	s.logger.Info("upstream connected", "tools", len(cat.Tools), "protocol", cs.InitializeResult().ProtocolVersion)
	s.setState(StateConnected, nil)
	return sess, nil
}

// serve waits for the session to end, re-listing the catalog when the
// upstream says it changed.
func (s *Server) serve(sess *session) error {
	for {
		select {
		case <-s.ctx.Done():
			return s.ctx.Err()
		case <-sess.done:
			return sessionEndError(sess)
		case <-s.kick:
			// Already connected; nothing to do.
		case <-s.relist:
			ctx, cancel := context.WithTimeout(s.ctx, s.cfg.connectTimeout())
			cat, tools, err := s.relistChanged(ctx, sess.cs, s.relistWhich.Swap(0))
			cancel()
			if err != nil {
				if s.ctx.Err() != nil {
					return s.ctx.Err() // closing: the relist was cut short, nothing failed
				}
				s.logger.Warn("relisting after list_changed failed", "error", err)
				continue
			}
			s.install(cat, tools)
		}
	}
}

// sessionEndError says why sess ended: for a stdio server, how its process
// ended (exit status, last lines on stderr) when it did; otherwise what
// go-sdk's connection reported.
func sessionEndError(sess *session) error {
	if c := sess.stdio(); c != nil {
		// Its stdout has ended, or junction ended the session (a failed
		// keep-alive); in the first case the exit follows at once.
		wait := time.NewTimer(exitGrace)
		defer wait.Stop()
		select {
		case <-c.exited:
			return fmt.Errorf("session ended: %w", c.endErr())
		case <-wait.C:
		}
	}
	if err := sess.cs.Wait(); err != nil {
		return fmt.Errorf("session ended: %w", err)
	}
	return errors.New("session ended")
}

// endSession closes sess (stopping a stdio process). The catalog stays:
// the server's tools remain listed while it reconnects, until the
// withdrawal policy gives up on it (see Config.WithdrawAfter).
func (s *Server) endSession(sess *session) {
	// go-sdk's Close waits for calls in flight: end them first.
	// New calls no longer get sess (see CallTool).
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
		s.signal() // calls waiting for sess to end (sessionEnded)
	}
	var ending []*call
	for _, c := range s.calls.all() {
		if c.sess == sess {
			ending = append(ending, c)
		}
	}
	s.mu.Unlock()
	// Outside s.mu: a raw call's end runs its completion at once, which
	// takes s.mu.
	for _, c := range ending {
		c.cancel.Fail(errSessionClosing)
	}
	if err := sess.cs.Close(); err != nil {
		s.logger.Warn("closing upstream session", "error", err)
	}
	<-sess.done
	sess.cancel()
	s.mu.Lock()
	if s.sess == sess {
		s.sess = nil
	}
	delete(s.acked, sess.cs)
	if s.downSince.IsZero() {
		s.downSince = time.Now()
	}
	s.armWithdraw()
	s.mu.Unlock()
}

// armWithdraw sets the withdrawal timer for the time left until the
// catalog is withdrawn (see Config.WithdrawAfter), or stops it when there
// is nothing to withdraw. Called with s.mu held.
func (s *Server) armWithdraw() {
	d := s.cfg.withdrawAfter()
	if s.downSince.IsZero() || s.withdrawn || s.sess != nil || s.catalog == nil || d < 0 || s.ctx.Err() != nil {
		if s.withdrawTimer != nil {
			s.withdrawTimer.Stop()
		}
		return
	}
	left := max(d-time.Since(s.downSince), 0)
	if s.withdrawTimer == nil {
		s.withdrawTimer = time.AfterFunc(left, s.withdrawDue)
		return
	}
	s.withdrawTimer.Reset(left)
}

// withdrawDue runs when the withdrawal timer fires: if the server has
// still not got a session back, its catalog is withdrawn and the
// listener told. Calls waiting for a session give up.
func (s *Server) withdrawDue() {
	s.mu.Lock()
	d := s.cfg.withdrawAfter()
	// A closed server withdraws nothing: its supervisor clears the
	// catalog (see stopped). Otherwise the supervisor is still running
	// (it returns only once s.ctx is done), so the Add below happens
	// while Close's Wait, if any, still has the supervisor to wait for.
	if s.ctx.Err() != nil || s.sess != nil || s.downSince.IsZero() || s.withdrawn || d < 0 {
		s.mu.Unlock()
		return
	}
	if down := time.Since(s.downSince); down < d {
		// WithdrawAfter grew since the timer was set.
		s.withdrawTimer.Reset(d - down)
		s.mu.Unlock()
		return
	}
	s.withdrawn = true
	s.catalog = nil
	s.signal()
	l := s.listener
	lastErr := s.lastErr
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	s.logger.Warn("upstream tools withdrawn: no working session; they come back when it reconnects",
		"without_session_for", d, "error", lastErr)
	// The listener first: whoever watches events sees a hub already told.
	if l != nil {
		l.CatalogChanged()
	}
	s.emit(Event{Kind: EventCatalog})
}

// signal wakes everything waiting on s.changed. Called with s.mu held.
func (s *Server) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// install makes cat the served catalog, reports drift against the
// previous tool list, and tells the listener.
func (s *Server) install(cat *junction.Catalog, tools []*mcp.Tool) {
	s.mu.Lock()
	prev := s.tools
	hadBaseline := prev != nil
	s.tools = tools
	if s.tools == nil {
		s.tools = []*mcp.Tool{}
	}
	s.catalog = cat
	var drift *junction.Drift
	if hadBaseline {
		drift = junction.CompareTools(prev, tools)
		if !drift.Empty() {
			s.drift = drift
		}
	}
	l := s.listener
	s.mu.Unlock()
	if !drift.Empty() {
		s.logger.Warn("upstream tool list drifted", "drift", drift.Summary())
		s.emit(Event{Kind: EventDrift, Drift: drift})
	}
	if l != nil {
		l.CatalogChanged()
	}
	s.emit(Event{Kind: EventCatalog})
}

func (s *Server) setState(st State, err error) {
	s.mu.Lock()
	changed := s.state != st
	s.state = st
	if err != nil {
		s.lastErr, s.lastErrAt = err, time.Now()
	}
	s.signal()
	s.mu.Unlock()
	if changed {
		s.emit(Event{Kind: EventState, State: st, Err: err})
	}
}

func (s *Server) emit(e Event) {
	if s.opts.OnEvent == nil {
		return
	}
	e.Server = s.name
	if e.Kind != EventState {
		s.mu.Lock()
		e.State = s.state
		s.mu.Unlock()
	}
	s.opts.OnEvent(e)
}

// transport builds the go-sdk transport for one connection attempt with
// cfg. life is the session's lifetime; cancel ends it.
func (s *Server) transport(cfg *Config, life context.Context, cancel context.CancelFunc) mcp.Transport {
	switch cfg.TransportKind() {
	case TransportSSE:
		return &detachedTransport{
			inner:  &mcp.SSEClientTransport{Endpoint: shownEndpoint(cfg.URL), HTTPClient: s.httpClient()},
			life:   life,
			cancel: cancel,
		}
	case TransportStreamableHTTP:
		return &mcp.StreamableClientTransport{Endpoint: shownEndpoint(cfg.URL), HTTPClient: s.httpClient()}
	}
	return &commandTransport{cfg: *cfg, logger: s.logger, observe: s.observe, note: s.sandboxNote}
}

// stdio returns the session's stdio connection, or nil for other
// transports.
func (sess *session) stdio() *stdioConn {
	if t, ok := sess.transport.(*commandTransport); ok {
		return t.conn
	}
	return nil
}

// detachedTransport connects with a context that lives as long as the
// session rather than the connection attempt: go-sdk's SSE client ties
// its event stream to the context given to Connect. A timeout of the
// attempt still aborts a Connect in progress.
type detachedTransport struct {
	inner  mcp.Transport
	life   context.Context
	cancel context.CancelFunc
}

func (t *detachedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stop := context.AfterFunc(ctx, t.cancel)
	defer stop()
	return t.inner.Connect(t.life)
}

// httpClient returns the client for HTTP transports: Config.HTTPClient,
// or one of the server's own whose idle connections Close shuts, with the
// configured headers added, tool results made decodable (see
// contentTransport) and the URL's real query restored (see shownEndpoint).
func (s *Server) httpClient() *http.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http != nil {
		return s.http
	}
	cfg := s.cfg.load()
	base := cfg.HTTPClient
	if base == nil {
		s.ownTransport = http.DefaultTransport.(*http.Transport).Clone()
		base = &http.Client{Transport: s.ownTransport}
	}
	c := *base
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if len(cfg.Headers) > 0 || cfg.BearerToken != "" {
		rt = &headerTransport{base: rt, headers: cfg.Headers, token: cfg.BearerToken}
	}
	if cfg.Auth != nil {
		rt = cfg.Auth.WrapTransport(rt)
	}
	c.Transport = withRealQuery(&wire.ContentTransport{Base: rt, Observe: s.observeStream, Warn: func(n int) {
		s.logger.Warn("replaced content blocks of unknown type", "count", n)
	}}, cfg.URL)
	s.http = &c
	return s.http
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
	token   string
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	return t.base.RoundTrip(req)
}

// list reads the whole catalog, walking every page.
func (s *Server) list(ctx context.Context, cs *mcp.ClientSession) (*junction.Catalog, []*mcp.Tool, error) {
	cat := &junction.Catalog{Instructions: cs.InitializeResult().Instructions}
	if info := cs.InitializeResult().ServerInfo; info != nil {
		cat.Title = info.Title
	}
	return s.listSome(ctx, cs, listTools|listPrompts|listResources, cat, nil)
}

// relistChanged lists again the lists in which (listTools, ...) and
// keeps the others as they are; with none known, or nothing listed yet,
// it lists everything.
func (s *Server) relistChanged(ctx context.Context, cs *mcp.ClientSession, which uint32) (*junction.Catalog, []*mcp.Tool, error) {
	s.mu.Lock()
	prev, prevTools := s.catalog, s.tools
	s.mu.Unlock()
	if which == 0 || prev == nil {
		return s.list(ctx, cs)
	}
	return s.listSome(ctx, cs, which, prev, prevTools)
}

// listSome reads the lists in which (listTools, ...) that the server
// declares, walking every page, onto a copy of prev (and prevTools, the
// server's whole tool list): the lists not read stay as they were.
func (s *Server) listSome(ctx context.Context, cs *mcp.ClientSession, which uint32, prev *junction.Catalog, prevTools []*mcp.Tool) (*junction.Catalog, []*mcp.Tool, error) {
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	cat := *prev
	tools := prevTools
	var err error
	// Some servers list tools without declaring the capability; ask anyway
	// unless it declares other features only.
	if which&listTools != 0 && (caps.Tools != nil || (caps.Resources == nil && caps.Prompts == nil)) {
		if tools, err = collect(cs.Tools(ctx, nil)); err != nil {
			return nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		cat.Tools = s.serveTools(tools, s.cfg.load(), true)
	}
	if which&listResources != 0 && caps.Resources != nil {
		if cat.Resources, err = collect(cs.Resources(ctx, nil)); err != nil {
			return nil, nil, fmt.Errorf("resources/list: %w", err)
		}
		if cat.ResourceTemplates, err = collect(cs.ResourceTemplates(ctx, nil)); err != nil {
			return nil, nil, fmt.Errorf("resources/templates/list: %w", err)
		}
	}
	if which&listPrompts != 0 && caps.Prompts != nil {
		if cat.Prompts, err = collect(cs.Prompts(ctx, nil)); err != nil {
			return nil, nil, fmt.Errorf("prompts/list: %w", err)
		}
	}
	return &cat, tools, nil
}

// serveTools returns the tools of an upstream's list that cfg's filters
// let through and that can be served (see servable), logging the ones
// skipped if warn is set.
func (s *Server) serveTools(tools []*mcp.Tool, cfg *Config, warn bool) []*mcp.Tool {
	var out []*mcp.Tool
	seen := make(map[string]bool)
	for _, t := range tools {
		if t == nil {
			continue
		}
		if !cfg.allows(t.Name) {
			continue
		}
		if seen[t.Name] {
			if warn {
				s.logger.Warn("duplicate tool skipped", junction.LogKeyTool, t.Name)
			}
			continue
		}
		st, err := servable(t)
		if err != nil {
			if warn {
				s.logger.Warn("tool skipped", junction.LogKeyTool, t.Name, "error", err)
			}
			continue
		}
		seen[t.Name] = true
		out = append(out, st)
	}
	return out
}

func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// servable returns t in a form a go-sdk server can register without
// panicking, or an error saying why it cannot be served. The input schema
// is kept as the upstream sent it ($schema, $defs, additionalProperties
// and unknown keywords included), except that a schema with no "type"
// gets "type":"object" and a missing schema or `true` becomes
// {"type":"object"}. An output schema that is not an object schema is
// dropped.
func servable(t *mcp.Tool) (*mcp.Tool, error) {
	if t.Name == "" {
		return nil, errors.New("tool has no name")
	}
	c := *t
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	c.InputSchema = in
	if t.OutputSchema != nil {
		out, err := objectSchema(t.OutputSchema)
		if err != nil || out == nil {
			c.OutputSchema = nil
		} else {
			c.OutputSchema = out
		}
	}
	return &c, nil
}

func objectSchema(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]any{"type": "object"}, nil
	case bool:
		if x {
			return map[string]any{"type": "object"}, nil
		}
		return nil, errors.New("schema is false: the tool accepts no input")
	case map[string]any:
		typ, ok := x["type"]
		if !ok {
			c := make(map[string]any, len(x)+1)
			for k, v := range x {
				c[k] = v
			}
			c["type"] = "object"
			return c, nil
		}
		if typ != "object" {
			return nil, fmt.Errorf("type is %v, want \"object\"", typ)
		}
		return x, nil
	}
	// Some other Go value (a *jsonschema.Schema from an in-process server):
	// round-trip it through JSON.
	b, err := junction.CanonicalJSON(v)
	if err != nil {
		return nil, err
	}
	var m any
	if err := jsonUnmarshal(b, &m); err != nil {
		return nil, err
	}
	if _, ok := m.(map[string]any); !ok {
		return nil, fmt.Errorf("schema is %.200s, want a JSON object", b)
	}
	return objectSchema(m)
}
