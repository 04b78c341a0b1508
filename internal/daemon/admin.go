package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// AdminHandler returns the admin listener's handler: the status page at
// /, /status, /metrics, and /healthz and /readyz, with the same auth,
// login and Host and Origin checks as [Daemon.Handler], and no MCP.
func (d *Daemon) AdminHandler(cfg HTTPConfig, listenHost string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status", d.statusHandler)
	mux.Handle("/metrics", d.Metrics.Handler())
	mux.HandleFunc("/", d.page(!cfg.InsecureNoAuth, adminIndex))
	return d.protect(mux, cfg, listenHost)
}

// CheckAdmin reports whether addr is a usable address for -admin: as for
// -http, a non-loopback address needs a token (insecureNoAuth is refused
// there).
func CheckAdmin(addr string, insecureNoAuth bool) error {
	return checkListen("-admin", addr, insecureNoAuth)
}

// ServeAdmin serves [Daemon.AdminHandler] on cfg.Addr until ctx is done
// (cfg's MCP settings are not used). It is the way to watch a hub that
// serves its host on stdio; it does not close the hub when it stops.
func (d *Daemon) ServeAdmin(ctx context.Context, cfg HTTPConfig) error {
	if err := CheckAdmin(cfg.Addr, cfg.InsecureNoAuth); err != nil {
		return err
	}
	if !cfg.InsecureNoAuth && len(cfg.Tokens) == 0 {
		return errors.New("-admin needs at least one token (-token, -token-file or JUNCTION_TOKEN), or -insecure-no-auth on a loopback address")
	}
	host, _, _ := net.SplitHostPort(cfg.Addr)
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("-admin: listen: %w", err)
	}
	srv := httpguard.NewServer(d.AdminHandler(cfg, host), cfg.Guard)
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	d.logger.Info("serving the admin listener", "addr", ln.Addr().String(), "page", "http://"+ln.Addr().String()+"/", "auth", !cfg.InsecureNoAuth)
	if err := httpguard.Serve(ctx, srv, ln, cfg.ShutdownTimeout); err != nil {
		return fmt.Errorf("-admin: %w", err)
	}
	return nil
}
