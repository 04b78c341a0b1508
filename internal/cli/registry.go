package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/registry"
)

const registryNote = `
Registries: -registry URL (repeatable, asked in order: a company's own
first), else $JUNCTION_REGISTRY (URLs separated by commas), else the
config file's registries: list (-config, else $JUNCTION_CONFIG, else
junction/junction.json in your config directory, where there is one),
else the official registry, ` + registry.DefaultURL + `. A registry is
any server of the registry API v0.1. docs/registry.md has the details.`

const registrySearchAbout = `
List the MCP servers of the registries whose names contain QUERY (every
server without one): the latest version of each, with its status, the
kinds of packages it ships (npm, pypi, oci, mcpb, ...) and its remotes
(hosted endpoints). Several registries' answers are merged; a name listed
by more than one is shown from the first. "junction registry show NAME"
shows one server; "junction add NAME" adds it to junction's config.
` + registryNote + `

Examples:
  junction registry search filesystem
  junction registry search github -o json
  junction registry search -registry https://mcp.corp.example -registry ` + registry.DefaultURL + ` slack`

const registryShowAbout = `
Show one server of the registries: its server.json (latest version, or
@VERSION), its status and where it came from, the packages and remotes it
offers and the environment variables, headers and arguments they take
(required ones, secrets), and the "junction add" line that adds it.
The first registry that has the server answers.
` + registryNote + `

Examples:
  junction registry show io.github.modelcontextprotocol/server-filesystem
  junction registry show io.github.modelcontextprotocol/server-filesystem@2026.1.14 -o json`

// registryFlags is -registry, shared by the registry commands, add and
// update.
type registryFlags struct{ urls stringList }

func (r *registryFlags) register(fs *flag.FlagSet) {
	fs.Var(&r.urls, "registry", "the registry API v0.1 base `URL` to ask (repeatable, in order; default $"+registry.EnvRegistry+", else the config's registries:, else "+registry.DefaultURL+")")
}

// set returns the registries to ask: the flags', else $JUNCTION_REGISTRY's,
// else the config's registries: (cfg may be nil), else the official one.
func (r *registryFlags) set(env *Env, cfg *config.Config) (registry.Set, error) {
	urls := []string(r.urls)
	if len(urls) == 0 {
		if v := strings.TrimSpace(env.Getenv(registry.EnvRegistry)); v != "" {
			urls = []string{v}
		}
	}
	if len(urls) == 0 && cfg != nil {
		urls = cfg.Registries
	}
	s, err := registry.NewSet(urls)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return s, nil
}

// registryConfig loads the config file the registry commands read
// registries: from: -config (flagValue), else $JUNCTION_CONFIG, else the
// default file; nil when the file does not exist. ${VAR}s take
// this environment's values, and a variable that is not set here reads as
// "x", so that only the file itself can make it fail.
func registryConfig(env *Env, flagValue string) (*config.Config, string, error) {
	path, err := addConfigPath(env, flagValue)
	if err != nil {
		if flagValue == "" && env.Getenv(EnvConfig) == "" {
			return nil, "", nil
		}
		return nil, "", err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, path, nil // not written yet: add makes it
	}
	cfg, err := config.Load(path, func(k string) string { return cmpOr(env.Getenv(k), "x") })
	if err != nil {
		return nil, path, fmt.Errorf("junction config %s: %w", path, err)
	}
	return cfg, path, nil
}

func runRegistrySearch(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "registry search", "[QUERY] [-registry URL]... [-config FILE] [-limit N] [-all-versions] [-o json]", registrySearchAbout)
	var rf registryFlags
	rf.register(fs)
	cfgPath := fs.String("config", "", "read registries: from this junction config `file`")
	limit := fs.Int("limit", 100, "show at most `n` servers (0: every match)")
	all := fs.Bool("all-versions", false, "list every version, not only the latest of each server")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErrorf("registry search takes one QUERY (a part of a server name), got %d: %s", len(pos), strings.Join(pos, " "))
	}
	query := ""
	if len(pos) == 1 {
		query = pos[0]
	}
	cfg, _, err := registryConfig(env, *cfgPath)
	if err != nil {
		return err
	}
	set, err := rf.set(env, cfg)
	if err != nil {
		return err
	}
	found, err := set.Search(ctx, query, registry.SearchOptions{Max: *limit, AllVersions: *all})
	if err != nil {
		if len(found) == 0 {
			return err
		}
		fmt.Fprintf(env.Stderr, "junction: warning: %v\n(showing what the other registries found)\n", err)
	}
	if format.json {
		if found == nil {
			found = []registry.Found{}
		}
		return writeJSON(env.Stdout, map[string]any{"registries": set.URLs(), "query": query, "servers": found})
	}
	if len(found) == 0 {
		what := "no servers"
		if query != "" {
			what = fmt.Sprintf("no server names contain %q", query)
		}
		fmt.Fprintf(env.Stdout, "%s in %s\n", what, strings.Join(set.URLs(), ", "))
		return nil
	}
	printFound(env.Stdout, found, len(set) > 1)
	if *limit > 0 && len(found) == *limit {
		fmt.Fprintf(env.Stdout, "(the first %d; -limit 0 lists every match, or narrow the QUERY)\n", *limit)
	}
	return nil
}

