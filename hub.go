package junction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction/internal/embed"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/internal/toolsearch"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a [Hub]. A nil *Options is the same as a zero one.
type Options struct {
	// Name and Version identify the hub to hosts (serverInfo). Empty Name
	// means "junction"; empty Version means "dev".
	Name    string
	Title   string
	Version string

	// Instructions are sent to hosts in the initialize result.
	Instructions string

	// Logger receives the hub's own log records. Nil discards them.
	Logger *slog.Logger

	// Observe, if non-nil, is called after every tool call the hub routes,
	// from the goroutine that made the call. It must not block.
	Observe func(CallInfo)

	// Trace, if non-nil, is called as the hub hands each tool call it
	// routes to its source, with the call's context and the W3C trace
	// context the host's request carried in params._meta (zero if none).
	// The context it returns is the one the source gets, and the one
	// Observe sees in [CallInfo.Context] when the call ends: a tracer
	// starts its span there and names it with [WithTraceContext], so that
	// an upstream passes the span on as the parent of its own work. A call
	// a data plane finishes without handing it to the source through
	// [Call] is not traced. Trace must not block.
	Trace func(ctx context.Context, c *Call, parent TraceContext) context.Context

	// PageSize is the page size of list results; zero means go-sdk's
	// default (1000).
	PageSize int

	// KeepAlive, if positive, pings each host session at that interval and
	// closes it when pings fail.
	KeepAlive time.Duration

	// Lock, if non-nil, is the manifest the sources' tools are checked
	// against on every change; see [SourceOptions.Drift] and [Hub.Drift].
	Lock *Manifest

	// Presets are named tool sets by exposed tool name, merged with the
	// presets sources define (for a config file's presets).
	Presets map[string][]string

	// StartupBudget bounds how long the hub waits for sources that
	// connect in the background ([Readier]s): a host's first lists wait
	// for them until the budget, counted from New, runs out, and a call
	// to a tool the hub does not know yet waits for them up to the budget.
	// Zero means [DefaultStartupBudget]; negative means no waiting.
	StartupBudget time.Duration

	// Semantic, if not nil, adds the semantic stage to tool search (see
	// [SemanticSearch]). Off by default.
	Semantic *SemanticSearch

	// Scripts runs code mode's scripts ([Discovery.CodeMode]); a view
	// cannot turn code mode on without it.
	Scripts ScriptEngine
}

// DefaultStartupBudget is the zero value's meaning of
// [Options.StartupBudget].
const DefaultStartupBudget = 10 * time.Second

// CallInfo describes one finished tool call, for metrics, audit and
// traces. The typed path and the fast path fill it in alike, so a call
// reads the same whichever path it took.
type CallInfo struct {
	Source   string        // source name
	Tool     string        // exposed tool name
	Start    time.Time     // when the call began
	Duration time.Duration // time spent in the source
	// Outcome is "ok", "tool_error" (the tool returned isError),
	// "protocol_error" (a JSON-RPC error) or one of the Code* values of a
	// hub-made tool error, lower-cased.
	Outcome string
	// Code is the JSON-RPC error code of a "protocol_error"; else 0.
	Code int64
	// Panicked is true for an "internal" outcome that a panicking source
	// caused.
	Panicked bool
	// Raw is true for a call forwarded by the fast path (see [RawCaller]).
	Raw bool
	// View is the name of the view the call came through ("" for the
	// default view, and for [Hub.Call]).
	View string
	// Session is the host session the call was made for, or nil (a
	// stateless HTTP request, [Hub.Call]).
	Session Host
	// Context is the context the source got (see [Options.Trace]). It is
	// done, or soon will be: use it for its values only.
	Context context.Context
	// Query is the query of a call of a search meta-tool (see
	// [DiscoverySearch]), and Matched the number of tools it matched;
	// "" and 0 for other calls. A meta-tool call's Source is
	// [MetaSource].
	Query   string
	Matched int
	// Via is the meta-tool that made the call for its caller: the script
	// tool (run_script) for a call a code-mode script made; "" for a
	// call a host made.
	Via string

	in      json.RawMessage     // the typed call's arguments, or the raw call's params
	inRaw   bool                // in is a params object
	res     *mcp.CallToolResult // the typed call's result, if any
	resJSON json.RawMessage     // the raw call's result, if any
	resSize int                 // the size of a raw result forwarded while it arrived
}

