// Package daemon wires junction together: it turns a [Spec] (what the
// command line or the config file asked for) into a [junction.Hub] with its
// sources and views, and serves it over stdio or HTTP with authentication,
// Origin checks, metrics and an orderly shutdown.
//
// It is the only package that imports every kind of source; the core
// package junction imports none of them, and the command line reaches
// them only through this package: [Build], and for the commands that
// serve or run one source, [OpenDiagrams], [NewDiodeServer],
// [OpenPlugin] and [StartServerCommand].
//
//	cli ──Spec──▶ daemon.Build ──▶ Hub ◀── packs, upstreams, plugins
//	                   │
//	                   └──▶ ServeStdio / ServeHTTP (auth, metrics, /healthz)
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction/internal/codemode"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/statuspage"
)

// Spec is everything needed to build a hub.
type Spec struct {
	// Packs are the names of built-in packs to serve, on top of the
	// config file's packs or, when the file has no packs section (or there
	// is no file), the [DefaultPacks].
	Packs []string
	// NoDefaultPacks leaves out the default packs.
	NoDefaultPacks bool
	// Config is the parsed config file, or nil.
	Config *config.Config
	// Selection narrows the default view (on top of nothing: the config
	// file's presets are only named sets, not a selection).
	Selection junction.Selection
	// Instructions for hosts; empty means a short text naming the hub.
	Instructions string
	// Name and Title override the serverInfo the hub sends ("junction").
	Name, Title string
	// LockPath, if set, overrides the config file's lock path.
	LockPath string
	// ConfigPath is the file Config came from, for status and reloads.
	ConfigPath string
	// IgnoreLock builds the hub without its lock file, so that no drift
	// policy hides a tool: what "junction lock" and "selftest" need.
	IgnoreLock bool
	// StartupBudget bounds how long hosts' first lists wait for upstreams
	// and plugins to connect (junction.Options.StartupBudget): negative
	// means no waiting; zero means the config file's startup_budget, or
	// junction's default.
	StartupBudget time.Duration
	// Audit is the audit trail to write (junction serve's -audit flags
	// over the config file's audit section); off when Output is empty.
	// Traces follow the OTEL_* variables Getenv reads.
	Audit config.Audit
	// AuditStderr is where an Audit.Output of "stderr" goes; nil means
	// os.Stderr.
	AuditStderr io.Writer

	Logger  *slog.Logger
	Getenv  func(string) string
	DataDir string
}

// Daemon is a built hub with its default view. Close it when done.
type Daemon struct {
	Hub     *junction.Hub
	View    *junction.View
	Metrics *Metrics
	logger  *slog.Logger
	getenv  func(string) string
	dataDir string
	// started, calls and reloads are for the status page and /status.
	started time.Time
	calls   *statuspage.Ring[statuspage.Call]
	reloads *statuspage.Ring[statuspage.Reload]

	mu       sync.Mutex          // guards the fields below
	sources  map[string]*managed // by source name
	profiles map[string]*junction.View
	planes   map[*junction.View]*dataplane.Plane
	cfg      *config.Config // in force; nil without a config file
	// quarantined are the servers of cfg in quarantine (not started),
	// with when the hub first had each in quarantine.
	quarantined map[string]time.Time
	sandbox     *config.Sandbox // the top-level sandbox of the config in force (or being applied by Reload)
	spec        Spec
	closers     []io.Closer
	// shared is the store replicas share (the config's store), or nil.
	// Set by Build, then only read.
	shared *Shared

	// users are the OAuth clients of per-user servers (usercreds.go);
	// tokens is their token store, opened once.
	users      userClients
	tokensOnce sync.Once
	tokens     oauth.Store
	// signIns are the pending sign-ins of users' browsers, publicBase the
	// hub's base URL for their links (set when HTTP is served).
	signIns    signIns
	publicBase atomic.Pointer[string]
	// frontTokens are users' latest access tokens at an OAuth front, for
	// token exchange (usercreds.go).
	frontTokens frontTokens
}

