package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/sandbox"
	"github.com/junction-mcp/junction/toolbox"
	"github.com/junction-mcp/junction/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kinds of source the daemon manages.
const (
	KindPack     = "pack"
	KindUpstream = "upstream"
	KindPlugin   = "plugin"
)

// managed is one source the daemon started, with what it needs to report
// on it and stop it.
type managed struct {
	name   string
	kind   string
	src    junction.Source
	closer io.Closer // nil for sources nothing needs to stop
	up     *upstream.Server
}

func (m *managed) close() error {
	if m.closer == nil {
		return nil
	}
	return m.closer.Close()
}

// sourceOptions translates a config source section into hub options.
func sourceOptions(s config.Source, defaultPrefix junction.PrefixMode) (*junction.SourceOptions, error) {
	o := &junction.SourceOptions{Prefix: defaultPrefix, Allow: s.Tools.Allow, Deny: s.Tools.Deny}
	if s.Prefix != "" {
		p, err := junction.ParsePrefixMode(s.Prefix)
		if err != nil {
			return nil, err
		}
		o.Prefix = p
	}
	d, err := junction.ParseDriftPolicy(s.Drift)
	if err != nil {
		return nil, err
	}
	o.Drift = d
	return o, nil
}

// upstreamConfig translates a config server into an upstream.Config.
// Timeouts live in the upstream package, which restarts them on progress;
// the tool filter lives in the hub, like every other source's.
func upstreamConfig(s *config.Server) (upstream.Config, error) {
	c := upstream.Config{
		Command:         s.Command,
		Args:            s.Args,
		UnsetEnv:        s.UnsetEnv,
		Dir:             s.Cwd,
		URL:             s.URL,
		Headers:         s.Headers,
		BearerToken:     s.BearerToken,
		CallTimeout:     s.Timeout,
		ToolTimeouts:    s.ToolTimeouts,
		ConnectTimeout:  s.ConnectTimeout,
		KeepAlive:       s.KeepAlive,
		StopTimeout:     s.StopTimeout,
		ProtocolVersion: s.ProtocolVersion,
		WithdrawAfter:   s.WithdrawAfter, // NoTimeout is negative: never
		PerHost:         s.Sessions == config.SessionsPerHost,
		MaxHostSessions: s.MaxHostSessions,
	}
	switch s.Transport {
	case config.TransportStdio, "":
		if s.Command != "" || s.URL == "" {
			c.Transport = upstream.TransportStdio
		}
	case "sse":
		c.Transport = upstream.TransportSSE
	default:
		c.Transport = upstream.TransportStreamableHTTP
	}
	env := map[string]string{}
	if s.EnvFile != "" {
		fromFile, err := config.ReadEnvFile(s.EnvFile)
		if err != nil {
			return c, err
		}
		for k, v := range fromFile {
			env[k] = v
		}
	}
	for k, v := range s.Env {
		env[k] = v
	}
	if len(env) > 0 {
		c.Env = env
	}
	return c, nil
}

// upstreamConfigFor is upstreamConfig plus the marker (config.EnvHub*)
// that tells a junction started as this server which hub started it, from
// which config file, as which entry, and how deeply hubs are nested, so
// that it does not start itself again (config.Config.SkipSelf).
func (d *Daemon) upstreamConfigFor(name string, s *config.Server) (upstream.Config, error) {
	c, err := upstreamConfig(s)
	if err == nil && c.Transport != upstream.TransportStdio {
		if a := d.oauthFor(name, s); a != nil {
			c.Auth = a
		}
		if s.Credentials == config.CredentialsPerUser {
			c.UserAuth = d.userAuth(name, s)
		}
	}
	if err != nil || c.Transport != upstream.TransportStdio {
		return c, err
	}
	depth, _ := strconv.Atoi(d.getenv(config.EnvHubDepth))
	env := map[string]string{
		config.EnvHubPID:    strconv.Itoa(os.Getpid()),
		config.EnvHubSource: name,
		config.EnvHubDepth:  strconv.Itoa(depth + 1),
	}
	if p := d.spec.ConfigPath; p != "" {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		env[config.EnvHubConfig] = p
	}
	for k, v := range c.Env {
		env[k] = v
	}
	c.Env = env
	d.mu.Lock()
	base := d.sandbox
	d.mu.Unlock()
	c.Sandbox = d.sandboxFor(s.Sandbox.Over(base))
	return c, nil
}

// sandboxFor translates a config sandbox into the upstream package's
// (which is the toolbox package's too), denying junction's own stores
// besides the keys the sandbox always denies. Nil stays nil.
func (d *Daemon) sandboxFor(sb *config.Sandbox) *upstream.Sandbox {
	if sb == nil {
		return nil
	}
	deny := []string{cmp.Or(d.dataDir, DefaultDataDir(d.getenv))}
	if dir, err := oauth.DefaultDir(d.getenv); err == nil {
		deny = append(deny, dir)
	}
	return &upstream.Sandbox{Level: sb.Level, ReadOnly: sb.ReadOnly, ReadWrite: sb.ReadWrite, Deny: deny,
		Network: sb.Network, Env: sb.Env, Memory: sb.Memory, CPU: sb.CPU, Procs: sb.Procs, Files: sb.Files}
}

