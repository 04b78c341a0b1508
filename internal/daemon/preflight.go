package daemon

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/pack/diagram"
	"github.com/junction-mcp/junction/internal/telemetry"
)

// Preflight reports what in cfg, read from file, would stop [Build] (and
// so "junction serve") that reading the file alone cannot know: packs
// this binary does not have, each pack's settings (checked by building
// the pack, with its state in a scratch directory that is removed after),
// a lock file that cannot be read, and DiPeO's environment variables.
// "junction config check" runs it, so that the two refuse the same files.
// Nothing is started: upstream servers and plugins are not run.
func Preflight(file string, cfg *config.Config, getenv func(string) string) config.Errors {
	if cfg == nil {
		return nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs config.Errors
	add := func(path, format string, args ...any) {
		errs = append(errs, &config.FieldError{File: file, Line: cfg.Line(path), Path: path, Msg: fmt.Sprintf(format, args...)})
	}

	known := PackNames()
	names := sortedNames(cfg.Packs)
	if len(names) > 0 {
		scratch, err := os.MkdirTemp("", "junction-check-")
		if err != nil {
			add("", "checking the packs: %v", err)
			return errs
		}
		defer os.RemoveAll(scratch)
		hub := junction.New(nil)
		defer hub.Close()
		for _, name := range names {
			path := cfg.FieldPath("pack", name)
			if !slices.Contains(known, name) {
				add(path, "unknown pack %q (built-in packs: %s)", name, strings.Join(known, ", "))
				continue
			}
			if err := checkPack(hub, name, cfg.Packs[name], scratch, getenv); err != nil {
				add(path, "%v", err)
			}
		}
	}
	if _, err := dipeoLogger(slog.New(slog.DiscardHandler), getenv, names); err != nil {
		add(cfg.FieldPath("pack", diagram.DiPeOName), "%v", err)
	}
	if p := cfg.Lock.Path; p != "" {
		if _, err := config.ReadLockFile(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			add("lock.path", "%v (write it again with \"junction lock\", or remove it)", err)
		}
	}
	if err := telemetry.CheckAuditFile(telemetry.AuditFile{Output: cfg.Audit.Output}); err != nil {
		add("audit.output", "%v", err)
	}
	// Each stdio server's sandbox as it would run: paths that do not
	// exist, a path that holds a key or junction's own stores, a level
	// this system cannot give.
	d := &Daemon{getenv: getenv}
	for _, name := range sortedNames(cfg.Servers) {
		s := cfg.Servers[name]
		sb := s.Sandbox.Over(cfg.Sandbox)
		if sb == nil || s.Disabled || s.Command == "" {
			continue
		}
		if err := d.sandboxFor(sb).Check(s.Command, s.Args, s.Cwd); err != nil {
			add(cfg.FieldPath("server", name)+".sandbox", "%v", err)
		}
	}
	// Each spawned plugin's, the same way.
	for _, name := range sortedNames(cfg.Plugins) {
		p := cfg.Plugins[name]
		sb := p.Sandbox.Over(cfg.Sandbox)
		if sb == nil || p.Disabled || p.Command == "" {
			continue
		}
		if err := d.sandboxFor(sb).Check(p.Command, p.Args, p.Cwd); err != nil {
			add(cfg.FieldPath("plugin", name)+".sandbox", "%v", err)
		}
	}
	return errs
}

// checkPack builds the pack name as Build would, in scratch, and closes it.
func checkPack(hub *junction.Hub, name string, p *config.Pack, scratch string, getenv func(string) string) error {
	var settings map[string]any
	src := config.Source{}
	if p != nil {
		settings, src = p.Settings, p.Source
	}
	if _, err := sourceOptions(src, junction.PrefixNever); err != nil {
		return err
	}
	var closers []io.Closer
	defer func() {
		for _, c := range slices.Backward(closers) {
			c.Close()
		}
	}()
	_, err := BuildPack(name, PackDeps{
		Hub: hub, Getenv: getenv, DataDir: scratch, Settings: settings,
		Logger:    slog.New(slog.DiscardHandler),
		AddCloser: func(c io.Closer) { closers = append(closers, c) },
	})
	return err
}
