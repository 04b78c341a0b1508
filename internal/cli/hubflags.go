package cli

import (
	"context"
	"flag"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/commalist"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/daemon"
)

// EnvTools is the environment variable that adds tools to the selection, a
// comma-separated list (the generalisation of Diode's DIODE_MCP_TOOLS).
const EnvTools = "JUNCTION_TOOLS"

// hubFlags are the flags shared by every command that builds a hub from the
// command line: serve, lock, selftest and tools (without a target).
type hubFlags struct {
	packs          stringList
	noDefaultPacks bool
	presets        stringList
	tools          stringList
	toolsCSV       string
	deny           stringList
	dataDir        string
	logLevel       string
	logFormat      string
	configPath     string

	// ignoreLock builds without the lock file (lock, selftest).
	ignoreLock bool
	// startupBudget is serve's -startup-budget (see daemon.Spec).
	startupBudget time.Duration
	// audit is serve's audit trail (-audit over the config file's).
	audit config.Audit
	// quiet commands (the clients) keep their own log level rather than
	// the config file's, which is meant for serve.
	quiet bool

	// vet names a server of the config file that the operator commands
	// (tools list -server, approve) start even in quarantine, and that
	// must start: buildAll fails with its error when it does not.
	vet string
	// only limits the hub to the source vet names: the other servers and
	// plugins are not started, and the view serves that source alone
	// (tools list -server).
	only bool

	// set records the flags given on the command line, to let them win
	// over the config file.
	set map[string]bool
}

// EnvConfig names the config file when -config is not given.
const EnvConfig = "JUNCTION_CONFIG"

func (f *hubFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.packs, "pack", "serve the built-in `pack` (repeatable; see \"junction packs\"); the core pack is always served unless -no-default-packs")
	fs.BoolVar(&f.noDefaultPacks, "no-default-packs", false, "do not serve the default packs (core)")
	fs.Var(&f.presets, "preset", "serve the tools of the named `preset` (repeatable)")
	fs.Var(&f.tools, "tool", "serve the tool called `name` (repeatable)")
	fs.StringVar(&f.toolsCSV, "tools", "", "serve these tools: a comma-separated `list`")
	fs.Var(&f.deny, "deny", "never serve the tool called `name` (repeatable)")
	fs.StringVar(&f.dataDir, "data-dir", "", "`directory` for durable state (default: the user's state directory)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error (logs go to stderr)")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `format`: text or json")
	fs.StringVar(&f.configPath, "config", "", "read upstream servers, plugins, packs, presets, profiles and HTTP settings from `file` (YAML or JSON; Claude Desktop, Cursor and VS Code files work as they are; default $"+EnvConfig+")")
}

// noteSet records which flags fs was given, after parsing.
func (f *hubFlags) noteSet(fs *flag.FlagSet) {
	f.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
}

// loadConfig reads the config file named by -config or JUNCTION_CONFIG;
// nil without one.
func (f *hubFlags) loadConfig(env *Env) (*config.Config, string, error) {
	path := f.configPath
	if path == "" {
		path = env.Getenv(EnvConfig)
	}
	if path == "" {
		return nil, "", nil
	}
	cfg, err := config.Load(path, env.Getenv)
	if err != nil {
		return nil, path, err
	}
	skipSelf(cfg, path, env)
	return cfg, path, nil
}

// applyLogConfig lets the config file's log section set what the flags
// did not (daemon.MergeLog).
func (f *hubFlags) applyLogConfig(cfg *config.Config) {
	f.logLevel, f.logFormat = daemon.MergeLog(f.logLevel, f.logFormat, f.set, f.quiet, cfg)
}

// logger returns the slog logger the flags ask for, writing to env.Stderr.
func (f *hubFlags) logger(env *Env) (*slog.Logger, error) {
	logger, err := daemon.NewLogger(f.logLevel, f.logFormat, env.Stderr)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return logger, nil
}

// selections returns the selection from each origin, labelled for error
// messages, in the Diode order: presets, env, csv, repeated flags.
func (f *hubFlags) selections(env *Env) []labelledSelection {
	return []labelledSelection{
		{"-preset", junction.Selection{Presets: f.presets}},
		{EnvTools, junction.Selection{Tools: commalist.Split(env.Getenv(EnvTools))}},
		{"-tools", junction.Selection{Tools: commalist.Split(f.toolsCSV)}},
		{"-tool", junction.Selection{Tools: trimmed(f.tools)}},
		{"-deny", junction.Selection{Deny: trimmed(f.deny)}},
		{"-server", junction.Selection{Sources: f.onlySources()}},
	}
}

