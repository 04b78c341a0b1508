// Command junction is an MCP hub: it serves tools from built-in packs,
// upstream MCP servers and toolbox plugins to AI hosts over stdio and HTTP.
// Run "junction help" for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/junction-mcp/junction/internal/cli"
	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/sandbox"
)

func main() {
	// First: in a process junction started as a reaper (of a stdio
	// server's, a plugin's or a command's process group), this does the
	// reaper's work and exits; see internal/reaper.
	reaper.Enable()
	// Likewise in a process junction started as a stdio server's sandbox
	// (its init, or the stage that confines itself and runs the server);
	// see internal/sandbox.
	sandbox.Enable()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(cli.ExitCode(err, os.Stderr))
}
