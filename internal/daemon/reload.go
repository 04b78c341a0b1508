package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/statuspage"
)

// ErrReloadRefused is the error of a [Daemon.Reload] that applied
// nothing: a source of the new config could not be set up, and the
// running config stays in force (the reload is recorded as refused).
var ErrReloadRefused = errors.New("reload refused; the running config is unchanged")

// Reload brings the running hub in line with cfg, a config that has
// already parsed and validated:
//
//   - new sources are started and added;
//   - sources whose connection settings changed (command, URL, env, ...)
//     are started anew and swapped in once the new one is ready and its
//     catalog read; calls already routed to the old one finish there
//     (at most reloadDrainWait), then it is stopped;
//   - upstreams whose other settings changed (timeouts, connect and stop
//     timeouts) are updated in place (upstream.Server.Update): the
//     process and session are kept;
//   - sources whose serving settings changed (prefix, filters, drift
//     policy) keep their connection and session; only the hub's view of
//     them changes;
//   - removed sources are taken out of the hub, finish the calls already
//     routed to them, then are stopped;
//   - unchanged sources are not touched.
//
// Presets, profiles, discovery and the lock file are re-read. Changes to the http
// and log sections, and to a pack's settings, need a restart; they are
// logged.
//
// A reload builds and checks the whole new config, starts what is new,
// then swaps it in in one step. First every source the
// new config adds or starts anew is started, and the serving settings of
// those that stay are worked out. If one cannot be set up (an unknown
// pack, an env_file that cannot be read, settings the source refuses),
// those started are stopped again, the reload is refused, and the
// running config stays in force, untouched; the next reload tries it
// all again. Then every change of the sources, the presets and the lock
// file is made in one step ([junction.Hub.Apply]): hosts and calls see
// the old ones or the new ones, never a mix, and when a source goes, its
// successors are ready first, so a tool that moves from one server to
// another is served throughout. A lock file that cannot be read is not
// applied (the pins read before stay) and is reported. Upstreams whose
// timeouts or filters changed are then updated in place, and profiles
// and discovery follow; an error there is reported and, as they are
// applied on every reload, tried again by the next.
// Reload returns once the replaced and removed sources are stopped.
func (d *Daemon) Reload(ctx context.Context, cfg *config.Config) error {
	d.mu.Lock()
	old := d.cfg
	d.mu.Unlock()
	if old == nil {
		old = &config.Config{}
	}
	d.mu.Lock()
	spec := d.spec
	d.mu.Unlock()
	// Compare the packs actually served: a file without a packs section
	// means the defaults, so adding one that names them changes nothing.
	delta := config.Diff(withEffectivePacks(spec, old), withEffectivePacks(spec, cfg))
	var errs []error
	r := &reload{d: d, ctx: ctx}
	d.mu.Lock()
	d.sandbox = cfg.Sandbox
	d.mu.Unlock()
	if !reflect.DeepEqual(old.Sandbox, cfg.Sandbox) {
		// The top-level sandbox is every stdio server's base: each is
		// brought in line (restarted where its own sandbox changes).
		for _, name := range delta.Servers.Unchanged {
			if s := cfg.Servers[name]; s.Transport == config.TransportStdio || s.Transport == "" && s.Command != "" {
				delta.Servers.Updated = append(delta.Servers.Updated, name)
			}
		}
		// And every spawned plugin's: those whose sandbox it changes
		// start anew.
		for _, name := range delta.Plugins.Unchanged {
			if p := cfg.Plugins[name]; p.Command != "" && !reflect.DeepEqual(p.Sandbox.Over(old.Sandbox), p.Sandbox.Over(cfg.Sandbox)) {
				delta.Plugins.Changed = append(delta.Plugins.Changed, name)
			}
		}
	}

	// First start every source the new config adds or starts anew. If
	// one cannot be set up, the reload is refused as a whole: the others
	// are stopped again and the running config stays in force.
	if err := r.prepare(delta, cfg); err != nil {
		d.mu.Lock()
		d.sandbox = old.Sandbox
		d.mu.Unlock()
		d.ReloadRefused(err)
		return fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}

	// Then work out the settings of the sources that stay, and swap
	// everything into the hub in one step.
	ch, inPlace, err := r.changes(delta, cfg)
	ch.Presets, ch.ReplacePresets = cfg.Presets, true
	if lock, err := loadLock(spec, cfg); err != nil {
		// A broken lock file changes nothing: the pins read before stay.
		errs = append(errs, fmt.Errorf("lock file not applied, the tools are still checked against the lock read before: %w", err))
	} else {
		ch.Lock, ch.ReplaceLock = lock, true
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, reloadConnectWait)
		err = d.Hub.Apply(ctx, ch)
		cancel()
		if err != nil && !errors.Is(err, junction.ErrChangesRefused) {
			errs = append(errs, err) // made, but a view lags behind
			err = nil
		}
	}
	if err != nil {
		r.unprepare()
		d.mu.Lock()
		d.sandbox = old.Sandbox
		d.mu.Unlock()
		d.ReloadRefused(err)
		return fmt.Errorf("%w: %w", ErrReloadRefused, err)
	}
	r.swapped(ch)
	// Upstreams whose new settings need no new process (timeouts,
	// filters) are updated in place.
	for _, name := range inPlace {
		if err := d.updateUpstream(name, cfg.Servers[name]); err != nil {
			errs = append(errs, r.failed(name, err))
		}
	}

	// Packs: added and removed ones follow the file; a pack's settings
	// are read once, at start.
	for _, name := range delta.Packs.Changed {
		d.logger.Warn("pack settings changed; restart junction to apply them", junction.LogKeySource, name)
	}

	for _, section := range delta.Sections {
		switch section {
		case "audit":
			fallthrough
		case "http", "log", "startup_budget", "store":
			d.logger.Warn("config section changed; restart junction to apply it", "section", section)
		}
	}
	errs = append(errs, d.buildProfiles(cfg))
	errs = append(errs, setDiscovery(d.View, cfg.Discovery, cfg.CodeMode, "discovery"))
	if old != nil && !reflect.DeepEqual(old.Discovery.Semantic, cfg.Discovery.Semantic) {
		d.logger.Warn("config section changed; restart junction to apply it", "section", "discovery.semantic")
	}
	if old != nil && old.CodeMode.Limits != cfg.CodeMode.Limits {
		d.logger.Warn("config section changed; restart junction to apply it", "section", "code_mode.limits")
	}

	// The config in force is the new one, but for the sources whose
	// change failed: they keep their old entries, so that the next reload
	// tries them again.
	d.mu.Lock()
	d.cfg = withReverted(cfg, old, r.failures)
	d.noteQuarantine(d.cfg, time.Now())
	d.mu.Unlock()
	errs = append(errs, r.retire())
	err = errors.Join(errs...)
	rec := statuspage.Reload{Time: time.Now(), Changes: describeDelta(delta)}
	if err != nil {
		rec.Error = err.Error()
	}
	d.reloads.Add(rec)
	d.shared.configApplied(ctx, cfg)
	if err == nil {
		d.logger.Info("config reloaded",
			"added", len(delta.Servers.Added)+len(delta.Plugins.Added)+len(delta.Packs.Added),
			"restarted", r.restarted,
			"updated", len(delta.Servers.Changed)+len(delta.Plugins.Changed)+
				len(delta.Servers.Updated)+len(delta.Plugins.Updated)+len(delta.Packs.Updated)-r.restarted,
			"removed", len(delta.Servers.Removed)+len(delta.Plugins.Removed)+len(delta.Packs.Removed),
			"unchanged", len(delta.Servers.Unchanged)+len(delta.Plugins.Unchanged)+len(delta.Packs.Unchanged))
	}
	return err
}