// Arguments returns the tool's arguments as the host sent them (JSON; {}
// when it sent none). They are the host's data: log them only where an
// operator asked for that. The bytes are valid only while Observe runs,
// and must not be modified.
func (ci CallInfo) Arguments() json.RawMessage {
	args := ci.in
	if ci.inRaw {
		args = nil
		rawjson.Object(ci.in, func(key, val []byte) {
			if args == nil && string(key) == "arguments" {
				args = val
			}
		})
	}
	if len(args) == 0 || string(args) == "null" {
		return json.RawMessage("{}")
	}
	return args
}

// Client returns the host's client name and version: from its session's
// initialize, or, for a request of 2026-07-28 or later that has no
// session, from the request's _meta; nil if neither names one.
func (ci CallInfo) Client() *mcp.Implementation {
	if ci.Session != nil {
		if p := ci.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
			return p.ClientInfo
		}
	}
	if !ci.inRaw {
		return nil
	}
	var info *mcp.Implementation
	rawjson.Object(ci.in, func(key, val []byte) {
		if string(key) != "_meta" {
			return
		}
		rawjson.Object(val, func(k, v []byte) {
			if string(k) == mcp.MetaKeyClientInfo {
				var impl mcp.Implementation
				if json.Unmarshal(v, &impl) == nil {
					info = &impl
				}
			}
		})
	})
	return info
}

// RequestSize returns the size in bytes of the tool's arguments, as
// [CallInfo.Arguments] returns them.
func (ci CallInfo) RequestSize() int { return len(ci.Arguments()) }

// ResultSize returns the size in bytes of the call's result as JSON (a
// tool error the hub made included), before the front adds the
// protocol's own fields; 0 for a protocol error. The typed path encodes
// its result to measure it, so it costs a marshal there: call it only
// when the size is wanted.
func (ci CallInfo) ResultSize() int {
	if ci.resSize > 0 {
		return ci.resSize
	}
	if ci.resJSON != nil || ci.res == nil {
		return len(ci.resJSON)
	}
	b, err := json.Marshal(ci.res)
	if err != nil {
		return 0
	}
	return len(b)
}

// SourceOptions configure how a hub serves one source. A nil
// *SourceOptions is the same as a zero one.
type SourceOptions struct {
	// Prefix chooses when the source's tool and prompt names get the
	// "<Name>__" prefix. The zero value is [PrefixAlways].
	Prefix PrefixMode

	// Allow, if non-empty, lists the only source-local tool names served.
	// Otherwise Deny lists source-local tool names never served.
	Allow []string
	Deny  []string

	// Timeout bounds each tool call to the source. Zero means no bound
	// beyond the host's own cancellation.
	Timeout time.Duration

	// Drift is what the hub does when the source's tools differ from the
	// hub's lock manifest. The zero value is [DriftWarn].
	Drift DriftPolicy
}

// DriftPolicy says what a hub does with tools that differ from its lock.
type DriftPolicy int

const (
	// DriftWarn serves the tools as they are and reports the drift (log,
	// [Hub.Drift], metrics).
	DriftWarn DriftPolicy = iota
	// DriftBlock withholds tools that are new or changed since the lock
	// until the lock is renewed; pinned, unchanged tools are served.
	DriftBlock
	// DriftAccept serves the tools as they are and reports nothing.
	DriftAccept
)

// ParseDriftPolicy parses "warn", "block" and "accept".
func ParseDriftPolicy(s string) (DriftPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "warn":
		return DriftWarn, nil
	case "block":
		return DriftBlock, nil
	case "accept":
		return DriftAccept, nil
	}
	return 0, fmt.Errorf("unknown drift policy %q (use warn, block or accept)", s)
}

func (p DriftPolicy) String() string {
	switch p {
	case DriftBlock:
		return "block"
	case DriftAccept:
		return "accept"
	}
	return "warn"
}

