package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
)

// Reload brings the running hub in line with cfg, a config that has
// already parsed and validated:
//
//   - new sources are started and added;
//   - sources whose connection settings changed (command, URL, env, ...)
//     are started anew, swapped in once the new one's catalog is read,
//     and the old one is stopped after the swap;
//   - sources whose serving settings changed (prefix, filters, drift
//     policy) keep their connection and session; only the hub's view of
//     them changes;
//   - removed sources are taken out of the hub, then stopped;
//   - unchanged sources are not touched.
//
// Presets, profiles and the lock file are re-read. Changes to the http
// and log sections, and to a pack's settings, need a restart; they are
// logged. If a new source cannot be set up, Reload stops and returns the
// error: sources not yet touched keep running as they were.
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

	// Upstream servers.
	for _, name := range delta.Servers.Added {
		errs = append(errs, d.reloadAdd(ctx, name, func() (*managed, *junction.SourceOptions, error) {
			return d.startUpstream(name, cfg.Servers[name])
		}, cfg.Servers[name].Disabled))
	}
	for _, name := range delta.Servers.Changed {
		errs = append(errs, d.reloadReplace(ctx, name, func() (*managed, *junction.SourceOptions, error) {
			return d.startUpstream(name, cfg.Servers[name])
		}, cfg.Servers[name].Disabled))
	}
	for _, name := range delta.Servers.Updated {
		s := cfg.Servers[name]
		o := old.Servers[name]
		if s.Timeout != o.Timeout || !maps.Equal(s.ToolTimeouts, o.ToolTimeouts) || s.Disabled != o.Disabled ||
			s.ConnectTimeout != o.ConnectTimeout || s.KeepAlive != o.KeepAlive || s.StopTimeout != o.StopTimeout || s.ProtocolVersion != o.ProtocolVersion {
			// Timeouts live in the upstream client: restart it.
			errs = append(errs, d.reloadReplace(ctx, name, func() (*managed, *junction.SourceOptions, error) {
				return d.startUpstream(name, s)
			}, s.Disabled))
			continue
		}
		errs = append(errs, d.reloadOptions(name, s.Source, junction.PrefixAlways))
	}
	for _, name := range delta.Servers.Removed {
		errs = append(errs, d.reloadRemove(name))
	}

	// Toolbox plugins.
	for _, name := range delta.Plugins.Added {
		errs = append(errs, d.reloadAdd(ctx, name, func() (*managed, *junction.SourceOptions, error) {
			return d.startPlugin(name, cfg.Plugins[name])
		}, cfg.Plugins[name].Disabled))
	}
	for _, name := range delta.Plugins.Changed {
		errs = append(errs, d.reloadReplace(ctx, name, func() (*managed, *junction.SourceOptions, error) {
			return d.startPlugin(name, cfg.Plugins[name])
		}, cfg.Plugins[name].Disabled))
	}
	for _, name := range delta.Plugins.Updated {
		errs = append(errs, d.reloadOptions(name, cfg.Plugins[name].Source, junction.PrefixAlways))
	}
	for _, name := range delta.Plugins.Removed {
		errs = append(errs, d.reloadRemove(name))
	}

	// Packs: added and removed ones follow the file; a pack's settings
	// are read once, at start.
	for _, name := range delta.Packs.Added {
		errs = append(errs, d.reloadAdd(ctx, name, func() (*managed, *junction.SourceOptions, error) {
			return d.startPack(name, cfg.Packs[name]) // nil settings for a default pack
		}, false))
	}
	for _, name := range delta.Packs.Changed {
		d.logger.Warn("pack settings changed; restart junction to apply them", junction.LogKeySource, name)
	}
	for _, name := range delta.Packs.Updated {
		errs = append(errs, d.reloadOptions(name, cfg.Packs[name].Source, junction.PrefixNever))
	}
	for _, name := range delta.Packs.Removed {
		errs = append(errs, d.reloadRemove(name))
	}

	for _, section := range delta.Sections {
		switch section {
		case "http", "log", "startup_budget":
			d.logger.Warn("config section changed; restart junction to apply it", "section", section)
		}
	}
	errs = append(errs, d.Hub.SetPresets(cfg.Presets))
	if lock, err := loadLock(spec, cfg); err != nil {
		errs = append(errs, fmt.Errorf("lock: %w", err))
	} else {
		errs = append(errs, d.Hub.SetLock(lock))
	}
	errs = append(errs, d.buildProfiles(cfg))

	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	err := errors.Join(errs...)
	if err == nil {
		d.logger.Info("config reloaded",
			"added", len(delta.Servers.Added)+len(delta.Plugins.Added)+len(delta.Packs.Added),
			"restarted", len(delta.Servers.Changed)+len(delta.Plugins.Changed),
			"updated", len(delta.Servers.Updated)+len(delta.Plugins.Updated)+len(delta.Packs.Updated),
			"removed", len(delta.Servers.Removed)+len(delta.Plugins.Removed)+len(delta.Packs.Removed),
			"unchanged", len(delta.Servers.Unchanged)+len(delta.Plugins.Unchanged)+len(delta.Packs.Unchanged))
	}
	return err
}

func (d *Daemon) reloadAdd(ctx context.Context, name string, start func() (*managed, *junction.SourceOptions, error), disabled bool) error {
	if disabled {
		return nil
	}
	m, opts, err := start()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.sources[name] = m
	d.mu.Unlock()
	return d.Hub.Add(addContext(ctx, m), name, m.src, opts)
}

// reloadReplace starts the new source, swaps it into the hub, then stops
// the old one, so calls keep finding a source under the name.
func (d *Daemon) reloadReplace(ctx context.Context, name string, start func() (*managed, *junction.SourceOptions, error), disabled bool) error {
	if disabled {
		return d.reloadRemove(name)
	}
	m, opts, err := start()
	if err != nil {
		return err
	}
	if m.up != nil {
		// Give the new upstream a moment to connect, so the swap does not
		// leave its tools missing; a slow one is swapped in anyway and
		// serves when ready.
		wctx, cancel := context.WithTimeout(ctx, reloadConnectWait)
		m.up.WaitReady(wctx)
		cancel()
	}
	d.mu.Lock()
	old := d.sources[name]
	d.sources[name] = m
	d.mu.Unlock()
	err = d.Hub.Replace(ctx, name, m.src, opts)
	if old != nil {
		go old.close() // in-flight calls on the old source finish or fail on their own
	}
	return err
}

func (d *Daemon) reloadOptions(name string, src config.Source, defaultPrefix junction.PrefixMode) error {
	opts, err := sourceOptions(src, defaultPrefix)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !slices.Contains(d.Hub.SourceNames(), name) {
		return nil
	}
	return d.Hub.SetSourceOptions(name, *opts)
}

func (d *Daemon) reloadRemove(name string) error {
	err := d.Hub.Remove(name)
	d.mu.Lock()
	old := d.sources[name]
	delete(d.sources, name)
	d.mu.Unlock()
	if old != nil {
		if kind := old.kind; kind == KindPack {
			return err
		}
		return errors.Join(err, old.close())
	}
	return err
}

// reloadConnectWait bounds how long a reload waits for a restarted
// upstream's first connection before swapping it in.
const reloadConnectWait = 10 * time.Second

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