// LockFile returns the lock file that [Daemon.Reload] reads for cfg, or ""
// for none. serve watches it with the config file, so that a lock
// rewritten by "junction lock" is applied without SIGHUP.
func (d *Daemon) LockFile(cfg *config.Config) string {
	d.mu.Lock()
	spec := d.spec
	d.mu.Unlock()
	return lockPath(spec, cfg)
}

// lockPath is the lock file loadLock reads, or "" for none.
func lockPath(spec Spec, cfg *config.Config) string {
	switch {
	case spec.IgnoreLock:
		return ""
	case spec.LockPath != "":
		return spec.LockPath
	case cfg != nil:
		return cfg.Lock.Path
	}
	return ""
}

// ReloadRefused records, for the status page and /status, a config file
// that was refused before [Daemon.Reload] (it did not parse or validate);
// the running config is unchanged.
func (d *Daemon) ReloadRefused(err error) {
	d.reloads.Add(statuspage.Reload{Time: time.Now(), Error: "refused; the running config is unchanged: " + err.Error()})
}

// describeDelta says in a line what a reload changes.
func describeDelta(delta config.Delta) string {
	var parts []string
	for _, k := range []struct {
		kind string
		s    config.SourceDelta
	}{{"servers", delta.Servers}, {"plugins", delta.Plugins}, {"packs", delta.Packs}} {
		var what []string
		for _, c := range []struct {
			verb  string
			names []string
		}{{"added", k.s.Added}, {"changed", k.s.Changed}, {"updated", k.s.Updated}, {"removed", k.s.Removed}} {
			if len(c.names) > 0 {
				what = append(what, c.verb+" "+strings.Join(c.names, ", "))
			}
		}
		if len(what) > 0 {
			parts = append(parts, k.kind+": "+strings.Join(what, "; "))
		}
	}
	if len(delta.Sections) > 0 {
		parts = append(parts, "sections: "+strings.Join(delta.Sections, ", "))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, "; ")
}

