package daemon

import (
	"os"
	"path/filepath"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/pack/diagram"
)

// EnvDiagramAllowCommands enables the diagram pack's command nodes when
// set to 1 or true.
const EnvDiagramAllowCommands = "JUNCTION_DIAGRAM_ALLOW_COMMANDS"

// buildDiagramPack builds the diagram pack over deps.Hub, keeping its
// state in deps.DataDir (or [DefaultDataDir]), and registers it to be
// closed with the daemon.
func buildDiagramPack(deps PackDeps) (*junction.Pack, error) {
	dir := deps.DataDir
	if dir == "" {
		dir = DefaultDataDir(deps.Getenv)
	}
	allow := deps.Getenv(EnvDiagramAllowCommands)
	p, err := diagram.New(diagram.Options{
		Hub:           deps.Hub,
		DataDir:       dir,
		AllowCommands: allow == "1" || allow == "true",
		Logger:        deps.Logger,
	})
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
