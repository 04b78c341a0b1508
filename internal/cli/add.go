package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/junction-mcp/junction/internal/atomicfile"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/hostconfig"
	"github.com/junction-mcp/junction/internal/registry"
)

const addAbout = `
Add an MCP server from a registry to junction's config file, pinned to one
exact version: the latest unless NAME@VERSION says which. From the
server's server.json, junction add writes:
  npm package    "command": "npx", "args": ["-y", "PKG@VERSION", ...]
  PyPI package   "command": "uvx", "args": ["PKG==VERSION", ...]
  OCI image      "command": "docker", "args": ["run", "-i", "--rm", ..., "IMAGE:TAG"] (only with -oci)
  remote         "transport": "http" or "sse", "url": ..., "headers": ...
The first of the server's packages this machine can run is used (npx or
uvx on PATH; docker and -oci for images), then its remotes; -package
picks one kind. MCPB, NuGet and Cargo packages are not installed yet.

Environment variables (-env NAME=VALUE), headers (-header NAME=VALUE) and
arguments (-arg NAME=VALUE: a flag without its dashes, a positional
argument's name, or a {variable} of a URL or value) fill what the server
takes. A required one not given is written as a ${VAR} placeholder, which
junction reads from its own environment when it loads the config (it will
not load while the variable is unset); the placeholders are listed. A
secret is never written in clear: give it as a reference, such as
-env 'GITHUB_TOKEN=${GITHUB_TOKEN}'.

junction add shows the diff of the config file, then asks before writing
when it runs on a terminal; without a terminal it only shows what it would
do (a dry run), and -yes writes without asking. The file is replaced
atomically (a temporary file renamed over it), keeping its mode, comments
and layout. A name that is already a server in the config is refused
(-name picks another); so is a version the registry marks deprecated or
deleted, with the registry's reason.

The server is added in quarantine ("quarantine": true in its entry):
"junction serve" does not start it, and "junction status" lists it as
quarantined, until it is vetted and approved. "junction tools list
-server NAME" starts it here to show its tools; "junction approve NAME"
pins them in the lock file and takes the server out of quarantine.

The config file: -config, else $JUNCTION_CONFIG, else the file "junction
connect" uses (junction/junction.json in your config directory).
` + registryNote + `

Examples:
  junction add io.github.modelcontextprotocol/server-filesystem -arg path=/home/me/src
  junction add io.github.modelcontextprotocol/server-everything@2026.1.26 -yes
  junction add com.example/weather -header 'Authorization=Bearer ${WEATHER_TOKEN}'
  junction add io.github.example/tool -oci -package oci -config ./junction.json`

