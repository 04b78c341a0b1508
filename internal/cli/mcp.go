package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/pack/diode"
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

	names, err := diode.Select(diode.ToolFilter{Preset: *preset, Env: env.Getenv(diode.EnvTools), CSV: *csv, Tools: tools})
	if err != nil {
		return err
	}
	instructions := diode.Instructions
	if names != nil {
		instructions += diode.SubsetNote
	}
	hub := junction.New(&junction.Options{
		Name:         diode.ServerName,
		Title:        diode.ServerTitle,
		Version:      buildinfo.Version(),
		Instructions: instructions,
		Logger:       logger,
	})
	defer hub.Close()
	p := diode.New(&diode.Options{
		Version:   buildinfo.Version(),
		BuildTime: buildinfo.BuildTime(),
		Getenv:    env.Getenv,
		Dialer:    nf.dialer(),
		Token:     nf.token,
		Logger:    logger,
	})
	if err := hub.Add(ctx, diode.Name, p, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		return err
	}
	view, err := hub.NewView("", junction.Selection{Tools: names})
	if err != nil {
		return err
	}
	logger.Info("diode mcp ready", "tools", len(view.ToolNames()))
	defer releaseStartupPages(ctx, hub, logger)()
	err = dataplane.New(view, &dataplane.Options{Logger: logger}).ServeStdio(ctx, env.Stdin, env.Stdout, nil)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}

// netFlags are the network settings of the commands that reach file
// listeners: mcp, push and pull.
type netFlags struct {
	socks5 string
	all    bool
	token  string
}

func (n *netFlags) register(fs *flag.FlagSet, env *Env) {
	all := env.Getenv(diode.EnvSOCKS5All)
	fs.StringVar(&n.socks5, "socks5", env.Getenv(diode.EnvSOCKS5), "SOCKS5 proxy `host:port` for Diode hosts (0x..., *.diode, *.diode.link), e.g. a Diode client's socksd (env DIODE_SOCKS5)")
	fs.BoolVar(&n.all, "socks5-all", all == "1" || all == "true", "send every host through -socks5, not only Diode hosts (env DIODE_SOCKS5_ALL)")
	fs.StringVar(&n.token, "files-token", env.Getenv(diode.EnvFilesToken), "bearer `token` for file listeners that require one (env JUNCTION_FILES_TOKEN)")
}

func (n *netFlags) dialer() *diode.NetDialer {
	return &diode.NetDialer{SOCKS5: n.socks5, AllViaSOCKS5: n.all}
}
