package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/daemon"
)

const configCheckAbout = `
Check a config file: junction's own YAML/JSON form, or the mcpServers file
of Claude Desktop, Claude Code or Cursor, or VS Code's .vscode/mcp.json.
${VAR} references are resolved from the environment, as "junction serve"
would. On success it prints a summary (servers by transport, packs,
plugins, presets, profiles) and any warnings; otherwise every problem, each
as file:line: path: message, and exits 1. Secrets (env values, headers,
tokens, arguments) are never printed.

Examples:
  junction config check junction.yaml
  junction config check ~/.config/Claude/claude_desktop_config.json
  junction config check -o json .vscode/mcp.json | jq .errors`

func runConfigCheck(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "config check", "[-o json] FILE", configCheckAbout)
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("config check needs exactly one FILE, got %d arguments", fs.NArg())
	}
	path := fs.Arg(0)
	c, err := config.Load(path, env.Getenv)
	var problems config.Errors
	if err != nil && !errors.As(err, &problems) {
		// Not a problem inside the file (it could not be read).
		return &ExitError{Code: 1, Err: err}
	}
	if c != nil {
		skipSelf(c, path, env)
		problems = append(problems, daemon.Preflight(path, c, env.Getenv)...)
		problems = append(problems, checkTokenFile(path, c)...)
		if len(problems) > 0 {
			c = nil
		}
	}
	report := newCheckReport(path, c, problems)
	if out.json {
		if err := writeJSON(env.Stdout, report); err != nil {
			return err
		}
	} else {
		report.print(env.Stdout, env.Stderr)
	}
	if len(problems) > 0 {
		return &ExitError{Code: 1}
	}
	return nil
}

// checkTokenFile reports an http.token_file that serve could not read.
func checkTokenFile(file string, c *config.Config) config.Errors {
	h := c.HTTP
	if h.Listen == "" || h.TokenFile == "" {
		return nil
	}
	if _, err := readTokenFile(h.TokenFile); err != nil {
		const path = "http.token_file"
		return config.Errors{&config.FieldError{File: file, Line: c.Line(path), Path: path, Msg: strings.TrimPrefix(err.Error(), "-token-file: ")}}
	}
	return nil
}

// checkReport is the -json output of "junction config check".
type checkReport struct {
	File     string         `json:"file"`
	Valid    bool           `json:"valid"`
	Shape    string         `json:"shape,omitempty"`
	Servers  []checkServer  `json:"servers"`
	Packs    []string       `json:"packs"`
	Plugins  []checkServer  `json:"plugins"`
	Presets  []string       `json:"presets"`
	Profiles []string       `json:"profiles"`
	HTTP     string         `json:"http_listen,omitempty"`
	Warnings []checkProblem `json:"warnings"`
	Errors   []checkProblem `json:"errors"`
	Counts   map[string]int `json:"transports"`

	cfg *config.Config // nil when the file has errors
}