// A reload is the state of one Reload: the sources it took out of the
// hub, to be stopped once their calls have finished.
type reload struct {
	d         *Daemon
	ctx       context.Context
	started   map[string]*startedSource // by prepare: sources to add or swap in
	failures  map[string]bool           // sources whose change failed (withReverted)
	retiring  []*managed
	restarted int // sources started anew in place of a running one
}

// startedSource is a source prepare started, not yet in the hub.
type startedSource struct {
	m    *managed
	opts *junction.SourceOptions
}

// prepare starts every source that delta adds or starts anew. On the
// first that cannot be set up, it stops those it started and returns the
// errors of all: nothing in the hub has changed.
func (r *reload) prepare(delta config.Delta, cfg *config.Config) error {
	d := r.d
	r.started = map[string]*startedSource{}
	var errs []error
	start := func(name string, f func() (*managed, *junction.SourceOptions, error)) {
		m, opts, err := f()
		if err != nil {
			errs = append(errs, err)
			return
		}
		r.started[name] = &startedSource{m, opts}
	}
	for _, name := range delta.Servers.Added {
		if s := cfg.Servers[name]; s.Serves() {
			start(name, func() (*managed, *junction.SourceOptions, error) { return d.startUpstream(name, s) })
		}
	}
	for _, name := range slices.Concat(delta.Servers.Changed, delta.Servers.Updated) {
		if s := cfg.Servers[name]; s.Serves() && d.upstreamNeedsRestart(name, s) {
			start(name, func() (*managed, *junction.SourceOptions, error) { return d.startUpstream(name, s) })
		}
	}
	for _, name := range slices.Concat(delta.Plugins.Added, delta.Plugins.Changed) {
		if p := cfg.Plugins[name]; !p.Disabled {
			start(name, func() (*managed, *junction.SourceOptions, error) { return d.startPlugin(name, p) })
		}
	}
	for _, name := range delta.Packs.Added {
		start(name, func() (*managed, *junction.SourceOptions, error) {
			return d.startPack(name, cfg.Packs[name]) // nil settings for a default pack
		})
	}
	if len(errs) == 0 {
		return nil
	}
	r.unprepare()
	return errors.Join(errs...)
}

// failed records that the change of source name failed (err not nil),
// and returns err.
func (r *reload) failed(name string, err error) error {
	if err != nil {
		if r.failures == nil {
			r.failures = map[string]bool{}
		}
		r.failures[name] = true
	}
	return err
}

