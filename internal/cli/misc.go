package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/daemon"
)

func runVersion(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "version", "[-o json]", "Print junction's version and, when it was stamped, its build time.")
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version takes no arguments, got %q", fs.Args())
	}
	if out.json {
		v := map[string]string{"version": buildinfo.Version()}
		if t := buildinfo.BuildTime(); t != "" {
			v["built"] = t
		}
		return writeJSON(env.Stdout, v)
	}
	fmt.Fprintf(env.Stdout, "junction %s", buildinfo.Version())
	if t := buildinfo.BuildTime(); t != "" {
		fmt.Fprintf(env.Stdout, " (built %s)", t)
	}
	fmt.Fprintln(env.Stdout)
	return nil
}

func runPacks(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "packs", "[-o json]", "List the built-in packs that -pack can name.")
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("packs takes no arguments, got %q", fs.Args())
	}
	defaults := map[string]bool{}
	for _, n := range daemon.DefaultPacks() {
		defaults[n] = true
	}
	if out.json {
		type pack struct {
			Name    string `json:"name"`
			Default bool   `json:"default"`
			Summary string `json:"summary"`
		}
		packs := []pack{}
		for _, n := range daemon.PackNames() {
			packs = append(packs, pack{n, defaults[n], daemon.PackSummary(n)})
		}
		return writeJSON(env.Stdout, map[string]any{"packs": packs})
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	for _, n := range daemon.PackNames() {
		mark := ""
		if defaults[n] {
			mark = " (default)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\n", n, mark, daemon.PackSummary(n))
	}
	return tw.Flush()
}
