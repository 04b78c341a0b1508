package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/pack/diagram"
)

// EnvDiagramAllowCommands enables the diagram pack's command nodes when
// set to 1 or true (as the pack's allow_commands setting does).
const EnvDiagramAllowCommands = "JUNCTION_DIAGRAM_ALLOW_COMMANDS"

// DiagramOptions returns the diagram pack's options for a hub: its data
// directory (dataDir, or [DefaultDataDir]), the settings of its section
// of the config file (packs.diagram.settings; nil without one) and
// JUNCTION_DIAGRAM_ALLOW_COMMANDS. A bad setting is an error that names
// it.
func DiagramOptions(hub diagram.Hub, dataDir string, settings map[string]any, getenv func(string) string) (diagram.Options, error) {
	return diagramOptions(diagram.Name, hub, dataDir, settings, getenv)
}

// diagramOptions is DiagramOptions for the pack called name: diagram, or
// dipeo (DiPeO mode, which also reads DiPeO's environment).
func diagramOptions(name string, hub diagram.Hub, dataDir string, settings map[string]any, getenv func(string) string) (diagram.Options, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if dataDir == "" {
		dataDir = DefaultDataDir(getenv)
	}
	opts := diagram.Options{Hub: hub, DataDir: dataDir}
	if err := diagram.ApplySettings(&opts, "packs."+name+".settings", settings); err != nil {
		return diagram.Options{}, err
	}
	if name == diagram.DiPeOName {
		if err := dipeoOptions(&opts, settings, getenv); err != nil {
			return diagram.Options{}, err
		}
	}
	if allow := getenv(EnvDiagramAllowCommands); allow == "1" || allow == "true" {
		opts.AllowCommands = true
	}
	return opts, nil
}

// buildDiagramPack builds the diagram pack over deps.Hub, keeping its
// state in deps.DataDir (or [DefaultDataDir]), and registers it to be
// closed with the daemon.
func buildDiagramPack(deps PackDeps) (*junction.Pack, error) {
	return buildDiagram(deps, diagram.Name)
}

// buildDiagram builds the diagram pack called name (diagram or dipeo).
func buildDiagram(deps PackDeps, name string) (*junction.Pack, error) {
	opts, err := diagramOptions(name, deps.Hub, deps.DataDir, deps.Settings, deps.Getenv)
	if err != nil {
		return nil, err
	}
	opts.Logger = deps.Logger
	if deps.Shared != nil {
		opts.Store, opts.Owners = deps.Shared.DB.Runs(), deps.Shared.Replica
	}
	p, err := diagram.New(opts)
	if err != nil {
		return nil, err
	}
	if deps.AddCloser != nil {
		deps.AddCloser(p)
	}
	return p.Pack, nil
}

// DefaultDataDir is where packs keep state when no data directory is
// given: $XDG_STATE_HOME/junction, else ~/.local/state/junction, else the
// user cache directory's junction folder.
func DefaultDataDir(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "junction")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "junction")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "junction")
	}
	return filepath.Join(os.TempDir(), "junction")
}

// DiagramSpec is what the diagram commands (junction diagram compile, run
// and results) build their hub from.
type DiagramSpec struct {
	// Packs are the packs named with -pack, whose tools the diagrams'
	// tool nodes can call; diagram and dipeo among them are left out (the
	// diagram pack is always there, and dipeo is the same engine).
	Packs []string
	// NoDefaultPacks leaves out the [DefaultPacks].
	NoDefaultPacks bool
	// DataDir holds the diagram store; empty means [DefaultDataDir].
	DataDir string
	// Config is the config file, or nil. Its packs.diagram.settings
	// (limits, the http nodes' allowlist) apply as they do in serve;
	// without that section, a DiPeO setup's packs.dipeo.settings do, with
	// DiPeO's files root (its file paths are relative to its project, the
	// diagrams root).
	Config *config.Config
	Logger *slog.Logger
	// Getenv reads JUNCTION_DIAGRAM_ALLOW_COMMANDS and what the packs
	// read.
	Getenv func(string) string
}

// Diagrams is a hub with the diagram pack over a data directory: the
// same store "junction serve -pack diagram" uses, so a diagram compiled
// here can be run by a host, and a run started here read back by
// see_result.
type Diagrams struct {
	d *Daemon
	p *diagram.Pack
}

// DiagramRun is the record of a diagram run, as [Diagrams] returns it:
// without the owner, which only tells the processes sharing the store
// apart.
type DiagramRun = diagram.Run

// DiagramRunRequest asks [Diagrams] for one run.
type DiagramRunRequest = diagram.RunRequest