// A Hub aggregates [Source]s and serves them to MCP hosts through one or
// more [View]s.
//
// A Hub is safe for concurrent use. Close it to stop its background work.
type Hub struct {
	opts   Options
	logger *slog.Logger

	mu         sync.RWMutex // guards the fields below
	sources    []*sourceState
	table      *table // nil until the first refresh
	views      []*View
	collisions []Collision
	lock       *Manifest           // see Options.Lock
	presets    map[string][]string // see Options.Presets
	drift      map[string]*Drift   // per source, from the last rebuild
	retired    []*sourceState      // replaced or removed, with calls maybe in flight (see Drain)
	// pending counts the Readier sources not ready yet; changed is closed
	// and replaced whenever the views have been brought in line with a
	// new table or pending changes (see route and WaitStartup).
	pending      int
	changed      chan struct{}
	deadline     time.Time // the startup budget runs out; see Options.StartupBudget
	budgetLogged bool

	refreshMu sync.Mutex // serialises refresh
	rebuilds  sharedRun  // rebuilds asked for at once share one (see rebuild)

	inflight atomic.Int64 // tool calls being routed now

	hostsMu     sync.Mutex // guards hosts and sentLevel (see loglevel.go)
	hosts       map[Host]*hostState
	sentLevel   mcp.LoggingLevel // last level given to LevelSetter sources; "" before any
	levelSendMu sync.Mutex       // serialises updateSourceLevel
	soleSendMu  sync.Mutex       // serialises updateSoleHosts; guards sourceState.sole

	greeted     chan struct{} // closed once a host has finished its handshake (see Greeted)
	greetedOnce sync.Once

	dirty   chan struct{} // a source changed; capacity 1
	done    chan struct{} // closed by Close
	life    context.Context
	endLife context.CancelFunc // cancels life; called by Close
	wg      sync.WaitGroup
	closeMu sync.Once

	tasks *taskStore // the tasks of the extension (tasks.go, taskstore.go)

	// index is what the search meta-tools search (discovery.go); indexed
	// holds, per source, the entries indexed last. Both are updated by
	// rebuild, with refreshMu held; the index is safe to search at any
	// time.
	index     *toolsearch.Index
	indexed   map[string]indexedSource
	embed     *embed.Embedder     // the semantic stage, or nil (Options.Semantic)
	paused    pausedScripts       // code-mode scripts waiting for their hosts' answers
	onReindex func(source string) // tests: called for each source indexed again or dropped
}

type sourceState struct {
	name    string
	src     Source
	sole    Host // the sole host last given to a HostWatcher src; guarded by Hub.soleSendMu
	opts    SourceOptions
	catalog *Catalog // last good catalog; guarded by Hub.mu
	err     error    // last Catalog error; guarded by Hub.mu
	// stale means the source reported a change not yet read; the last
	// catalog keeps being served meanwhile. Guarded by Hub.mu.
	stale bool
	// waiting means the source is a Readier that is not ready yet (it
	// counts in Hub.pending). Guarded by Hub.mu.
	waiting bool
	drainState
}

// Collision reports a name that two sources both wanted to serve.
type Collision struct {
	Kind    string // "tool", "prompt", "resource" or "resource template"
	Name    string // the exposed name or URI
	Winner  string // the source that serves it
	Loser   string // the source whose item is not served
	Details string
}

func (c Collision) String() string {
	return fmt.Sprintf("%s %q from source %q is hidden by source %q", c.Kind, c.Name, c.Loser, c.Winner)
}

// New returns a hub with no sources.
func New(opts *Options) *Hub {
	h := &Hub{dirty: make(chan struct{}, 1), done: make(chan struct{}), greeted: make(chan struct{})}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.Name == "" {
		h.opts.Name = "junction"
	}
	if h.opts.Version == "" {
		h.opts.Version = "dev"
	}
	h.logger = h.opts.Logger
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	h.table = &table{}
	if h.opts.StartupBudget == 0 {
		h.opts.StartupBudget = DefaultStartupBudget
	}
	h.deadline = time.Now().Add(max(h.opts.StartupBudget, 0))
	h.changed = make(chan struct{})
	h.life, h.endLife = context.WithCancel(context.Background())
	h.lock = h.opts.Lock
	h.presets = h.opts.Presets
	h.tasks = newTaskStore(h)
	h.index, h.indexed = toolsearch.New(), map[string]indexedSource{}
	if sem := h.opts.Semantic; sem != nil {
		var err error
		if h.embed, err = embed.New(sem.config(), h.logger.With("component", "semantic search")); err != nil {
			h.logger.Error("semantic search is off: its configuration is not usable", "error", err)
		}
	}
	h.wg.Add(1)
	go h.refresher()
	return h
}