// onlySources is the -server selection: the one source, or none.
func (f *hubFlags) onlySources() []string {
	if !f.only || f.vet == "" {
		return nil
	}
	return []string{f.vet}
}

type labelledSelection struct {
	origin string
	sel    junction.Selection
}

func trimmed(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// filtersGiven reports whether any selection flag or the env var was set,
// even to nothing (-tools " , " selects nothing and is an error).
func (f *hubFlags) filtersGiven(env *Env) bool {
	return len(f.presets) > 0 || len(f.tools) > 0 || f.toolsCSV != "" || strings.TrimSpace(env.Getenv(EnvTools)) != ""
}

// build builds the hub the flags (and the config file) describe. Unknown
// packs, presets and tools are reported with the flag or variable that
// named them.
func (f *hubFlags) build(ctx context.Context, env *Env, logger *slog.Logger, cfg *config.Config, cfgPath string) (*daemon.Daemon, error) {
	var sel junction.Selection
	for _, ls := range f.selections(env) {
		sel = sel.Union(ls.sel)
	}
	if f.filtersGiven(env) && len(sel.Presets) == 0 && len(sel.Tools) == 0 {
		return nil, usageErrorf("%v (check -preset, -tools, -tool, %s)", junction.ErrEmptySelection, EnvTools)
	}
	for _, p := range f.packs {
		if !slices.Contains(daemon.PackNames(), p) {
			return nil, usageErrorf("-pack %q: unknown pack (known: %s)", p, strings.Join(daemon.PackNames(), ", "))
		}
	}
	// Build with everything first, to check each origin on its own and name
	// it in the error.
	d, err := daemon.Build(ctx, daemon.Spec{
		Packs: f.packs, NoDefaultPacks: f.noDefaultPacks, Config: cfg, ConfigPath: cfgPath,
		Logger: logger, Getenv: env.Getenv, DataDir: f.dataDir, IgnoreLock: f.ignoreLock,
		StartupBudget: f.startupBudget, Audit: f.audit, AuditStderr: env.Stderr,
	})
	if err != nil {
		return nil, err
	}
	for _, ls := range f.selections(env) {
		if ls.sel.IsZero() {
			continue
		}
		if err := d.CheckSelection(ls.sel); err != nil {
			d.Close()
			return nil, usageErrorf("%s: %v", ls.origin, err)
		}
	}
	if sel.IsZero() {
		return d, nil
	}
	view, err := d.Hub.NewLenientView("", sel)
	if err != nil {
		d.Close()
		return nil, usageErrorf("%v", err)
	}
	if err := d.SetView(view); err != nil { // in the place of the unfiltered view Build made
		d.Hub.RemoveView(view)
		d.Close()
		return nil, err
	}
	return d, nil
}

// buildAll is build for commands that need the whole tool list at once
// (lock, selftest, tools): it loads the config and waits (bounded) for
// upstreams and plugins to connect.
func (f *hubFlags) buildAll(ctx context.Context, env *Env) (*daemon.Daemon, error) {
	cfg, path, err := f.loadConfig(env)
	if err != nil {
		return nil, err
	}
	return f.buildFrom(ctx, env, cfg, path)
}

// buildFrom is buildAll with the config given (read from path).
func (f *hubFlags) buildFrom(ctx context.Context, env *Env, cfg *config.Config, path string) (*daemon.Daemon, error) {
	f.applyLogConfig(cfg)
	logger, err := f.logger(env)
	if err != nil {
		return nil, err
	}
	if f.vet != "" {
		if cfg, err = f.vetConfig(env, cfg, path); err != nil {
			return nil, err
		}
	}
	d, err := f.build(ctx, env, logger, cfg, path)
	if err != nil {
		return nil, err
	}
	d.WaitUpstreams(ctx, upstreamWait)
	if f.vet != "" {
		if err := vetStarted(d, f.vet, path); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// upstreamWait bounds how long lock, selftest and the in-process client
// wait for upstream servers to connect.
const upstreamWait = 30 * time.Second