func runAdd(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "add", "NAME[@VERSION] [-config FILE] [-name NAME] [-env K=V]... [-header K=V]... [-arg K=V]... [-package npm|pypi|oci|remote] [-oci] [-yes] [-registry URL]... [-o json]", addAbout)
	var rf registryFlags
	rf.register(fs)
	cfgPath := fs.String("config", "", "junction's config `file` to add the server to (default $"+EnvConfig+", else junction/junction.json in your config directory)")
	local := fs.String("name", "", "the server's `name` in junction's config (default: the part of the registry name after the slash)")
	var envs, headers, argv stringList
	fs.Var(&envs, "env", "set an environment variable of the server: `NAME=VALUE` (repeatable); a secret must be a ${VAR} reference")
	fs.Var(&headers, "header", "set a header of a remote server: `NAME=VALUE` (repeatable); a secret must be a ${VAR} reference")
	fs.Var(&argv, "arg", "set an argument or a {variable}: `NAME=VALUE` (repeatable)")
	pkg := fs.String("package", "", "use this `kind`: npm, pypi, oci or remote (default: the first this machine can run)")
	oci := fs.Bool("oci", false, "allow an OCI image (run with docker run -i --rm)")
	yes := fs.Bool("yes", false, "write without asking")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("add needs one NAME[@VERSION] (such as io.github.modelcontextprotocol/server-filesystem; \"junction registry search\" finds them), got %d arguments", len(pos))
	}
	opts := registry.InstallOptions{Package: *pkg, AllowOCI: *oci, Args: map[string][]string{},
		LookPath: func(c string) bool { return onPath(c, env.Getenv("PATH"), env.Getenv("PATHEXT")) }}
	if opts.Env, err = keyValues("env", envs); err != nil {
		return err
	}
	if opts.Headers, err = keyValues("header", headers); err != nil {
		return err
	}
	for _, kv := range argv {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return usageErrorf("-arg %q: want NAME=VALUE", kv)
		}
		opts.Args[k] = append(opts.Args[k], v)
	}
	cfg, _, err := registryConfig(env, *cfgPath)
	if err != nil {
		return fmt.Errorf("%w\n(fix it, or choose another file with -config)", err)
	}
	set, err := rf.set(env, cfg)
	if err != nil {
		return err
	}

	name, version := registry.SplitRef(pos[0])
	found, err := set.Get(ctx, name, version)
	if err != nil {
		return err
	}
	s := &found.Server
	ref := s.Name + "@" + s.Version
	switch st := found.Status(); st {
	case registry.StatusActive:
	case registry.StatusDeprecated, registry.StatusDeleted:
		why := "the registry gives no reason"
		if m := found.StatusMessage(); m != "" {
			why = "the registry says: " + clean(m)
		}
		return fmt.Errorf("%s is %s in %s (%s); junction add does not add it. \"junction registry search %s -all-versions\" lists its other versions", ref, st, found.Registry, why, registry.LocalName(s.Name))
	default:
		return fmt.Errorf("%s has status %q in %s, which junction add does not know; it adds active servers only", ref, clean(st), found.Registry)
	}
	entry, err := registry.BuildEntry(s, opts)
	if err != nil {
		return err
	}
	entry.From.URL = found.Registry
	if *local == "" {
		*local = registry.LocalName(s.Name)
	}

	path, err := addConfigPath(env, *cfgPath)
	if err != nil {
		return err
	}
	plan, err := planAdd(path, *local, entry)
	if err != nil {
		return err
	}
	diff := hostconfig.Unified(path, path, plan.JunctionBefore, plan.JunctionAfter)

	again := addAgainLine(args, pos[0], ref)
	if format.json {
		report := addReport{Name: *local, Server: s.Name, Version: s.Version, Registry: found.Registry, Config: path, Entry: entry, Diff: diff,
			Quarantine: true, Approve: approveLine(*local, path)}
		if *yes {
			if err := writeAdd(plan); err != nil {
				return err
			}
			report.Written = true
		}
		return writeJSON(env.Stdout, report)
	}

	out := env.Stdout
	fmt.Fprint(out, diff)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%s from %s, as %q in %s\n", ref, found.Registry, *local, path)
	fmt.Fprintf(out, "  runs: %s\n", entry.Pinned)
	for _, sk := range entry.Skipped {
		fmt.Fprintf(out, "  not used: %s\n", sk)
	}
	for _, o := range entry.Optional {
		fmt.Fprintf(out, "  optional, not set: %s\n", o)
	}
	printPlaceholders(out, env, entry.Placeholders)
	fmt.Fprintf(out, "  in quarantine: junction serve does not start it until \"%s\"\n", approveLine(*local, path))

	if !confirm(env, *yes, fmt.Sprintf("Add %q to %s?", *local, path), again) {
		return nil
	}

	if err := writeAdd(plan); err != nil {
		return err
	}
	q := shellQuote(path)
	fmt.Fprintf(out, "\nWrote %s, with %q in quarantine: \"junction serve\" does not start it yet (\"junction status\" lists it as quarantined). Vet it, then approve it:\n", path, *local)
	fmt.Fprintf(out, "  junction tools list -server %s -config %s\n  %s\n", shellQuote(*local), q, approveLine(*local, path))
	fmt.Fprintf(out, "A running \"junction serve -config %s\" starts it on its own once approved; \"junction config check %s\" checks the file.\n", q, q)
	return nil
}