// InFlight returns the number of tool calls the hub is routing now.
func (h *Hub) InFlight() int { return int(h.inflight.Load()) }

// WaitIdle waits until no tool call is in flight, or ctx is done. A server
// shutting down calls it between refusing new requests and closing host
// sessions, so calls in flight finish.
func (h *Hub) WaitIdle(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for h.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Close stops the hub's background work and closes every view's host
// sessions. It does not close the sources: whoever created them does. Close
// is idempotent.
func (h *Hub) Close() error {
	h.closeMu.Do(func() {
		close(h.done)
		h.endLife()
	})
	h.tasks.close()
	h.wg.Wait()
	if h.embed != nil {
		h.embed.Close()
	}
	h.mu.RLock()
	views := slices.Clone(h.views)
	h.mu.RUnlock()
	for _, v := range views {
		v.end()
	}
	return nil
}

// Changes are changes to a hub's sources that [Hub.Apply] makes in one
// step.
type Changes struct {
	// Put adds each source, or puts it in the place of the source of its
	// name.
	Put []Put
	// Remove names the sources to take out. An unknown name is ignored.
	Remove []string
	// Options gives new serving settings (prefix, filters, timeout, drift
	// policy) to sources that stay, by name, without touching them.
	Options map[string]SourceOptions
	// Presets replaces the hub-level presets (see [Options.Presets]) when
	// ReplacePresets is set.
	Presets        map[string][]string
	ReplacePresets bool
	// Lock replaces the lock manifest that drift is measured against
	// (nil: no lock) when ReplaceLock is set.
	Lock        *Manifest
	ReplaceLock bool
}

// Put is one source of [Changes.Put].
type Put struct {
	Name    string
	Source  Source
	Options *SourceOptions // nil: the zero options
	// CatalogWait, if not zero, bounds the wait for the source's first
	// catalog (within Apply's context); a source that has not answered
	// by then serves nothing until it reports a change.
	CatalogWait time.Duration
}

// Apply makes the changes in one step: hosts and calls see the hub
// either as it was or with every change made, never in between, and the
// tools are indexed and the views refreshed once.
//
// It first checks them all and, if one is wrong (a name that is empty,
// holds the separator "__" or is given twice, options for a source that
// is not in the hub afterwards), changes nothing and returns an error
// that wraps [ErrChangesRefused] and says why. Then it readies the new
// sources: it reads each one's catalog. When the changes take a source
// out (replaced or removed), it first waits until every new source is
// ready (a [Readier]; at most until ctx is done), so that no tool goes
// missing, not even one that moves from the old source to a new one; new
// calls go to the old sources until the swap. Changes that only add do
// not wait: a source not ready yet counts as connecting (see
// [Options.StartupBudget]). A source whose catalog cannot be read is
// still put in: it serves nothing until it reports a change (the error is
// logged). Calls already routed to a replaced or removed source finish
// there: the caller waits for them with [Hub.Drain] before stopping it.
//
// The error after the swap is a view's that could not be brought in
// line; the changes are made all the same.
func (h *Hub) Apply(ctx context.Context, ch Changes) error {
	return h.apply(ctx, ch, false)
}

// apply is Apply; with add, a put whose name is in the hub already is
// refused (ErrDuplicateSource) rather than a replacement.
func (h *Hub) apply(ctx context.Context, ch Changes, add bool) error {
	if err := ch.check(); err != nil {
		return fmt.Errorf("%w: %w", ErrChangesRefused, err)
	}
	h.mu.RLock()
	running := make(map[string]bool, len(h.sources))
	for _, s := range h.sources {
		running[s.name] = true
	}
	h.mu.RUnlock()
	if err := ch.checkAgainst(running, add); err != nil {
		return fmt.Errorf("%w: %w", ErrChangesRefused, err)
	}
	// When something goes, every new source must be ready first: a tool
	// may move from the one to the other.
	takesOut := slices.ContainsFunc(ch.Remove, func(n string) bool { return running[n] }) ||
		slices.ContainsFunc(ch.Put, func(p Put) bool { return running[p.Name] })
	puts := make([]*sourceState, len(ch.Put))
	var wg sync.WaitGroup
	for i, p := range ch.Put {
		st := &sourceState{name: p.Name, src: p.Source}
		if p.Options != nil {
			st.opts = *p.Options
		}
		puts[i] = st
		if n, ok := p.Source.(Notifier); ok {
			n.SetListener(&listener{h: h, st: st})
		}
		h.tellLevel(p.Source)
		wg.Go(func() { h.readyToPut(ctx, p, st, takesOut) })
	}
	wg.Wait()

	h.refreshMu.Lock()
	h.mu.Lock()
	running = make(map[string]bool, len(h.sources))
	for _, s := range h.sources {
		running[s.name] = true
	}
	if err := ch.checkAgainst(running, add); err != nil {
		// A source of the same name was added meanwhile.
		h.mu.Unlock()
		h.refreshMu.Unlock()
		return fmt.Errorf("%w: %w", ErrChangesRefused, err)
	}
	var old []*sourceState
	for _, st := range puts {
		if i := slices.IndexFunc(h.sources, func(s *sourceState) bool { return s.name == st.name }); i >= 0 {
			old = append(old, h.sources[i])
			h.settle(h.sources[i])
			h.sources[i] = st
		} else {
			h.sources = append(h.sources, st)
		}
		h.watchReady(st)
	}
	for _, name := range ch.Remove {
		if i := slices.IndexFunc(h.sources, func(s *sourceState) bool { return s.name == name }); i >= 0 {
			old = append(old, h.sources[i])
			h.settle(h.sources[i])
			h.sources = slices.Delete(h.sources, i, i+1)
		}
	}
	for _, s := range h.sources {
		if o, ok := ch.Options[s.name]; ok {
			s.opts = o
		}
	}
	if ch.ReplacePresets {
		h.presets = ch.Presets
	}
	if ch.ReplaceLock {
		h.lock = ch.Lock
	}
	// A source that reported a change while it was readied was not in
	// the hub for the refresher to see.
	stale := slices.ContainsFunc(puts, func(st *sourceState) bool { return st.stale })
	h.mu.Unlock()
	h.refreshMu.Unlock()
	if stale {
		select {
		case h.dirty <- struct{}{}:
		default:
		}
	}

	err := h.rebuild()
	// Retired only now: until the rebuild installed the new table, calls
	// were still routed to the old sources and counted there, and a
	// source retired before would let Drain find it idle and its caller
	// stop it under such a call.
	h.mu.Lock()
	for _, s := range old {
		h.retire(s)
	}
	h.mu.Unlock()
	h.updateSoleHosts()
	return err
}

// readyToPut readies a source of Apply before the swap: it waits for it
// to be ready if wait is set, then reads the catalog.
func (h *Hub) readyToPut(ctx context.Context, p Put, st *sourceState, wait bool) {
	if r, ok := p.Source.(Readier); ok && wait {
		select {
		case <-r.Ready():
		case <-ctx.Done():
			h.logger.Warn("replacement source not ready; swapping it in anyway", LogKeySource, p.Name, "error", ctx.Err())
		}
	}
	cctx := ctx
	if wait {
		cctx = context.WithoutCancel(ctx) // ctx may have ended while it waited
	}
	if p.CatalogWait > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(cctx, p.CatalogWait)
		defer cancel()
	}
	h.loadCatalog(cctx, st)
}