// changes returns the changes of the hub's sources that delta makes:
// the sources prepare started, put in (new, or in the place of the
// running ones); those the new config drops or disables, removed; and
// the new serving settings of those that stay. It also returns the
// upstreams to update in place after the swap (timeouts and filters).
// It fails, changing nothing, if a source's new settings are wrong.
func (r *reload) changes(delta config.Delta, cfg *config.Config) (junction.Changes, []string, error) {
	d := r.d
	ch := junction.Changes{Options: map[string]junction.SourceOptions{}}
	var inPlace []string
	var errs []error
	// In the order of the file's sections, as at start: where two new
	// sources serve one name, the first wins.
	for _, name := range slices.Concat(delta.Servers.Added, delta.Servers.Changed, delta.Servers.Updated,
		delta.Plugins.Added, delta.Plugins.Changed, delta.Packs.Added) {
		s := r.started[name]
		if s == nil || slices.ContainsFunc(ch.Put, func(p junction.Put) bool { return p.Name == name }) {
			continue
		}
		p := junction.Put{Name: name, Source: s.m.src, Options: s.opts}
		if s.m.kind == KindPlugin {
			p.CatalogWait = pluginAddWait
		}
		ch.Put = append(ch.Put, p)
	}
	options := func(name string, src config.Source, prefix junction.PrefixMode) {
		opts, err := sourceOptions(src, prefix)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return
		}
		if slices.Contains(d.Hub.SourceNames(), name) {
			ch.Options[name] = *opts
		}
	}
	for _, name := range slices.Concat(delta.Servers.Changed, delta.Servers.Updated) {
		s := cfg.Servers[name]
		switch {
		case !s.Serves():
			ch.Remove = append(ch.Remove, name)
		case r.started[name] == nil:
			if err := d.checkUpstreamUpdate(name, s); err != nil {
				errs = append(errs, err)
				continue
			}
			inPlace = append(inPlace, name)
			options(name, s.Source, junction.PrefixAlways)
		}
	}
	ch.Remove = append(ch.Remove, delta.Servers.Removed...)
	for _, name := range delta.Plugins.Changed {
		if cfg.Plugins[name].Disabled {
			ch.Remove = append(ch.Remove, name)
		}
	}
	for _, name := range delta.Plugins.Updated {
		options(name, cfg.Plugins[name].Source, junction.PrefixAlways)
	}
	ch.Remove = append(ch.Remove, delta.Plugins.Removed...)
	for _, name := range delta.Packs.Updated {
		options(name, cfg.Packs[name].Source, junction.PrefixNever)
	}
	ch.Remove = append(ch.Remove, delta.Packs.Removed...)
	return ch, inPlace, errors.Join(errs...)
}

// unprepare stops the sources prepare started, for a reload that is
// refused.
func (r *reload) unprepare() {
	for _, s := range r.started {
		if err := s.m.close(); err != nil {
			r.d.logger.Warn("stopping a source of a refused reload", junction.LogKeySource, s.m.name, "error", err)
		}
	}
	r.started = nil
}

// swapped records the sources ch put in and took out, once the hub has
// them: the replaced and removed ones are stopped by retire, once the
// calls routed to them have finished. A pack is not stopped (the closers
// it registered run at Close).
func (r *reload) swapped(ch junction.Changes) {
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range ch.Put {
		if old := d.sources[p.Name]; old != nil {
			r.retiring = append(r.retiring, old)
			r.restarted++
			d.logger.Info("source restarted; new calls go to the new one, calls in flight finish on the old one", junction.LogKeySource, p.Name)
		}
		d.sources[p.Name] = r.started[p.Name].m
	}
	for _, name := range ch.Remove {
		if old := d.sources[name]; old != nil && old.kind != KindPack {
			r.retiring = append(r.retiring, old)
		}
		delete(d.sources, name)
	}
}