// printFound prints search results as a table.
func printFound(w io.Writer, found []registry.Found, withRegistry bool) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "NAME\tVERSION\tSTATUS\tPACKAGES\tREMOTES"
	if withRegistry {
		head += "\tREGISTRY"
	}
	fmt.Fprintln(tw, head)
	for _, f := range found {
		s := f.Server
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", clean(s.Name), clean(s.Version), clean(f.Status()), listOr(s.PackageTypes()), listOr(remoteTypes(&s)))
		if withRegistry {
			line += "\t" + f.Registry
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

func remoteTypes(s *registry.ServerJSON) []string {
	var out []string
	for _, r := range s.Remotes {
		if t := strings.ToLower(r.Type); !containsString(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listOr(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	for i := range s {
		s[i] = clean(s[i])
	}
	return strings.Join(s, ",")
}

// clean makes a registry's text safe for a terminal line: no control
// characters, no tabs or newlines to break the table.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}

func runRegistryShow(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "registry show", "NAME[@VERSION] [-registry URL]... [-config FILE] [-o json]", registryShowAbout)
	var rf registryFlags
	rf.register(fs)
	cfgPath := fs.String("config", "", "read registries: from this junction config `file`")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("registry show needs one NAME[@VERSION] (such as io.github.modelcontextprotocol/server-filesystem), got %d arguments", len(pos))
	}
	cfg, _, err := registryConfig(env, *cfgPath)
	if err != nil {
		return err
	}
	set, err := rf.set(env, cfg)
	if err != nil {
		return err
	}
	name, version := registry.SplitRef(pos[0])
	f, err := set.Get(ctx, name, version)
	if err != nil {
		return err
	}
	if format.json {
		return writeJSON(env.Stdout, f)
	}
	printServer(env.Stdout, f)
	return nil
}

// printServer prints one server.json for people.
func printServer(w io.Writer, f *registry.Found) {
	s := &f.Server
	fmt.Fprintf(w, "%s@%s\n", clean(s.Name), clean(s.Version))
	if s.Title != "" {
		fmt.Fprintf(w, "  title:       %s\n", clean(s.Title))
	}
	if s.Description != "" {
		fmt.Fprintf(w, "  description: %s\n", clean(s.Description))
	}
	status := f.Status()
	if m := f.StatusMessage(); m != "" {
		status += ": " + clean(m)
	}
	fmt.Fprintf(w, "  status:      %s\n", status)
	if o := f.Meta.Official; o != nil && !o.PublishedAt.IsZero() {
		fmt.Fprintf(w, "  published:   %s\n", o.PublishedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	fmt.Fprintf(w, "  registry:    %s\n", f.Registry)
	if s.Repository != nil && s.Repository.URL != "" {
		fmt.Fprintf(w, "  repository:  %s\n", clean(s.Repository.URL))
	}
	if s.WebsiteURL != "" {
		fmt.Fprintf(w, "  website:     %s\n", clean(s.WebsiteURL))
	}
	for i, p := range s.Packages {
		id := p.Identifier
		if p.Version != "" {
			id += " " + p.Version
		}
		fmt.Fprintf(w, "package %d: %s %s (transport %s)\n", i+1, clean(p.RegistryType), clean(id), clean(p.Transport.Type))
		for _, e := range p.EnvironmentVariables {
			fmt.Fprintf(w, "  env %s%s\n", clean(e.Name), inputNote(e.Input))
		}
		for _, a := range append(append([]registry.Argument(nil), p.RuntimeArguments...), p.PackageArguments...) {
			n := a.Name
			if a.Type == "positional" {
				n = a.ValueHint
				if n == "" {
					n = "(positional)"
				}
			}
			fmt.Fprintf(w, "  arg %s%s\n", clean(n), inputNote(a.Input))
		}
	}
	for i, r := range s.Remotes {
		fmt.Fprintf(w, "remote %d: %s %s\n", i+1, clean(r.Type), clean(r.URL))
		for _, h := range r.Headers {
			fmt.Fprintf(w, "  header %s%s\n", clean(h.Name), inputNote(h.Input))
		}
		for k, v := range r.Variables {
			fmt.Fprintf(w, "  url variable {%s}%s\n", clean(k), inputNote(v))
		}
	}
	switch f.Status() {
	case registry.StatusActive:
		fmt.Fprintf(w, "\nAdd it to junction: junction add %s@%s\n", clean(s.Name), clean(s.Version))
	default:
		fmt.Fprintf(w, "\n%s is %s; junction add refuses it.\n", clean(s.Version), f.Status())
	}
}

// inputNote describes an input: " (required, secret): the description".
func inputNote(in registry.Input) string {
	var tags []string
	if in.IsRequired {
		tags = append(tags, "required")
	}
	if in.IsSecret {
		tags = append(tags, "secret")
	}
	if in.Value != "" {
		tags = append(tags, "fixed: "+clean(in.Value))
	} else if in.Default != "" {
		tags = append(tags, "default "+clean(in.Default))
	}
	s := ""
	if len(tags) > 0 {
		s = " (" + strings.Join(tags, ", ") + ")"
	}
	if in.Description != "" {
		d := clean(in.Description)
		if len(d) > 120 {
			d = d[:120] + "..."
		}
		s += ": " + d
	}
	return s
}