// check checks the changes by themselves.
func (ch *Changes) check() error {
	seen := map[string]bool{}
	for _, p := range ch.Put {
		if p.Name == "" || strings.Contains(p.Name, NameSeparator) {
			return fmt.Errorf("source name %q: must be non-empty and must not contain %q", p.Name, NameSeparator)
		}
		if p.Source == nil {
			return fmt.Errorf("source %q: no source given", p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("source %q: given twice in one change", p.Name)
		}
		seen[p.Name] = true
	}
	for _, name := range ch.Remove {
		if seen[name] {
			return fmt.Errorf("source %q: both put and removed in one change", name)
		}
	}
	return nil
}

// checkAgainst checks the changes against the sources running now.
func (ch *Changes) checkAgainst(running map[string]bool, add bool) error {
	if add {
		for _, p := range ch.Put {
			if running[p.Name] {
				return fmt.Errorf("source %q: %w", p.Name, ErrDuplicateSource)
			}
		}
	}
	for name := range ch.Options {
		stays := running[name] && !slices.Contains(ch.Remove, name)
		if !stays && !slices.ContainsFunc(ch.Put, func(p Put) bool { return p.Name == name }) {
			return fmt.Errorf("source %q: not in the hub", name)
		}
	}
	return nil
}

// Add adds a source under name, reads its catalog and refreshes every view.
// A catalog error is logged and the source serves nothing until it reports
// a change; Add still succeeds. A [Readier] source counts as connecting
// until it is ready (see [Options.StartupBudget]). Name must be unique in
// the hub and must not contain the name separator "__". It is [Hub.Apply]
// of one Put that must be new.
func (h *Hub) Add(ctx context.Context, name string, src Source, opts *SourceOptions) error {
	return h.apply(ctx, Changes{Put: []Put{{Name: name, Source: src, Options: opts}}}, true)
}

// Remove removes the source called name; its tools disappear from every
// view. Calls already routed to it go on (see [Hub.Drain]). Removing an
// unknown name does nothing.
func (h *Hub) Remove(name string) error {
	return h.Apply(context.Background(), Changes{Remove: []string{name}})
}

// Replace puts src in the place of the source called name, keeping its
// position, and refreshes: [Hub.Apply] of one Put. The swap waits until
// src is ready (a [Readier]; up to ctx) and its catalog has been read, so
// hosts never see the source's tools missing and new calls keep going to
// the old source until then. Calls already routed to the old source
// finish there: the caller waits for them with [Hub.Drain] before
// stopping it. Replacing an unknown name adds it.
func (h *Hub) Replace(ctx context.Context, name string, src Source, opts *SourceOptions) error {
	return h.Apply(ctx, Changes{Put: []Put{{Name: name, Source: src, Options: opts}}})
}

// SetSourceOptions changes how the hub serves the source called name
// (prefix, filters, timeout, drift policy) without touching the source.
func (h *Hub) SetSourceOptions(name string, opts SourceOptions) error {
	return h.Apply(context.Background(), Changes{Options: map[string]SourceOptions{name: opts}})
}

// SetLock replaces the lock manifest that drift is measured against (nil:
// no lock) and re-applies the drift policies.
func (h *Hub) SetLock(m *Manifest) error {
	return h.Apply(context.Background(), Changes{Lock: m, ReplaceLock: true})
}

// SetPresets replaces the hub-level presets (see [Options.Presets]).
func (h *Hub) SetPresets(p map[string][]string) error {
	return h.Apply(context.Background(), Changes{Presets: p, ReplacePresets: true})
}

// Drift returns, per source, how its tools differ from the lock manifest,
// as of the last refresh. Sources without drift (or without a lock) are
// absent.
func (h *Hub) Drift() map[string]*Drift {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string]*Drift, len(h.drift))
	for k, v := range h.drift {
		c := *v
		out[k] = &c
	}
	return out
}

