package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/toolbox"
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
	opts := &toolbox.Options{Name: "plugin", Logger: logger, ReadyTimeout: *ready, UnixSocket: *unix}
	var src *toolbox.Source
	switch {
	case *rawURL != "" && fs.NArg() > 0:
		return usageErrorf("give either -url or a plugin command, not both")
	case *rawURL != "":
		opts.Protocol, opts.Token = *protocol, *token
		src, err = toolbox.NewURL(*rawURL, opts)
	case fs.NArg() > 0:
		src, err = toolbox.NewPlugin(toolbox.Command{Path: fs.Arg(0), Args: fs.Args()[1:], Env: env.Environ()}, opts)
	default:
		return usageErrorf("toolbox mcp needs a plugin command (after --) or -url")
	}
	if err != nil {
		return err
	}
	defer src.Close()

	ident, err := src.Identity(ctx)
	if err != nil {
		return fmt.Errorf("toolbox mcp: %w", err)
	}
	hub := junction.New(&junction.Options{
		Name:         ident.GetName(),
		Title:        ident.GetTitle(),
		Version:      ident.GetVersion(),
		Instructions: ident.GetInstructions(),
		Logger:       logger,
	})
	defer hub.Close()
	if err := hub.Add(ctx, "plugin", src, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		return fmt.Errorf("toolbox mcp: %w", err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		return fmt.Errorf("toolbox mcp: %w", err)
	}
	defer releaseStartupPages(ctx, hub, logger)()
	err = dataplane.New(view, &dataplane.Options{Logger: logger}).ServeStdio(ctx, env.Stdin, env.Stdout, nil)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("toolbox mcp: stdio: %w", err)
	}
	return nil
}