// The states of a [DiagramRun].
const (
	DiagramRunning   = diagram.StatusRunning
	DiagramCompleted = diagram.StatusCompleted
	DiagramFailed    = diagram.StatusFailed
	DiagramCancelled = diagram.StatusCancelled
)

// OpenDiagrams builds the hub spec asks for with the diagram pack on top.
// Close it when done; that also records a run still going as failed.
func OpenDiagrams(ctx context.Context, spec DiagramSpec) (*Diagrams, error) {
	var packs []string
	if !spec.NoDefaultPacks {
		packs = append(packs, DefaultPacks()...)
	}
	for _, p := range spec.Packs {
		if p != diagram.Name && !slices.Contains(packs, p) {
			packs = append(packs, p)
		}
	}
	// The diagram pack is added below; the dipeo pack is the same engine.
	packs = slices.DeleteFunc(packs, func(p string) bool { return p == diagram.Name || p == diagram.DiPeOName })
	if packs == nil {
		packs = []string{}
	}
	dir := spec.DataDir
	if dir == "" {
		dir = DefaultDataDir(spec.Getenv)
	}
	var settings map[string]any
	dipeo := false
	switch cfg := spec.Config; {
	case cfg != nil && cfg.Packs[diagram.Name] != nil:
		settings = cfg.Packs[diagram.Name].Settings
	case cfg != nil && cfg.Packs[diagram.DiPeOName] != nil:
		settings, dipeo = cfg.Packs[diagram.DiPeOName].Settings, true
	}
	d, err := Build(ctx, Spec{Packs: packs, Logger: spec.Logger, Getenv: spec.Getenv, DataDir: dir})
	if err != nil {
		return nil, err
	}
	opts, err := DiagramOptions(d.Hub, dir, settings, spec.Getenv)
	if err != nil {
		d.Close()
		return nil, err
	}
	if dipeo && opts.FilesRoot == "" {
		opts.FilesRoot = opts.DiagramsRoot
		if opts.FilesRoot == "" {
			opts.FilesRoot = "."
		}
	}
	opts.Logger = spec.Logger
	p, err := diagram.New(opts)
	if err != nil {
		d.Close()
		return nil, err
	}
	d.AddCloser(p)
	if err := d.Hub.Add(ctx, diagram.Name, p.Pack, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		d.Close()
		return nil, err
	}
	return &Diagrams{d: d, p: p}, nil
}

// Close closes the hub and the diagram pack.
func (s *Diagrams) Close() error { return s.d.Close() }

// Compile validates src and, if it is valid and pushAs is not empty,
// saves it under that name. A bad name is an error; a bad diagram is not:
// its problems are in the result, whose Errors and Warnings are never nil
// (they print as [] in JSON).
func (s *Diagrams) Compile(src []byte, pushAs string) (*diagram.Compiled, error) {
	c, err := s.p.Compile(src, pushAs)
	if err != nil {
		return nil, err
	}
	if c.Errors == nil {
		c.Errors = diagram.Problems{}
	}
	if c.Warnings == nil {
		c.Warnings = diagram.Problems{}
	}
	return c, nil
}

// Run runs a diagram and waits for it. A run that fails is still a
// result (DiagramFailed); the error is for runs that could not start.
func (s *Diagrams) Run(ctx context.Context, req DiagramRunRequest) (*DiagramRun, error) {
	r, err := s.p.Run(ctx, req)
	if err != nil {
		return nil, err
	}
	return publicRun(r), nil
}

// Start starts a run that goes on in the background, until it ends or
// Close, and returns its record at once.
func (s *Diagrams) Start(req DiagramRunRequest) (*DiagramRun, error) {
	r, err := s.p.Start(req)
	if err != nil {
		return nil, err
	}
	return publicRun(r), nil
}

// Wait waits for run id to end if this process runs it.
func (s *Diagrams) Wait(ctx context.Context, id string) error { return s.p.Wait(ctx, id) }

// Result returns the record of run id (exec_ and 32 hex digits), from
// the store. A run left running by a process that is gone is marked
// failed first.
func (s *Diagrams) Result(ctx context.Context, id string) (*DiagramRun, error) {
	r, err := s.p.Result(ctx, id)
	if err != nil {
		return nil, err
	}
	return publicRun(r), nil
}

// publicRun returns a copy of r without its owner.
func publicRun(r *diagram.Run) *diagram.Run {
	c := *r
	c.Owner = ""
	return &c
}

// NewDiagramRunID returns a fresh run id (exec_ and 32 hex digits), for a
// run handed to another process in [DiagramRunRequest].ID.
func NewDiagramRunID() string { return diagram.NewRunID() }

// IsLightDiagram reports whether src is a DiPeO light diagram (version:
// light).
func IsLightDiagram(src []byte) bool { return diagram.IsLight(src) }
