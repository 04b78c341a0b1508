package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/junction-mcp/junction/internal/daemon"
)

const mcpAbout = `
A drop-in for "diode mcp": serve the diode pack's tools over stdio as the
MCP server "diode" (title "Diode Network Client").

Tool selection is the union of -mcp-preset, DIODE_MCP_TOOLS, -mcp-tools and
every -mcp-tool; with none of them all six tools are served. An unknown
preset or tool name stops the command before it serves.

diode_deploy reads DIODE_MCP_DEPLOY_TARGET (diode://<host>:<port>) and the
optional DIODE_MCP_DEPLOY_UUID. The file tools dial ordinary hosts directly;
Diode hosts (0x..., *.diode, *.diode.link) go through a SOCKS5 proxy such
as a Diode client's socksd (-socks5 or DIODE_SOCKS5). The Diode network
itself is not attached, so diode_get_client_info and diode_query_address
answer "not connected to the Diode network".

Examples:
  junction mcp
  junction mcp -mcp-preset=minimal
  junction mcp -mcp-tool=diode_deploy -mcp-tool=diode_get_version
  DIODE_MCP_DEPLOY_TARGET=diode://127.0.0.1:8003 junction mcp -mcp-preset deploy`

func runMCP(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "mcp", "[flags]", mcpAbout)
	var (
		preset   = fs.String("mcp-preset", "", "MCP tool preset: minimal, chain, files, deploy, all (union with -mcp-tools, -mcp-tool, env DIODE_MCP_TOOLS; omit all filters to register every tool)")
		csv      = fs.String("mcp-tools", "", "Comma-separated MCP tool names to register (union with -mcp-preset, -mcp-tool, env DIODE_MCP_TOOLS)")
		tools    stringList
		nf       netFlags
		logLevel = fs.String("log-level", "info", "log `level` on stderr: debug, info, warn or error")
	)
	fs.Var(&tools, "mcp-tool", "MCP tool name to register (repeatable; union with preset and -mcp-tools)")
	nf.register(fs, env)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("mcp takes no arguments, got %q", fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageErrorf("-log-level: %v", err)
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))

	srv, err := daemon.NewDiodeServer(ctx, daemon.DiodeServer{
		Preset: *preset, CSV: *csv, Tools: tools,
		Net: nf.net, Getenv: env.Getenv, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	logger.Info("diode mcp ready", "tools", len(srv.View.ToolNames()))
	defer afterStartup(ctx, srv.Hub, true, logger)()
	err = srv.ServeStdio(ctx, env.Stdin, env.Stdout)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}

// netFlags are the network settings of the commands that reach file
// listeners: mcp, push and pull.
type netFlags struct {
	net daemon.DiodeNet
}

// register adds -socks5, -socks5-all and -files-token, whose defaults
// come from the environment.
func (n *netFlags) register(fs *flag.FlagSet, env *Env) {
	def := daemon.DiodeNetFromEnv(env.Getenv)
	fs.StringVar(&n.net.SOCKS5, "socks5", def.SOCKS5, "SOCKS5 proxy `host:port` for Diode hosts (0x..., *.diode, *.diode.link), e.g. a Diode client's socksd (env DIODE_SOCKS5)")
	fs.BoolVar(&n.net.AllViaSOCKS5, "socks5-all", def.AllViaSOCKS5, "send every host through -socks5, not only Diode hosts (env DIODE_SOCKS5_ALL)")
	fs.StringVar(&n.net.Token, "files-token", def.Token, "bearer `token` for file listeners that require one (env JUNCTION_FILES_TOKEN)")
}