// Build constructs the hub described by spec. It fails before serving
// anything if a pack is unknown, a source cannot be set up, or a selection
// names a preset or tool the hub does not have. Upstream servers and
// plugins connect in the background; the hub serves what is ready.
func Build(ctx context.Context, spec Spec) (_ *Daemon, err error) {
	logger := spec.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	getenv := spec.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if logger, err = dipeoLogger(logger, getenv, packNames(spec, spec.Config)); err != nil {
		return nil, err
	}
	metrics := NewMetrics()
	calls := statuspage.NewRing[statuspage.Call](statuspage.RecentCalls)
	// One observation of each call feeds the metrics and the status
	// page's recent calls (timed at the call's end, Start plus Duration,
	// rather than by reading the clock once more per call).
	observe := func(c junction.CallInfo) {
		metrics.ObserveCall(c)
		calls.Add(statuspage.Call{Time: c.Start.Add(c.Duration), Tool: c.Tool, Source: c.Source, DurationMS: float64(c.Duration) / float64(time.Millisecond), Outcome: c.Outcome})
	}
	name := spec.Name
	if name == "" {
		name = "junction"
	}
	instructions := spec.Instructions
	if instructions == "" {
		instructions = "junction hub: the tools of several MCP sources behind one server."
	}
	cfg := spec.Config
	lock, err := loadLock(spec, cfg)
	if err != nil {
		return nil, err
	}
	var presets map[string][]string
	if cfg != nil {
		presets = cfg.Presets
	}
	obs, err := newObservers(ctx, spec, getenv, observe, metrics.auditLines)
	if err != nil {
		return nil, err
	}
	hub := junction.New(&junction.Options{
		Name:          name,
		Title:         spec.Title,
		Version:       buildinfo.Version(),
		Instructions:  instructions,
		Logger:        logger,
		Observe:       obs.observe,
		Trace:         obs.trace,
		Lock:          lock,
		Presets:       presets,
		StartupBudget: startupBudget(spec, cfg),
		Semantic:      semantic(cfg),
		Scripts:       scriptEngine(cfg, logger),
	})
	d := &Daemon{
		Hub: hub, Metrics: metrics, logger: logger, getenv: getenv, dataDir: spec.DataDir,
		started: time.Now(), calls: calls, reloads: statuspage.NewRing[statuspage.Reload](statuspage.RecentReloads),
		sources: map[string]*managed{}, profiles: map[string]*junction.View{}, planes: map[*junction.View]*dataplane.Plane{}, cfg: cfg, spec: spec,
		closers: obs.closers,
	}
	if cfg != nil {
		d.sandbox = cfg.Sandbox
	}
	d.noteQuarantine(cfg, d.started)
	metrics.watchSources(d)
	metrics.watchSessions(d)
	metrics.watchSemantic(hub)
	defer func() {
		if err != nil {
			d.Close()
		}
	}()

	if err := d.openShared(ctx, cfg); err != nil {
		return nil, err
	}
	d.watchUserTokens()
	if err := d.addSources(ctx, packNames(spec, cfg), cfg); err != nil {
		return nil, err
	}
	for _, c := range hub.Collisions() {
		logger.Warn("name collision", "detail", c.String())
	}
	if err := d.CheckSelection(spec.Selection); err != nil {
		return nil, err
	}
	view, err := hub.NewLenientView("", spec.Selection)
	if err != nil {
		return nil, err
	}
	d.View = view
	if cfg != nil {
		if err := setDiscovery(view, cfg.Discovery, cfg.CodeMode, "discovery"); err != nil {
			return nil, err
		}
		if err := d.buildProfiles(cfg); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// startupBudget is the hub's startup budget (junction.Options): the
// command line's, else the config file's (where 0 means no waiting),
// else zero for junction's default.
func startupBudget(spec Spec, cfg *config.Config) time.Duration {
	if spec.StartupBudget != 0 || cfg == nil || cfg.StartupBudget == nil {
		return spec.StartupBudget
	}
	if *cfg.StartupBudget == 0 {
		return -1
	}
	return *cfg.StartupBudget
}

// packNames merges the packs of the command line and the config file.
func packNames(spec Spec, cfg *config.Config) []string {
	var names []string
	seen := map[string]bool{}
	addAll := func(ns []string) {
		for _, n := range ns {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	switch {
	case cfg != nil && cfg.Packs != nil:
		addAll(sortedNames(cfg.Packs))
	case !spec.NoDefaultPacks:
		addAll(DefaultPacks())
	}
	addAll(spec.Packs)
	return names
}

// loadLock reads the lock file named by spec or cfg, if any. A lock path
// that names no file yet is not an error: there is nothing to drift from.
func loadLock(spec Spec, cfg *config.Config) (*junction.Manifest, error) {
	if spec.IgnoreLock {
		return nil, nil
	}
	path := spec.LockPath
	if path == "" && cfg != nil {
		path = cfg.Lock.Path
	}
	if path == "" {
		return nil, nil
	}
	m, err := config.ReadLockFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return m, err
}

// buildProfiles makes one view per config profile. On a reload, the view
// of a profile whose definition did not change is kept, with its host
// sessions; the views of changed and removed profiles are dropped.
func (d *Daemon) buildProfiles(cfg *config.Config) error {
	d.mu.Lock()
	oldViews := d.profiles
	var oldDefs map[string]*config.Profile
	if d.cfg != nil {
		oldDefs = d.cfg.Profiles
	}
	d.mu.Unlock()
	views := map[string]*junction.View{}
	var errs []error
	for _, name := range sortedNames(cfg.Profiles) {
		p := cfg.Profiles[name]
		if v := oldViews[name]; v != nil && sameSelection(oldDefs[name], p) {
			// Kept with its host sessions; a new discovery applies in
			// place (hosts are told their tool list changed).
			views[name] = v
			errs = append(errs, setDiscovery(v, p.Discovery, p.CodeMode, "profiles."+name))
			continue
		}
		sel := junction.Selection{Presets: p.Presets, Tools: p.Tools, Deny: p.Deny, Sources: p.Servers}
		if err := d.CheckSelection(sel); err != nil {
			return fmt.Errorf("profiles.%s: %w", name, err)
		}
		v, err := d.Hub.NewLenientView(name, sel)
		if err != nil {
			return fmt.Errorf("profiles.%s: %w", name, err)
		}
		if err := setDiscovery(v, p.Discovery, p.CodeMode, "profiles."+name); err != nil {
			d.Hub.RemoveView(v)
			return err
		}
		views[name] = v
	}
	d.mu.Lock()
	d.profiles = views
	d.mu.Unlock()
	for name, v := range oldViews {
		if views[name] != v {
			d.Hub.RemoveView(v)
			d.mu.Lock()
			delete(d.planes, v)
			d.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// sameSelection reports whether two definitions of a profile select the
// same tools (their discovery aside).
func sameSelection(a, b *config.Profile) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Discovery, y.Discovery = config.Discovery{}, config.Discovery{}
	return reflect.DeepEqual(x, y)
}

// semantic returns the semantic stage of tool search the config file
// asks for, or nil.
func semantic(cfg *config.Config) *junction.SemanticSearch {
	if cfg == nil || cfg.Discovery.Semantic == nil {
		return nil
	}
	s := cfg.Discovery.Semantic
	return &junction.SemanticSearch{URL: s.URL, Model: s.Model, APIKey: s.APIKey, Dimensions: s.Dimensions, Timeout: s.Timeout, Weight: s.Weight}
}

// Discovery returns the discovery settings of the config file's
// discovery and code_mode sections (or a profile's).
func Discovery(c config.Discovery, cm config.CodeMode) junction.Discovery {
	mode, _ := junction.ParseDiscoveryMode(c.Mode) // validated by config
	return junction.Discovery{Mode: mode, Pinned: c.Pinned, CodeMode: cm.Enabled,
		Names: junction.MetaToolNames{Search: c.Names.Search, Describe: c.Names.Describe, Call: c.Names.Call, Script: cm.Name}}
}

// scriptEngine is code mode's engine, with the config's script limits.
func scriptEngine(cfg *config.Config, logger *slog.Logger) *codemode.Engine {
	e := &codemode.Engine{Logger: logger}
	if cfg != nil {
		l := cfg.CodeMode.Limits
		e.Limits = codemode.Limits{Wall: l.Wall, CPU: l.CPU, Memory: l.Memory, Calls: l.Calls, Concurrent: l.Concurrent, Output: int(l.Output)}
	}
	return e
}

// setDiscovery applies c and cm to v, unless v has them already (which
// would tell hosts their tool list changed for nothing). The error names
// the section (path) and, for a meta-tool whose name a tool has, both.
func setDiscovery(v *junction.View, c config.Discovery, cm config.CodeMode, path string) error {
	want := Discovery(c, cm)
	if reflect.DeepEqual(normalizeDiscovery(v.Discovery()), normalizeDiscovery(want)) {
		return nil
	}
	if err := v.SetDiscovery(want); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func normalizeDiscovery(d junction.Discovery) junction.Discovery {
	if len(d.Pinned) == 0 {
		d.Pinned = nil
	}
	return d
}

// SetView makes v the default view in the place of the one Build made
// (which is removed), with the config file's discovery.
func (d *Daemon) SetView(v *junction.View) error {
	d.mu.Lock()
	cfg := d.cfg
	d.mu.Unlock()
	if cfg != nil {
		if err := setDiscovery(v, cfg.Discovery, cfg.CodeMode, "discovery"); err != nil {
			return err
		}
	}
	d.Hub.RemoveView(d.View)
	d.View = v
	return nil
}

// Profile returns the view of the named profile, or nil.
func (d *Daemon) Profile(name string) *junction.View {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.profiles[name]
}

// AddCloser registers c to be closed by [Daemon.Close], after the hub.
func (d *Daemon) AddCloser(c io.Closer) {
	d.mu.Lock()
	d.closers = append(d.closers, c)
	d.mu.Unlock()
}

// Close closes the hub, stops every source it started (upstream
// processes and plugins included), and then closes everything registered
// with AddCloser, in reverse order.
func (d *Daemon) Close() error {
	errs := []error{d.Hub.Close()}
	d.mu.Lock()
	sources := d.sources
	d.sources = map[string]*managed{}
	closers := d.closers
	d.closers = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	errc := make(chan error, len(sources))
	for _, m := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- m.close()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		errs = append(errs, err)
	}
	for _, c := range slices.Backward(closers) {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// ServeStdio serves the default view on r and w until the host closes its
// end or ctx is done (see dataplane.Plane.ServeStdio). When ctx is done,
// calls in flight get up to stdioDrain to finish before the session
// closes; those still running are then cancelled (the upstream is told).
// When the host closes its end, the calls it made are answered first.
func (d *Daemon) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(runCtx, stdioDrain)
			d.Hub.WaitIdle(wctx)
			cancel()
			stop()
		case <-runCtx.Done():
		}
	}()
	err := d.Plane(d.View).ServeStdio(runCtx, r, w, nil)
	if err != nil && runCtx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}

// Plane returns the data plane that serves v, made on first use.
func (d *Daemon) Plane(v *junction.View) *dataplane.Plane {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := d.planes[v]
	if p == nil {
		p = dataplane.New(v, &dataplane.Options{Logger: d.logger, Count: d.Metrics.countRequest})
		d.planes[v] = p
	}
	return p
}

// stdioDrain bounds how long a stdio server waits for calls in flight
// after a signal.
const stdioDrain = 10 * time.Second
