package cli

import (
	"os"

	"github.com/junction-mcp/junction/internal/config"
)

// executable is the running binary, for the self-reference guard; tests
// replace it.
var executable = os.Executable

// skipSelf disables the entries of cfg that would start this junction
// again (config.Config.SkipSelf): each becomes a warning, which serve logs
// and "config check" prints. cfg may be nil.
func skipSelf(cfg *config.Config, path string, env *Env) {
	if cfg == nil {
		return
	}
	exe, _ := executable()
	cfg.SkipSelf(config.Self{Executable: exe, ConfigPath: path, Getenv: env.Getenv})
}
