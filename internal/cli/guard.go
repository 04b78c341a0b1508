package cli

import (
	"flag"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// guardFlags are the bounds on slow clients that every HTTP listener of
// junction takes (package httpguard): serve -http, files serve and
// deploy-host.
type guardFlags struct {
	opts httpguard.ServerOptions
}

func (g *guardFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&g.opts.ReadHeaderTimeout, "read-header-timeout", httpguard.DefaultReadHeaderTimeout, "bound on receiving a request's line and headers")
	fs.DurationVar(&g.opts.ProgressTimeout, "progress-timeout", httpguard.DefaultProgressTimeout, "cut off a body or response that moves less than 64 KiB in this `duration` (a whole transfer, a long call or an event stream has no bound)")
	fs.DurationVar(&g.opts.IdleTimeout, "idle-timeout", httpguard.DefaultIdleTimeout, "close a keep-alive connection idle this long")
	fs.IntVar(&g.opts.MaxHeaderBytes, "max-header-bytes", httpguard.DefaultMaxHeaderBytes, "largest request line and headers in `bytes` (431 above it)")
}

// check refuses bounds that are not positive.
func (g *guardFlags) check() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"read-header-timeout", g.opts.ReadHeaderTimeout}, {"progress-timeout", g.opts.ProgressTimeout}, {"idle-timeout", g.opts.IdleTimeout}} {
		if d.v <= 0 {
			return usageErrorf("-%s: must be positive, got %v", d.name, d.v)
		}
	}
	if g.opts.MaxHeaderBytes <= 0 {
		return usageErrorf("-max-header-bytes: must be positive, got %d", g.opts.MaxHeaderBytes)
	}
	return nil
}