// Refresh reads every source's catalog again and updates the views. Hosts
// are sent list_changed notifications for what changed.
func (h *Hub) Refresh(ctx context.Context) error {
	h.mu.RLock()
	sources := slices.Clone(h.sources)
	h.mu.RUnlock()
	for _, st := range sources {
		h.loadCatalog(ctx, st)
	}
	return h.rebuild()
}

// Collisions returns the name clashes found by the last refresh.
func (h *Hub) Collisions() []Collision {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Clone(h.collisions)
}

// Version returns the version the hub reports to hosts.
func (h *Hub) Version() string { return h.opts.Version }

// SourceNames returns the names of the hub's sources, in the order added.
func (h *Hub) SourceNames() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	names := make([]string, len(h.sources))
	for i, s := range h.sources {
		names[i] = s.name
	}
	return names
}

// ToolInfo describes one tool as the hub serves it.
type ToolInfo struct {
	Tool   *mcp.Tool // with the exposed name
	Source string
	Local  string // the source's own name for the tool
}

// Tools returns every tool the hub has, selected or not, in serving order:
// sources in the order added, each source's tools in its own order.
func (h *Hub) Tools() []ToolInfo {
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	out := make([]ToolInfo, 0, len(t.tools))
	for _, e := range t.tools {
		out = append(out, ToolInfo{Tool: e.tool, Source: e.source.name, Local: e.local})
	}
	return out
}

