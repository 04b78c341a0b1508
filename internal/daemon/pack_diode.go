package daemon

import (
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/pack/diode"
)

// buildDiode builds the diode pack for `junction serve -pack diode`. Its
// network settings (DIODE_SOCKS5, DIODE_SOCKS5_ALL, JUNCTION_FILES_TOKEN)
// and deploy settings (DIODE_MCP_DEPLOY_TARGET, DIODE_MCP_DEPLOY_UUID)
// come from the environment, as with `junction mcp`.
func buildDiode(deps PackDeps) (*junction.Pack, error) {
	return diode.New(&diode.Options{
		Version:   buildinfo.Version(),
		BuildTime: buildinfo.BuildTime(),
		Getenv:    deps.Getenv,
	}), nil
}
