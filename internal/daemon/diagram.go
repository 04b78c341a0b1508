package daemon

import (
	"os"
	"path/filepath"

	"github.com/junction-mcp/junction"
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
