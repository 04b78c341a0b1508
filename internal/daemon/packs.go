package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/pack/conformance"
	"github.com/junction-mcp/junction/internal/pack/core"
	"github.com/junction-mcp/junction/internal/pack/diode"
)

// PackDeps is what a pack constructor may use from the running process.
type PackDeps struct {
	// Hub is the hub the pack is being added to, for packs that call other
	// tools (diagrams).
	Hub *junction.Hub
	// Getenv reads the process environment (os.Getenv in production, a map
	// in tests).
	Getenv func(string) string
	// DataDir is where packs keep durable state.
	DataDir string
	// Logger is the daemon's logger, for packs that log.
	Logger *slog.Logger
	// AddCloser registers a pack's resources (background runs, open
	// files) to be closed with the daemon.
	AddCloser func(io.Closer)
	// Settings are the pack's section of the config file (packs.<name>),
	// nil without one. A pack validates its own settings.
	Settings map[string]any
	// Shared is the store replicas share, or nil: packs keep their state
	// there instead of in DataDir.
	Shared *Shared
}

// packInfo describes one built-in pack.
type packInfo struct {
	summary string
	// defaultOn packs are served unless --no-default-packs is given.
	defaultOn bool
	build     func(PackDeps) (*junction.Pack, error)
}

// packs lists the built-in packs. Adding a pack means adding a line here.
var packs = map[string]packInfo{
	core.Name: {
		summary:   "junction_version: the binary's version and build time",
		defaultOn: true,
		build:     func(PackDeps) (*junction.Pack, error) { return core.New(), nil },
	},
	conformance.Name: {
		summary: "fixtures for the MCP conformance suite: test_* tools, test:// resources, test_* prompts",
		build:   func(PackDeps) (*junction.Pack, error) { return conformance.New(), nil },
	},
	"diagram":  {summary: "run_diagram, run_backend, see_result, cancel_run, compile_diagram, search, fetch: workflows over the hub's tools", build: buildDiagramPack},
	"dipeo":    {summary: "the diagram pack in DiPeO mode: dipeo_run, DiPeO's search, fetch and dipeo://diagrams beside junction's diagram tools, diagrams in projects/mcp-diagrams and examples/simple_diagrams, DiPeO's MCP_* variables", build: buildDiPeOPack},
	diode.Name: {summary: "the six diode_* tools of `diode mcp`: version, identity, address lookup, file push/pull, deploy", build: buildDiode},
}

// PackNames returns the names of the built-in packs, sorted.
func PackNames() []string {
	names := make([]string, 0, len(packs))
	for n := range packs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// PackSummary returns the one-line description of a built-in pack.
func PackSummary(name string) string { return packs[name].summary }

// DefaultPacks returns the packs served when none are named.
func DefaultPacks() []string {
	var names []string
	for _, n := range PackNames() {
		if packs[n].defaultOn {
			names = append(names, n)
		}
	}
	return names
}

// BuildPack constructs the built-in pack called name.
func BuildPack(name string, deps PackDeps) (*junction.Pack, error) {
	info, ok := packs[name]
	if !ok {
		return nil, fmt.Errorf("unknown pack %q (known: %s)", name, strings.Join(PackNames(), ", "))
	}
	p, err := info.build(deps)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", name, err)
	}
	return p, nil
}
