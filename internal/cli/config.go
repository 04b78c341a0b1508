package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/internal/redact"
)

const configCheckAbout = `
Check a config file: junction's own YAML/JSON form, or the mcpServers file
of Claude Desktop, Claude Code or Cursor, or VS Code's .vscode/mcp.json.
${VAR} references are resolved from the environment, as "junction serve"
would. On success it prints a summary (servers by transport, packs,
plugins, presets, profiles) and any warnings; otherwise every problem, each
as file:line: path: message, and exits 1. Secrets (env values, headers,
tokens, arguments) are never printed. The file is FILE, or -config FILE
as for the other commands, or $JUNCTION_CONFIG when neither is given.

A stdio server whose command is not on PATH (or, given as a path, does not
exist) is a warning, not an error: serve may run with another PATH, but
if it does not, it cannot start that server.

Examples:
  junction config check junction.yaml
  junction config check -config junction.yaml
  junction config check ~/.config/Claude/claude_desktop_config.json
  junction config check -o json .vscode/mcp.json | jq .errors`

func runConfigCheck(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "config check", "[-o json] FILE | -config FILE", configCheckAbout)
	out := outputFlags(fs, true)
	flagPath := fs.String("config", "", "the config `file` to check (the same as FILE)")
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	var path string
	switch {
	case len(pos) > 1:
		return usageErrorf("config check takes one FILE, got %d: %q", len(pos), pos)
	case len(pos) == 1 && *flagPath != "" && pos[0] != *flagPath:
		return usageErrorf("config check got two files, %s and -config %s; give one", pos[0], *flagPath)
	case len(pos) == 1:
		path = pos[0]
	case *flagPath != "":
		path = *flagPath
	case env.Getenv(EnvConfig) != "":
		path = env.Getenv(EnvConfig)
	default:
		return usageErrorf("config check needs a FILE (or -config FILE, or $%s)", EnvConfig)
	}
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
		} else {
			c.Warnings = append(c.Warnings, commandWarnings(c, env.Getenv)...)
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

// commandWarnings warns about each enabled stdio server whose command
// serve could not start: a bare name that is not on PATH, or a path that
// does not exist or is not executable. A warning, not an error: serve may
// run with another PATH (a host's, a service manager's).
func commandWarnings(c *config.Config, getenv func(string) string) []config.Warning {
	var out []config.Warning
	for _, name := range sortedMapKeys(c.Servers) {
		s := c.Servers[name]
		if s.Disabled || s.Transport != config.TransportStdio || s.Command == "" {
			continue
		}
		path := c.FieldPath("server", name) + ".command"
		warn := func(format string, args ...any) {
			out = append(out, config.Warning{Line: c.Line(path), Path: path, Msg: fmt.Sprintf(format, args...)})
		}
		if !strings.ContainsAny(s.Command, `/\`) {
			if !onPath(s.Command, getenv("PATH"), getenv("PATHEXT")) {
				warn("server %q: command %q is not on PATH, so junction serve cannot start it unless the PATH it runs with has it: install it, or give its full path", name, s.Command)
			}
			continue
		}
		file := s.Command
		if !filepath.IsAbs(file) && s.Cwd != "" {
			file = filepath.Join(s.Cwd, file)
		}
		fi, err := os.Stat(file)
		switch {
		case err != nil:
			warn("server %q: command %s does not exist, so junction serve cannot start it", name, file)
		case fi.IsDir() || (runtime.GOOS != "windows" && fi.Mode()&0o111 == 0):
			warn("server %q: command %s is not an executable file, so junction serve cannot start it", name, file)
		}
	}
	return out
}

// onPath reports whether the command name is an executable file in one
// of the directories of path (a PATH value); on Windows, with one of the
// extensions of pathext too.
func onPath(name, path, pathext string) bool {
	exts := []string{""}
	if runtime.GOOS == "windows" {
		if pathext == "" {
			pathext = ".COM;.EXE;.BAT;.CMD"
		}
		exts = append(exts, filepath.SplitList(strings.ToLower(pathext))...)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		for _, ext := range exts {
			fi, err := os.Stat(filepath.Join(dir, name+ext))
			if err == nil && !fi.IsDir() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0) {
				return true
			}
		}
	}
	return false
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
	// Target is the command (without arguments) or the URL with its
	// password and query values hidden (redact.URL), so that no secret is
	// printed.
	Target   string `json:"target"`
	Args     int    `json:"args,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
	// Quarantine: not served until "junction approve" (docs/registry.md).
	Quarantine bool `json:"quarantine,omitempty"`
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
		cs := checkServer{Name: name, Transport: s.Transport, Disabled: s.Disabled, Quarantine: s.Quarantine, Args: len(s.Args)}
		if s.Transport == config.TransportStdio {
			cs.Target = s.Command
		} else {
			cs.Target = redact.URL(s.URL)
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
			cs.Transport, cs.Target = "url", redact.URL(p.URL)
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
		} else if s.Quarantine {
			note = "(quarantined: \"junction approve " + shellQuote(s.Name) + "\" serves it)"
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