// retire stops the sources the reload replaced or removed, in parallel,
// each once the calls already routed to it have finished (Hub.Drain), or
// after reloadDrainWait, or at once if the reload's context is done. Calls
// still running then fail.
func (r *reload) retire() error {
	if len(r.retiring) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, reloadDrainWait)
	defer cancel()
	errs := make([]error, len(r.retiring))
	var wg sync.WaitGroup
	for i, m := range r.retiring {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.d.Hub.Drain(ctx, m.src); err != nil {
				r.d.logger.Warn("calls still in flight on a replaced or removed source; stopping it anyway",
					junction.LogKeySource, m.name, "error", err)
			}
			if err := m.close(); err != nil {
				errs[i] = fmt.Errorf("stopping the old %s %q: %w", m.kind, m.name, err)
			}
		}()
	}
	wg.Wait()
	r.retiring = nil
	return errors.Join(errs...)
}

// upstreamNeedsRestart reports whether s, the new config of the running
// upstream name, needs a new process or connection (or there is no such
// upstream running).
func (d *Daemon) upstreamNeedsRestart(name string, s *config.Server) bool {
	d.mu.Lock()
	m := d.sources[name]
	d.mu.Unlock()
	if m == nil || m.up == nil {
		return true
	}
	uc, err := d.upstreamConfigFor(name, s)
	if err != nil {
		return true // starting it anew reports the error
	}
	return m.up.Config().NeedsRestart(uc)
}

// checkUpstreamUpdate checks s, the new config of the running upstream
// name that needs no restart, before the swap.
func (d *Daemon) checkUpstreamUpdate(name string, s *config.Server) error {
	uc, err := d.upstreamConfigFor(name, s)
	if err == nil {
		err = uc.Validate()
	}
	if err != nil {
		return fmt.Errorf("servers.%s: %w", name, err)
	}
	return nil
}

// updateUpstream applies s to the running upstream name in place
// (upstream.Server.Update: timeouts and filters change, the process and
// session are kept).
func (d *Daemon) updateUpstream(name string, s *config.Server) error {
	d.mu.Lock()
	m := d.sources[name]
	d.mu.Unlock()
	if m == nil || m.up == nil {
		return nil
	}
	uc, err := d.upstreamConfigFor(name, s)
	if err == nil {
		_, err = m.up.Update(uc)
	}
	if err != nil {
		return fmt.Errorf("servers.%s: %w", name, err)
	}
	return nil
}

// reloadConnectWait bounds how long a reload waits for a restarted
// upstream's first connection before swapping it in.
const reloadConnectWait = 10 * time.Second

// reloadDrainWait bounds how long a reload waits for the calls in flight
// on a replaced or removed source before stopping it.
const reloadDrainWait = 30 * time.Second

// withEffectivePacks returns cfg with Packs set to the packs the daemon
// serves for it (see packNames), for comparing two configs.
func withEffectivePacks(spec Spec, cfg *config.Config) *config.Config {
	c := *cfg
	packs := make(map[string]*config.Pack)
	for _, n := range packNames(spec, cfg) {
		if p := cfg.Packs[n]; p != nil {
			packs[n] = p
		} else {
			packs[n] = &config.Pack{}
		}
	}
	c.Packs = packs
	return &c
}

// withReverted returns cfg with the entries of the sources named in
// failed taken from old (or left out, where old has none): the config in
// force after a reload in which their change failed.
func withReverted(cfg, old *config.Config, failed map[string]bool) *config.Config {
	if len(failed) == 0 {
		return cfg
	}
	c := *cfg
	c.Servers, c.Plugins, c.Packs = maps.Clone(cfg.Servers), maps.Clone(cfg.Plugins), maps.Clone(cfg.Packs)
	for name := range failed {
		revert(c.Servers, old.Servers, name)
		revert(c.Plugins, old.Plugins, name)
		revert(c.Packs, old.Packs, name)
	}
	return &c
}

func revert[T any](now, old map[string]*T, name string) {
	if _, ok := now[name]; !ok {
		return
	}
	if o, ok := old[name]; ok {
		now[name] = o
	} else {
		delete(now, name)
	}
}