// Presets returns the merged presets of all sources, by exposed tool name.
// Preset names are lower-cased.
func (h *Hub) Presets() map[string][]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	out := make(map[string][]string, len(h.table.presets))
	for k, v := range h.table.presets {
		out[k] = slices.Clone(v)
	}
	return out
}

// CheckSelection reports whether sel names only presets and tools the hub
// has now, and selects at least one tool. The error is an
// *[UnknownNameError] or [ErrEmptySelection].
func (h *Hub) CheckSelection(sel Selection) error {
	h.mu.RLock()
	t := h.table
	h.mu.RUnlock()
	_, err := sel.resolve(t.toolNames(), t.presets)
	return err
}

type listener struct {
	h  *Hub
	st *sourceState
}

func (l *listener) CatalogChanged() {
	l.h.mu.Lock()
	l.st.stale = true // re-read; serve the old catalog until then
	l.h.mu.Unlock()
	select {
	case l.h.dirty <- struct{}{}:
	default:
	}
}

func (l *listener) ResourceUpdated(uri string) {
	p := &mcp.ResourceUpdatedNotificationParams{URI: uri}
	// Best effort: a session that has gone away is not an error.
	for _, ss := range l.h.frontSubscribers(uri) {
		if n, ok := ss.(interface {
			Notify(method string, params mcp.Params) error
		}); ok {
			_ = n.Notify("notifications/resources/updated", p)
		}
	}
}

// refresher re-reads the catalogs of sources that reported a change. It
// runs until Close.
func (h *Hub) refresher() {
	defer h.wg.Done()
	for {
		select {
		case <-h.done:
			return
		case <-h.dirty:
		}
		ctx, cancel := context.WithTimeout(h.life, 30*time.Second)
		h.mu.Lock()
		var stale []*sourceState
		for _, s := range h.sources {
			if s.stale || s.catalog == nil {
				s.stale = false
				stale = append(stale, s)
			}
		}
		h.mu.Unlock()
		for _, s := range stale {
			h.loadCatalog(ctx, s)
		}
		cancel()
		if err := h.rebuild(); err != nil {
			h.logger.Warn("refresh failed", "error", err)
		}
	}
}

func (h *Hub) loadCatalog(ctx context.Context, st *sourceState) {
	c, err := st.src.Catalog(ctx)
	if err == nil && c == nil {
		c = &Catalog{}
	}
	h.mu.Lock()
	st.err = err
	if err == nil {
		st.catalog = c
	}
	h.mu.Unlock()
	if err != nil {
		h.logger.Warn("source catalog failed", LogKeySource, st.name, "error", err)
	}
}

// rebuild recomputes the name table from the cached catalogs and brings
// every view in line with it. It returns once a rebuild that
// began after the call has ended: callers at once (a few hundred
// upstreams getting ready together) share rebuilds instead of each
// waiting for its own, and each still sees its change made.
func (h *Hub) rebuild() error { return h.rebuilds.do(h.rebuildNow) }

// sharedRun runs a function for many callers: a call returns the result
// of a run that began after it; calls made while one runs share the
// next.
type sharedRun struct {
	mu      sync.Mutex
	running bool
	waiting []chan error // for the next run
}

// do runs f, or waits for a run of f that begins after it. The caller
// that finds none running runs f itself, once; calls that came in
// meanwhile are run by a goroutine of their own, so that no caller runs
// f for others for as long as calls keep coming.
func (r *sharedRun) do(f func() error) error {
	ch := make(chan error, 1)
	r.mu.Lock()
	r.waiting = append(r.waiting, ch)
	if r.running {
		r.mu.Unlock()
		return <-ch
	}
	r.running = true
	r.mu.Unlock()
	if r.runOnce(f) {
		go r.runAll(f)
	}
	return <-ch
}

// runAll runs f until no call waits.
func (r *sharedRun) runAll(f func() error) {
	for r.runOnce(f) {
	}
}

