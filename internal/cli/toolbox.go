package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/junction-mcp/junction/internal/daemon"
)

const toolboxMCPAbout = `
Serve one toolbox plugin as a standalone MCP server on stdin/stdout: the
plugin's tools, resources and prompts, under their own names. junction
starts the plugin, waits for its handshake line, restarts it if it dies,
and stops it (SIGTERM, then SIGKILL) when the host closes stdin. The
plugin's stderr goes to junction's log on stderr.

A malformed frame from the host is answered with a JSON-RPC parse error
and the session goes on.

With -url, junction connects to a toolbox service that is already running
instead of spawning one.

Examples:
  junction toolbox mcp -- ./my-plugin --verbose
  junction toolbox mcp -- node --experimental-transform-types examples/toolbox-ts/src/main.ts
  junction toolbox mcp -url http://127.0.0.1:7400 -protocol grpc
  junction tools list -- junction toolbox mcp -- ./my-plugin`

func runToolboxMCP(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "toolbox mcp", "[flags] -- PLUGIN [ARGS...]", toolboxMCPAbout)
	var (
		rawURL    = fs.String("url", "", "connect to the toolbox service at `URL` instead of spawning a plugin")
		protocol  = fs.String("protocol", "connect", "with -url: the Connect-RPC `protocol`: connect, grpc or grpcweb")
		token     = fs.String("token", "", "with -url: send this bearer `token`")
		unix      = fs.Bool("unix-socket", false, "ask the plugin to listen on a unix socket instead of a loopback port")
		ready     = fs.Duration("ready-timeout", 15*time.Second, "how long to wait for the plugin to be ready")
		logLevel  = fs.String("log-level", "info", "log `level`: debug, info, warn or error (logs go to stderr)")
		logFormat = fs.String("log-format", "text", "log `format`: text or json")
	)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	hf := hubFlags{logLevel: *logLevel, logFormat: *logFormat}
	logger, err := hf.logger(env)
	if err != nil {
		return err
	}
	spec := daemon.PluginSpec{Logger: logger, ReadyTimeout: *ready, UnixSocket: *unix}
	switch {
	case *rawURL != "" && fs.NArg() > 0:
		return usageErrorf("give either -url or a plugin command, not both")
	case *rawURL != "":
		spec.URL, spec.Protocol, spec.Token = *rawURL, *protocol, *token
	case fs.NArg() > 0:
		spec.Command, spec.Env = fs.Args(), env.Environ()
	default:
		return usageErrorf("toolbox mcp needs a plugin command (after --) or -url")
	}
	plugin, err := daemon.OpenPlugin(spec)
	if err != nil {
		return err
	}
	defer plugin.Close()

	srv, err := plugin.Standalone(ctx)
	if err != nil {
		return fmt.Errorf("toolbox mcp: %w", err)
	}
	defer srv.Close()
	defer afterStartup(ctx, srv.Hub, true, logger)()
	err = srv.ServeStdio(ctx, env.Stdin, env.Stdout)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("toolbox mcp: stdio: %w", err)
	}
	return nil
}