// startUpstream creates (and starts connecting) the upstream server name.
func (d *Daemon) startUpstream(name string, s *config.Server) (*managed, *junction.SourceOptions, error) {
	opts, err := sourceOptions(s.Source, junction.PrefixAlways)
	if err != nil {
		return nil, nil, fmt.Errorf("servers.%s: %w", name, err)
	}
	uc, err := d.upstreamConfigFor(name, s)
	if err != nil {
		return nil, nil, fmt.Errorf("servers.%s: %w", name, err)
	}
	srv, err := upstream.New(name, uc, &upstream.Options{
		Logger:     d.logger,
		ClientInfo: &mcp.Implementation{Name: "junction", Version: buildinfo.Version()},
		OnEvent:    d.onUpstreamEvent,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("servers.%s: %w", name, err)
	}
	return &managed{name: name, kind: KindUpstream, src: srv, closer: srv, up: srv}, opts, nil
}

// startPlugin creates the toolbox plugin source name.
func (d *Daemon) startPlugin(name string, p *config.Plugin) (*managed, *junction.SourceOptions, error) {
	opts, err := sourceOptions(p.Source, junction.PrefixAlways)
	if err != nil {
		return nil, nil, fmt.Errorf("plugins.%s: %w", name, err)
	}
	topts := &toolbox.Options{Name: name, Logger: d.logger, Token: p.BearerToken}
	if len(p.Headers) > 0 {
		d.logger.Warn("plugin headers are not supported; use bearer_token", junction.LogKeySource, name)
	}
	var src *toolbox.Source
	if p.URL != "" {
		src, err = toolbox.NewURL(p.URL, topts)
	} else {
		d.mu.Lock()
		base := d.sandbox
		d.mu.Unlock()
		sb := d.sandboxFor(p.Sandbox.Over(base))
		lvl, lerr := sb.ParsedLevel()
		if lerr != nil {
			return nil, nil, fmt.Errorf("plugins.%s: %w", name, lerr)
		}
		var env []string
		if lvl != sandbox.Off {
			// Nothing is inherited: the sandbox passes what it allows,
			// and the plugin's env is set on top.
			env = []string{}
			for _, k := range slices.Sorted(maps.Keys(p.Env)) {
				env = append(env, k+"="+p.Env[k])
			}
		} else if len(p.Env) > 0 {
			env = os.Environ()
			for k, v := range p.Env {
				env = append(env, k+"="+v)
			}
		}
		src, err = toolbox.NewPlugin(toolbox.Command{Path: p.Command, Args: p.Args, Env: env, Dir: p.Cwd, Sandbox: sb}, topts)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("plugins.%s: %w", name, err)
	}
	return &managed{name: name, kind: KindPlugin, src: src, closer: src}, opts, nil
}

// startPack builds the built-in pack name.
func (d *Daemon) startPack(name string, p *config.Pack) (*managed, *junction.SourceOptions, error) {
	var settings map[string]any
	src := config.Source{}
	if p != nil {
		settings, src = p.Settings, p.Source
	}
	opts, err := sourceOptions(src, junction.PrefixNever)
	if err != nil {
		return nil, nil, fmt.Errorf("packs.%s: %w", name, err)
	}
	pack, err := BuildPack(name, PackDeps{Hub: d.Hub, Getenv: d.getenv, DataDir: d.dataDir, Settings: settings, Logger: d.logger, AddCloser: d.AddCloser, Shared: d.shared})
	if err != nil {
		return nil, nil, err
	}
	m := &managed{name: name, kind: KindPack, src: pack}
	if c, ok := any(pack).(io.Closer); ok {
		m.closer = c
	}
	return m, opts, nil
}

// addSources starts every source in cfg and adds it to the hub. Upstreams
// and plugins connect in the background: the hub serves what is ready.
func (d *Daemon) addSources(ctx context.Context, packNames []string, cfg *config.Config) error {
	type item struct {
		kind, name string
		start      func() (*managed, *junction.SourceOptions, error)
	}
	var items []item
	for _, n := range packNames {
		var pc *config.Pack
		if cfg != nil {
			pc = cfg.Packs[n]
		}
		items = append(items, item{KindPack, n, func() (*managed, *junction.SourceOptions, error) { return d.startPack(n, pc) }})
	}
	if cfg != nil {
		for _, n := range sortedNames(cfg.Servers) {
			s := cfg.Servers[n]
			if !s.Serves() {
				// Disabled, or quarantined until "junction approve"
				// (Status lists those).
				continue
			}
			items = append(items, item{KindUpstream, n, func() (*managed, *junction.SourceOptions, error) { return d.startUpstream(n, s) }})
		}
		for _, n := range sortedNames(cfg.Plugins) {
			p := cfg.Plugins[n]
			if p.Disabled {
				continue
			}
			items = append(items, item{KindPlugin, n, func() (*managed, *junction.SourceOptions, error) { return d.startPlugin(n, p) }})
		}
	}
	var ch junction.Changes
	started := map[string]*managed{}
	for _, it := range items {
		if _, dup := d.sources[it.name]; dup || started[it.name] != nil {
			err := fmt.Errorf("%s %q: a source of that name already exists", it.kind, it.name)
			return errors.Join(err, closeAll(started))
		}
		m, opts, err := it.start()
		if err != nil {
			return errors.Join(err, closeAll(started))
		}
		started[m.name] = m
		p := junction.Put{Name: m.name, Source: m.src, Options: opts}
		if m.kind == KindPlugin {
			p.CatalogWait = pluginAddWait
		}
		ch.Put = append(ch.Put, p)
	}
	// All in one step: the hub indexes the tools and builds its views once.
	err := d.Hub.Apply(ctx, ch)
	if errors.Is(err, junction.ErrChangesRefused) {
		return errors.Join(err, closeAll(started))
	}
	maps.Copy(d.sources, started)
	return err // nil, or a view that lags behind
}

// closeAll stops sources that were started but not put in the hub.
func closeAll(ms map[string]*managed) error {
	var errs []error
	for _, m := range ms {
		errs = append(errs, m.close())
	}
	return errors.Join(errs...)
}

// pluginAddWait bounds the first catalog read of a plugin at start: a
// plugin still starting answers at once with no tools (it tells the hub
// when it is ready, and its tools appear then); one that became ready
// just before and then stalls must not hold up serving either.
const pluginAddWait = 2 * time.Second

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// onUpstreamEvent logs upstream state changes.
func (d *Daemon) onUpstreamEvent(e upstream.Event) {
	if e.Kind != upstream.EventState {
		return
	}
	attrs := []any{junction.LogKeySource, e.Server, "state", e.State.String()}
	if e.Err != nil {
		attrs = append(attrs, "error", e.Err.Error())
	}
	d.logger.Info("upstream state", attrs...)
}

// WaitUpstreams waits, at most timeout, until every upstream and plugin
// has finished its first connection attempt. Serving never waits for this;
// commands that need the full tool list (lock, selftest, tools) do.
func (d *Daemon) WaitUpstreams(ctx context.Context, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, m := range d.sources {
		if m.up != nil {
			if err := m.up.WaitReady(ctx); err != nil && ctx.Err() == nil {
				d.logger.Warn("upstream not ready", junction.LogKeySource, m.name, "error", err)
			}
		}
	}
	d.Hub.Refresh(ctx)
}

// pendingPrefixes returns "<name>__" and "mcp__<name>__" (prefix: mcp) for
// every upstream or plugin that is not serving tools yet, so a selection
// naming their tools is accepted before they connect.
func (d *Daemon) pendingPrefixes() []string {
	var out []string
	served := map[string]bool{}
	for _, t := range d.Hub.Tools() {
		served[t.Source] = true
	}
	for _, m := range d.sources {
		if m.kind != KindPack && !served[m.name] {
			out = append(out, m.name+junction.NameSeparator, junction.MCPNamePrefix+m.name+junction.NameSeparator)
		}
	}
	return out
}

// CheckSelection is [junction.Hub.CheckSelection], except that a tool of
// an upstream or plugin that has not connected yet is not an error: it is
// checked when the source connects (and logged if it never appears). So
// is a selection that is empty only because such sources serve nothing
// yet (a preset of upstream tools, say).
func (d *Daemon) CheckSelection(sel junction.Selection) error {
	err := d.checkSelection(sel)
	if errors.Is(err, junction.ErrEmptySelection) && len(d.pendingPrefixes()) > 0 {
		d.logger.Info("a selection has no tool yet; it fills as sources connect", "presets", sel.Presets, "tools", sel.Tools)
		return nil
	}
	return err
}

func (d *Daemon) checkSelection(sel junction.Selection) error {
	err := d.Hub.CheckSelection(sel)
	var une *junction.UnknownNameError
	if !errors.As(err, &une) || une.Kind != "tool" {
		return err
	}
	pending := d.pendingPrefixes()
	var keep []string
	for _, t := range sel.Tools {
		if !slices.ContainsFunc(pending, func(p string) bool { return strings.HasPrefix(t, p) }) {
			keep = append(keep, t)
		} else {
			d.logger.Warn("selected tool not known yet; its source is still connecting", junction.LogKeyTool, t)
		}
	}
	var deny []string
	for _, t := range sel.Deny {
		if !slices.ContainsFunc(pending, func(p string) bool { return strings.HasPrefix(t, p) }) {
			deny = append(deny, t)
		}
	}
	sel.Tools, sel.Deny = keep, deny
	if len(sel.Tools) == 0 && len(sel.Presets) == 0 && len(sel.Deny) == 0 && len(sel.Sources) == 0 {
		return nil
	}
	return d.Hub.CheckSelection(sel)
}