// runOnce runs f for the calls waiting now and reports whether more came
// in meanwhile; if not, no run is under way any more.
func (r *sharedRun) runOnce(f func() error) (more bool) {
	r.mu.Lock()
	batch := r.waiting
	r.waiting = nil
	r.mu.Unlock()
	err := f()
	for _, w := range batch {
		w <- err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waiting) == 0 {
		r.running = false
		return false
	}
	return true
}

func (h *Hub) rebuildNow() error {
	h.refreshMu.Lock()
	defer h.refreshMu.Unlock()
	h.mu.RLock()
	sources := slices.Clone(h.sources)
	catalogs := make([]*Catalog, len(sources))
	for i, s := range sources {
		catalogs[i] = s.catalog
	}
	h.mu.RUnlock()

	h.mu.RLock()
	prev := h.table
	lock, presets, prevDrift, prevCollisions := h.lock, h.presets, h.drift, h.collisions
	h.mu.RUnlock()
	t, collisions := buildTable(sources, catalogs, prev, h.logger)
	logCollisions(h.logger, prevCollisions, collisions)
	drift := applyLock(t, sources, lock)
	for name, d := range drift {
		if old := prevDrift[name]; old == nil || old.String() != d.String() {
			h.logger.Warn("tool drift against the lock", LogKeySource, name, "drift", d.Summary())
		}
	}
	for name, tools := range presets {
		key := normPreset(name)
		for _, n := range tools {
			if _, ok := t.toolIndex[n]; ok && !slices.Contains(t.presets[key], n) {
				t.presets[key] = append(t.presets[key], n)
			}
		}
		if _, ok := t.presets[key]; !ok {
			t.presets[key] = []string{}
		}
		sort.Strings(t.presets[key])
	}
	reindexed := h.updateIndex(t, sources, catalogs)
	h.mu.Lock()
	h.table = t
	h.drift = drift
	h.collisions = collisions
	views := slices.Clone(h.views)
	h.mu.Unlock()

	var errs []error
	for _, v := range views {
		if err := v.sync(t); err != nil {
			errs = append(errs, err)
		}
	}
	h.reindexed(reindexed)
	h.mu.Lock()
	h.signal()
	h.mu.Unlock()
	return errors.Join(errs...)
}

// logCollisions logs the collisions of a rebuild that the previous one did
// not have, so a collision that persists across refreshes and reloads is
// logged once, not once per rebuild. A collision is the item a source
// cannot serve (kind, name, loser): it is logged when it appears or when
// the source that serves the name instead changes, and its end is logged
// once, when the loser's item is served again or gone.
func logCollisions(logger *slog.Logger, prev, cur []Collision) {
	type key struct{ kind, name, loser string }
	winners := make(map[key]string, len(prev))
	for _, c := range prev {
		winners[key{c.Kind, c.Name, c.Loser}] = c.Winner
	}
	seen := make(map[key]bool, len(cur))
	for _, c := range cur {
		k := key{c.Kind, c.Name, c.Loser}
		if seen[k] {
			continue // a source that lists the name twice
		}
		seen[k] = true
		if w, ok := winners[k]; !ok || w != c.Winner {
			logger.Warn("name collision", "kind", c.Kind, "name", c.Name, "served_from", c.Winner, "hidden_from", c.Loser)
		}
		delete(winners, k)
	}
	for _, c := range prev {
		k := key{c.Kind, c.Name, c.Loser}
		if _, ok := winners[k]; ok {
			logger.Info("name collision ended", "kind", c.Kind, "name", c.Name, "hidden_from", c.Loser)
			delete(winners, k)
		}
	}
}

func (h *Hub) subscribe(ctx context.Context, uri string, on bool) error {
	h.mu.RLock()
	owner := h.table.ownerOf(uri)
	h.mu.RUnlock()
	if owner == nil {
		return mcp.ResourceNotFoundError(uri)
	}
	sub, ok := owner.src.(Subscriber)
	if !ok {
		return nil
	}
	if on {
		return sub.Subscribe(ctx, uri)
	}
	return sub.Unsubscribe(ctx, uri)
}

// rawSchema returns s as JSON, for hashing and comparison.
func rawSchema(s any) json.RawMessage {
	if s == nil {
		return nil
	}
	if r, ok := s.(json.RawMessage); ok {
		return r
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return b
}
