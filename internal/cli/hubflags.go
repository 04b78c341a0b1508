package cli

import (
	"context"
	"flag"
	"log/slog"
	"strings"

	"github.com/junction-mcp/junction"
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
}

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
}

// logger returns the slog logger the flags ask for, writing to env.Stderr.
func (f *hubFlags) logger(env *Env) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, usageErrorf("-log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(f.logFormat) {
	case "text", "":
		return slog.New(slog.NewTextHandler(env.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(env.Stderr, opts)), nil
	}
	return nil, usageErrorf("-log-format: unknown format %q (use text or json)", f.logFormat)
}

// selections returns the selection from each origin, labelled for error
// messages, in the Diode order: presets, env, csv, repeated flags.
func (f *hubFlags) selections(env *Env) []labelledSelection {
	return []labelledSelection{
		{"-preset", junction.Selection{Presets: f.presets}},
		{EnvTools, junction.Selection{Tools: junction.SplitList(env.Getenv(EnvTools))}},
		{"-tools", junction.Selection{Tools: junction.SplitList(f.toolsCSV)}},
		{"-tool", junction.Selection{Tools: trimmed(f.tools)}},
		{"-deny", junction.Selection{Deny: trimmed(f.deny)}},
	}
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

// build builds the hub the flags describe. Unknown packs, presets and tools
// are reported with the flag or variable that named them.
func (f *hubFlags) build(ctx context.Context, env *Env, logger *slog.Logger) (*daemon.Daemon, error) {
	var packs []string
	if !f.noDefaultPacks {
		packs = append(packs, daemon.DefaultPacks()...)
	}
	packs = append(packs, f.packs...)
	if packs == nil {
		packs = []string{}
	}
	var sel junction.Selection
	for _, ls := range f.selections(env) {
		sel = sel.Union(ls.sel)
	}
	if f.filtersGiven(env) && len(sel.Presets) == 0 && len(sel.Tools) == 0 {
		return nil, usageErrorf("%v (check -preset, -tools, -tool, %s)", junction.ErrEmptySelection, EnvTools)
	}
	// Build with everything first, to check each origin on its own and name
	// it in the error.
	d, err := daemon.Build(ctx, daemon.Spec{Packs: packs, Logger: logger, Getenv: env.Getenv, DataDir: f.dataDir})
	if err != nil {
		return nil, err
	}
	for _, ls := range f.selections(env) {
		if ls.sel.IsZero() {
			continue
		}
		if err := d.Hub.CheckSelection(ls.sel); err != nil {
			d.Close()
			return nil, usageErrorf("%s: %v", ls.origin, err)
		}
	}
	if sel.IsZero() {
		return d, nil
	}
	view, err := d.Hub.NewView("", sel)
	if err != nil {
		d.Close()
		return nil, usageErrorf("%v", err)
	}
	d.View = view
	return d, nil
}