type addReport struct {
	Name     string          `json:"name"`
	Server   string          `json:"server"`
	Version  string          `json:"version"`
	Registry string          `json:"registry"`
	Config   string          `json:"config"`
	Entry    *registry.Entry `json:"entry"`
	Diff     string          `json:"diff"`
	Written  bool            `json:"written"`
	// Quarantine is always true: the entry is written in quarantine, and
	// Approve is the command that takes it out.
	Quarantine bool   `json:"quarantine"`
	Approve    string `json:"approve"`
}

// confirm says whether a command that shows a change writes it: yes
// (-yes), else the person's answer to question on a terminal. Without
// one it is a dry run: it says nothing was written, and again (the
// command) with -yes writes it.
func confirm(env *Env, yes bool, question, again string) bool {
	if yes {
		return true
	}
	out := env.Stdout
	if !isTerminal(env.Stdin) {
		fmt.Fprintf(out, "\nNothing was written (there is no terminal to ask on). To write it:\n  %s -yes\n", again)
		return false
	}
	fmt.Fprintf(out, "\n%s [y/N] ", question)
	line, _ := bufio.NewReader(env.Stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	fmt.Fprintln(out, "Nothing was written.")
	return false
}

// approveLine is the command that approves server name of the config
// file path.
func approveLine(name, path string) string {
	return "junction approve " + shellQuote(name) + " -config " + shellQuote(path)
}

// quarantined returns a server entry (a JSON object) with "quarantine":
// true as its first member, so that it is the first thing a reader of
// the config sees, and approve removes it with the comma after it.
func quarantined(raw json.RawMessage) json.RawMessage {
	b := bytes.TrimSpace(raw)
	if len(b) < 2 || b[0] != '{' {
		return raw
	}
	if bytes.Equal(bytes.TrimSpace(b[1:]), []byte("}")) {
		return json.RawMessage(`{"quarantine": true}`)
	}
	return json.RawMessage(append([]byte(`{"quarantine": true, `), b[1:]...))
}

// keyValues parses repeated NAME=VALUE flags.
func keyValues(flagName string, list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErrorf("-%s %q: want NAME=VALUE", flagName, kv)
		}
		m[k] = v
	}
	return m, nil
}

func printPlaceholders(out io.Writer, env *Env, ph []registry.Placeholder) {
	if len(ph) == 0 {
		return
	}
	fmt.Fprintf(out, "  placeholders, read from junction's environment when it loads the config:\n")
	unset := 0
	for _, p := range ph {
		tag := ""
		if p.Secret {
			tag = " (secret)"
		}
		state := ""
		if env.Getenv(p.Var) == "" {
			state = "  [not set here]"
			unset++
		}
		line := fmt.Sprintf("    ${%s}  %s%s", p.Var, p.For, tag)
		if p.Description != "" {
			line += ": " + p.Description
		}
		fmt.Fprintln(out, line+state)
	}
	if unset > 0 {
		fmt.Fprintf(out, "  junction will not load the config until these are set where it runs (or give values with -env, -header, -arg)\n")
	}
}

