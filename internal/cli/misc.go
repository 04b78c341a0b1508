package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/daemon"
)

func runVersion(_ context.Context, env *Env, _ []string) error {
	fmt.Fprintf(env.Stdout, "junction %s", buildinfo.Version())
	if t := buildinfo.BuildTime(); t != "" {
		fmt.Fprintf(env.Stdout, " (built %s)", t)
	}
	fmt.Fprintln(env.Stdout)
	return nil
}

func runPacks(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "packs", "", "List the built-in packs that -pack can name.")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	defaults := map[string]bool{}
	for _, n := range daemon.DefaultPacks() {
		defaults[n] = true
	}
	for _, n := range daemon.PackNames() {
		mark := ""
		if defaults[n] {
			mark = " (default)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\n", n, mark, daemon.PackSummary(n))
	}
	return tw.Flush()
}