type checkServer struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	// Target is the command (without arguments) or the URL (without its
	// query), so that no secret is printed.
	Target   string `json:"target"`
	Args     int    `json:"args,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

type checkProblem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func newCheckReport(path string, c *config.Config, problems config.Errors) *checkReport {
	r := &checkReport{File: path, Valid: len(problems) == 0, Servers: []checkServer{}, Packs: []string{},
		Plugins: []checkServer{}, Presets: []string{}, Profiles: []string{}, Warnings: []checkProblem{},
		Errors: []checkProblem{}, Counts: map[string]int{}, cfg: c}
	for _, p := range problems {
		r.Errors = append(r.Errors, checkProblem{File: p.File, Line: p.Line, Path: p.Path, Message: p.Msg})
	}
	if c == nil {
		return r
	}
	r.Shape = c.Shape
	for _, name := range sortedMapKeys(c.Servers) {
		s := c.Servers[name]
		cs := checkServer{Name: name, Transport: s.Transport, Disabled: s.Disabled, Args: len(s.Args)}
		if s.Transport == config.TransportStdio {
			cs.Target = s.Command
		} else {
			cs.Target = redactURL(s.URL)
		}
		r.Servers = append(r.Servers, cs)
		if !s.Disabled {
			r.Counts[s.Transport]++
		}
	}
	for _, name := range sortedMapKeys(c.Plugins) {
		p := c.Plugins[name]
		cs := checkServer{Name: name, Transport: "process", Target: p.Command, Args: len(p.Args), Disabled: p.Disabled}
		if p.URL != "" {
			cs.Transport, cs.Target = "url", redactURL(p.URL)
		}
		r.Plugins = append(r.Plugins, cs)
	}
	r.Packs = append(r.Packs, sortedMapKeys(c.Packs)...)
	r.Presets = append(r.Presets, sortedMapKeys(c.Presets)...)
	r.Profiles = append(r.Profiles, sortedMapKeys(c.Profiles)...)
	r.HTTP = c.HTTP.Listen
	for _, w := range c.Warnings {
		r.Warnings = append(r.Warnings, checkProblem{Line: w.Line, Path: w.Path, Message: w.Msg})
	}
	return r
}

// redactURL drops user info, query and fragment, where tokens hide.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func (r *checkReport) print(stdout, stderr io.Writer) {
	if !r.Valid {
		fmt.Fprintf(stderr, "%s: %d problem%s:\n", r.File, len(r.Errors), plural(len(r.Errors)))
		for _, e := range r.Errors {
			p := config.FieldError{File: e.File, Line: e.Line, Path: e.Path, Msg: e.Message}
			fmt.Fprintf(stderr, "  %s\n", p.Error())
		}
		return
	}
	c := r.cfg
	fmt.Fprintf(stdout, "%s: ok, %s\n", r.File, shapeName(r.Shape))
	enabled := len(c.Enabled())
	var byTransport []string
	for _, t := range []string{config.TransportStdio, config.TransportHTTP, config.TransportSSE} {
		if n := r.Counts[t]; n > 0 {
			byTransport = append(byTransport, fmt.Sprintf("%s %d", t, n))
		}
	}
	line := fmt.Sprintf("servers:  %d", len(r.Servers))
	if enabled != len(r.Servers) {
		line += fmt.Sprintf(" (%d disabled)", len(r.Servers)-enabled)
	}
	if len(byTransport) > 0 {
		line += ": " + strings.Join(byTransport, ", ")
	}
	fmt.Fprintln(stdout, line)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, s := range r.Servers {
		note := ""
		if s.Disabled {
			note = "(disabled)"
		}
		target := s.Target
		if s.Args > 0 {
			target += fmt.Sprintf(" (+%d args)", s.Args)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Name, s.Transport, target, note)
	}
	tw.Flush()
	packs := "(the default packs)"
	if c.Packs != nil {
		packs = listOrNone(r.Packs)
	}
	fmt.Fprintf(stdout, "packs:    %s\n", packs)
	var plugins []string
	for _, p := range r.Plugins {
		plugins = append(plugins, p.Name)
	}
	fmt.Fprintf(stdout, "plugins:  %s\n", listOrNone(plugins))
	fmt.Fprintf(stdout, "presets:  %s\n", listOrNone(r.Presets))
	fmt.Fprintf(stdout, "profiles: %s\n", listOrNone(r.Profiles))
	if r.HTTP != "" {
		fmt.Fprintf(stdout, "http:     %s (%s)\n", r.HTTP, c.HTTP.Mode)
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(stdout, "warnings:\n")
		for _, w := range c.Warnings {
			fmt.Fprintf(stdout, "  %s\n", w.String())
		}
	}
}

func shapeName(s string) string {
	switch s {
	case config.ShapeMCPServers:
		return "mcpServers form (Claude Desktop, Claude Code, Cursor)"
	case config.ShapeVSCode:
		return "VS Code mcp.json form"
	case config.ShapeClaudeCode:
		return "Claude Code ~/.claude.json (user servers, and this directory's project servers)"
	}
	return "junction form"
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