// addAgainLine is the command that writes what the dry run showed: the
// same arguments, the version pinned to the one shown.
func addAgainLine(args []string, ref, pinned string) string {
	parts := []string{"junction", "add"}
	done := false
	for _, a := range args {
		if a == ref && !done {
			a, done = pinned, true
		}
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\*?[]{}()<>|&;#~!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// addConfigPath is the config file add writes: -config, $JUNCTION_CONFIG,
// or where "junction connect" keeps the servers it moves.
func addConfigPath(env *Env, flagValue string) (string, error) {
	p := flagValue
	if p == "" {
		p = env.Getenv(EnvConfig)
	}
	if p == "" {
		var err error
		p, err = hostconfig.DefaultJunctionConfig(hostconfig.Env{GOOS: hostGOOS, Getenv: env.Getenv}, hostconfig.ScopeUser)
		if err != nil {
			return "", fmt.Errorf("cannot find junction's config file (%v); name one with -config", err)
		}
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return p, nil
}

// planAdd works out the config file with the server added, with the
// machinery of "junction connect" (hostconfig.PlanConnect): the entry
// stands in a host file of its own, in a temporary directory, and
// PlanConnect adds it to junction's config as it adds a host's servers
// (a JSON file edited in place, comments and layout kept; a YAML file
// without a servers section gets one appended), and checks that the
// result loads. Only the config side of the plan is used.
func planAdd(path, name string, e *registry.Entry) (*hostconfig.ConnectPlan, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("junction config %s: %w", path, err)
	default:
		cfg, err := config.Load(path, func(string) string { return "x" })
		if err != nil {
			return nil, fmt.Errorf("junction config %s does not load, so add will not change it: %v\n(fix it, or choose another file with -config)", path, err)
		}
		if _, ok := cfg.Servers[name]; ok {
			return nil, fmt.Errorf("junction config %s already has a server %q; junction add does not replace it. Choose another name with -name, or remove that server first", path, name)
		}
		if _, ok := cfg.Plugins[name]; ok {
			return nil, fmt.Errorf("junction config %s already has a plugin %q, and sources need names of their own; choose another name with -name", path, name)
		}
		if _, ok := cfg.Packs[name]; ok {
			return nil, fmt.Errorf("junction config %s already has a pack %q, and sources need names of their own; choose another name with -name", path, name)
		}
		lower := strings.ToLower(path)
		if (strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml")) && bytes.Contains(append([]byte("\n"), data...), []byte("\nservers:")) {
			return nil, fmt.Errorf("junction config %s is YAML with a servers section, which add does not edit; add this entry under servers yourself:\n  %s: %s", path, name, compactJSON(quarantined(e.Config())))
		}
	}
	dir, err := os.MkdirTemp("", "junction-add-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	hostFile := filepath.Join(dir, "server.json")
	doc, err := json.Marshal(map[string]map[string]json.RawMessage{"mcpServers": {name: quarantined(e.Config())}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(hostFile, doc, 0o600); err != nil {
		return nil, err
	}
	host := &hostconfig.Host{ID: "registry", Name: "the registry's entry", Key: "mcpServers", Scopes: []string{hostconfig.ScopeUser}}
	loc := &hostconfig.Location{Host: host, Scope: hostconfig.ScopeUser, File: hostFile}
	plan, err := hostconfig.PlanConnect(loc, path, hostconfig.Junction{Name: "junction", Command: "junction", Args: []string{"serve"}})
	if err != nil {
		return nil, err
	}
	if len(plan.Moved) != 1 {
		return nil, fmt.Errorf("junction config %s: the server %q was not added (%v)", path, name, plan.Same)
	}
	// A YAML file gets a servers section appended, under connect's
	// comment, which names the temporary file: say what really happened.
	plan.JunctionAfter = bytes.Replace(plan.JunctionAfter,
		[]byte("# moved from "+hostFile+" by junction connect "+host.ID+"\n"),
		[]byte("# added by junction add: "+e.Pinned+"\n"), 1)
	return plan, nil
}

func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

// writeAdd writes the planned config file atomically, if it is still as
// it was read.
func writeAdd(plan *hostconfig.ConnectPlan) error {
	path := plan.JunctionFile
	cur, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("junction config %s: %w", path, err)
	}
	if !bytes.Equal(cur, plan.JunctionBefore) || (cur == nil) != (plan.JunctionBefore == nil) {
		return fmt.Errorf("junction config %s changed while add was running; nothing was written; run again", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("junction config: %w", err)
	}
	if err := atomicfile.Write(path, plan.JunctionAfter, plan.JunctionMode); err != nil {
		return fmt.Errorf("junction config %s: %w (the file is unchanged)", path, err)
	}
	return nil
}
