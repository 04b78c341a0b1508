package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/hostconfig"
)

const connectAbout = `
Move a host's MCP servers into junction's config file and make junction the
host's only server (-keep NAME leaves a server in the host, beside
junction). HOST is one of: claude-desktop, claude-code, cursor,
vscode, windsurf.

Without -apply nothing is written: connect prints the diff of both files
(junction's config and the host's) and what it would do. With -apply it
writes junction's config, then a backup of the host's file next to it
(FILE.junction-backup-<UTC time>), then the host's file. Every write is
atomic (a temporary file renamed over the old one) and keeps the file's
mode. Only the host's servers object changes; every other byte of its file
(settings, other projects in ~/.claude.json, comments) is kept. Restart the
host afterwards; "junction disconnect HOST -apply" puts the servers back.

The host's file, by scope (-scope; the first is the default):
  claude-desktop  user: macOS ~/Library/Application Support/Claude/claude_desktop_config.json,
                  Windows %APPDATA%\Claude\claude_desktop_config.json,
                  Linux $XDG_CONFIG_HOME/Claude/claude_desktop_config.json (~/.config)
  claude-code     user: ~/.claude.json (top-level mcpServers);
                  local: ~/.claude.json, projects[DIR].mcpServers; project: DIR/.mcp.json
  cursor          user: ~/.cursor/mcp.json; project: DIR/.cursor/mcp.json
  vscode          user: the Code/User/mcp.json of your config directory (as for Claude);
                  project: DIR/.vscode/mcp.json
  windsurf        user: ~/.codeium/windsurf/mcp_config.json
(~ is %USERPROFILE% on Windows; DIR is -dir, default the working directory.)

junction's config (-config) defaults to junction/junction.json in your
config directory (~/.config, ~/Library/Application Support or %APPDATA%),
or DIR/junction.json for the project and local scopes. Servers are added
to its "servers" object; one already there with the same definition is
left alone (a command server without "type" is the same as one with
"type": "stdio"), one with the same name and another definition is an
error that names the fields that differ.

A repository is not trusted: for the project and local scopes, a file
inside DIR (the host's file, junction.json, a backup) that is a symbolic
link, or lies under one, leading out of DIR is refused, naming the link
and where it points, and nothing is written.

Examples:
  junction connect claude-desktop                 # show what would change
  junction connect claude-desktop -apply
  junction connect claude-code -scope local -dir ~/src/app -apply
  junction connect cursor -config ~/junction.json -apply
  junction connect vscode -keep github -apply       # github stays in VS Code, beside junction`

const disconnectAbout = `
Restore the host's file from the newest backup "junction connect" made
(or -backup FILE), giving the host its own servers back. Without -apply it
prints the backup it would restore and the diff. If the host changed other
parts of its file since connect (Claude Code rewrites ~/.claude.json all
the time), only the servers object is restored and the rest is kept. If
the servers object itself changed since connect wrote it, restoring would
lose that change: disconnect refuses and shows it, unless -force.
junction's config file is not changed (the servers stay there too), and
the backup is kept.

Examples:
  junction disconnect claude-desktop              # show what would be restored
  junction disconnect claude-desktop -apply
  junction disconnect claude-code -scope local -dir ~/src/app -apply`

// hostGOOS is the operating system whose file layout connect uses; tests
// replace it.
var hostGOOS = runtime.GOOS

type hostFlags struct {
	scope, dir, file string
	apply            bool
}

func (h *hostFlags) register(fsAdd func(p *string, name, value, usage string)) {
	fsAdd(&h.scope, "scope", "", "which of the host's files (`scope`): user, project or local (Claude Code's ~/.claude.json per project); default user")
	fsAdd(&h.dir, "dir", "", "the project `directory` for -scope project and local (default: the working directory)")
	fsAdd(&h.file, "file", "", "the host's config `file`, instead of its documented location")
}

func (h *hostFlags) locate(env *Env, name string) (*hostconfig.Host, *hostconfig.Location, hostconfig.Env, error) {
	host, err := hostconfig.Lookup(name)
	if err != nil {
		return nil, nil, hostconfig.Env{}, usageErrorf("%v", err)
	}
	dir := h.dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(dir); err == nil && hostGOOS == runtime.GOOS {
		dir = abs
	}
	he := hostconfig.Env{GOOS: hostGOOS, Getenv: env.Getenv, Dir: dir}
	loc, err := host.Locate(he, h.scope, h.file)
	if err != nil {
		return nil, nil, he, usageErrorf("%v", err)
	}
	return host, loc, he, nil
}

func runConnect(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "connect", "HOST [-apply] [-config FILE] [-keep NAME]... [-scope user|project|local] [-dir DIR] [-file FILE] [-name NAME]", connectAbout)
	var hf hostFlags
	hf.register(fs.StringVar)
	fs.BoolVar(&hf.apply, "apply", false, "write the files (without it, only show what would change)")
	cfgPath := fs.String("config", "", "junction's config `file` to move the servers into (JSON, or YAML without a servers section)")
	name := fs.String("name", "junction", "the `name` of junction's entry in the host's servers")
	var keep stringList
	fs.Var(&keep, "keep", "a server `name` to leave in the host, beside junction (repeatable, or a comma-separated list)")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("connect needs one HOST (%s), got %d arguments", strings.Join(hostconfig.HostIDs(), ", "), len(pos))
	}
	_, loc, he, err := hf.locate(env, pos[0])
	if err != nil {
		return err
	}
	jcfg := *cfgPath
	if jcfg == "" {
		if jcfg, err = hostconfig.DefaultJunctionConfig(he, loc.Scope); err != nil {
			return err
		}
	} else if abs, err := filepath.Abs(jcfg); err == nil {
		jcfg = abs
	}
	exe, err := executable()
	if err != nil {
		return fmt.Errorf("cannot find the junction binary to write into %s: %w", loc.File, err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	plan, err := hostconfig.PlanConnect(loc, jcfg, hostconfig.Junction{
		Name: *name, Command: exe, Args: []string{"serve", "-config", jcfg}, Executable: exe,
		Keep: splitNames(keep),
	})
	if err != nil {
		return err
	}
	if format.json {
		report := connectReport{
			Host: loc.Host.ID, Scope: loc.Scope, File: loc.File, Config: jcfg, Diff: plan.Diff(),
			Moved: plan.Moved, Same: plan.Same, Kept: plan.Kept, Replaced: plan.Replaced,
			Command: []string{exe, "serve", "-config", jcfg},
		}
		if hf.apply {
			if report.Backup, err = plan.Apply(time.Now()); err != nil {
				return err
			}
			report.Applied = true
		}
		return writeJSON(env.Stdout, report)
	}
	out := env.Stdout
	fmt.Fprint(out, plan.Diff())
	fmt.Fprintln(out)
	fmt.Fprintf(out, "%s (%s): %s in %s\n", loc.Host.Name, loc.Scope, loc.Describe(), loc.File)
	if len(plan.Moved) > 0 {
		fmt.Fprintf(out, "  move to %s: %s\n", jcfg, strings.Join(plan.Moved, ", "))
	}
	if len(plan.Same) > 0 {
		fmt.Fprintf(out, "  already in %s: %s\n", jcfg, strings.Join(plan.Same, ", "))
	}
	if len(plan.Kept) > 0 {
		fmt.Fprintf(out, "  left in %s: %s\n", loc.Host.Name, strings.Join(plan.Kept, ", "))
	}
	if len(plan.Replaced) > 0 {
		fmt.Fprintf(out, "  junction entries replaced: %s\n", strings.Join(plan.Replaced, ", "))
	}
	fmt.Fprintf(out, "  %s then runs: %s serve -config %s\n", loc.Host.Name, exe, jcfg)
	if !hf.apply {
		fmt.Fprintf(out, "\nNothing was changed. Run again with -apply to write these files:\n  junction connect %s -apply%s\n", loc.Host.ID, flagsEcho(fs, "apply"))
		return nil
	}
	backup, err := plan.Apply(time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nWrote %s and %s.\nBackup of the host's file: %s\nRestart %s to use junction. To undo: junction disconnect %s -apply%s\n",
		jcfg, loc.File, backup, loc.Host.Name, loc.Host.ID, flagsEcho(fs, "apply", "config", "name"))
	return nil
}

func runDisconnect(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "disconnect", "HOST [-apply] [-force] [-backup FILE] [-scope user|project|local] [-dir DIR] [-file FILE]", disconnectAbout)
	var hf hostFlags
	hf.register(fs.StringVar)
	fs.BoolVar(&hf.apply, "apply", false, "restore the backup (without it, only show what would change)")
	force := fs.Bool("force", false, "restore even if the host's file changed since connect (that change is lost)")
	backup := fs.String("backup", "", "the backup `file` to restore (default: the newest)")
	format := outputFlags(fs, false)
	pos, err := parseInterspersed(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("disconnect needs one HOST (%s), got %d arguments", strings.Join(hostconfig.HostIDs(), ", "), len(pos))
	}
	_, loc, _, err := hf.locate(env, pos[0])
	if err != nil {
		return err
	}
	plan, err := hostconfig.PlanDisconnect(loc, *backup)
	if err != nil {
		return err
	}
	if format.json {
		return disconnectJSON(env, loc, plan, hf.apply, *force)
	}
	out := env.Stdout
	diff := plan.Diff()
	fmt.Fprint(out, diff)
	if diff != "" {
		fmt.Fprintln(out)
	}
	when := ""
	if plan.Meta.Time != "" {
		when = " (made by junction connect at " + plan.Meta.Time + ")"
	}
	fmt.Fprintf(out, "%s (%s): restore %s from %s%s\n", loc.Host.Name, loc.Scope, loc.File, plan.Backup, when)
	if diff == "" {
		fmt.Fprintf(out, "%s is already the same as the backup: nothing to restore.\n", loc.File)
		return nil
	}
	if plan.ServersOnly {
		fmt.Fprintf(out, "%s changed elsewhere since connect; those changes are kept and only %s is restored.\n", loc.File, loc.Describe())
	}
	if plan.Changed && !*force {
		return changedSinceConnect(loc, plan)
	}
	if !hf.apply {
		fmt.Fprintf(out, "\nNothing was changed. Run again with -apply to restore it:\n  junction disconnect %s -apply%s\n", loc.Host.ID, flagsEcho(fs, "apply"))
		return nil
	}
	if err := plan.Apply(); err != nil {
		return err
	}
	msg := "\nRestored %s from %s.\nRestart %s to use its own servers again"
	if plan.Meta.JunctionFile != "" {
		msg += "; they stay in " + plan.Meta.JunctionFile + " too"
	}
	fmt.Fprintf(out, msg+".\n", loc.File, plan.Backup, loc.Host.Name)
	return nil
}

// changedSinceConnect stops a disconnect that would lose a change made to
// the host's file since connect.
func changedSinceConnect(loc *hostconfig.Location, plan *hostconfig.DisconnectPlan) error {
	return &ExitError{Code: 1, Err: fmt.Errorf("%s changed since junction connect wrote it, and restoring %s would lose that change (the lines of the diff marked -). Copy what you need from it first, or run again with -force to restore anyway", loc.File, plan.Backup)}
}

// connectReport is "connect -o json": what connect would change, or
// changed with -apply.
type connectReport struct {
	Host   string `json:"host"`
	Scope  string `json:"scope"`
	File   string `json:"file"`   // the host's file
	Config string `json:"config"` // junction's config file
	Diff   string `json:"diff"`
	// Moved into junction's config, Same there already, Kept in the host,
	// Replaced: the host's entries that ran junction already.
	Moved    []string `json:"moved"`
	Same     []string `json:"same"`
	Kept     []string `json:"kept"`
	Replaced []string `json:"replaced"`
	// Command is what the host runs after connect.
	Command []string `json:"command"`
	Applied bool     `json:"applied"`
	Backup  string   `json:"backup,omitempty"` // the host file's backup, with -apply
}

// disconnectJSON is "disconnect -o json": what disconnect would restore,
// or restored with -apply. A host file changed since connect stops it
// without -force, as in text.
func disconnectJSON(env *Env, loc *hostconfig.Location, plan *hostconfig.DisconnectPlan, apply, force bool) error {
	diff := plan.Diff()
	report := map[string]any{
		"host": loc.Host.ID, "scope": loc.Scope, "file": loc.File, "backup": plan.Backup, "diff": diff,
		"changed": plan.Changed, "servers_only": plan.ServersOnly, "applied": false,
	}
	var stop error
	switch {
	case diff == "":
	case plan.Changed && !force:
		stop = changedSinceConnect(loc, plan)
	case apply:
		if err := plan.Apply(); err != nil {
			return err
		}
		report["applied"] = true
	}
	if err := writeJSON(env.Stdout, report); err != nil {
		return err
	}
	return stop
}

// flagsEcho returns the flags that were set, but for skip, as they would
// be typed again: " -scope local -dir /src/app".
func flagsEcho(fs *flag.FlagSet, skip ...string) string {
	var b strings.Builder
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(skip, f.Name) {
			return
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			fmt.Fprintf(&b, " -%s", f.Name)
			return
		}
		v := f.Value.String()
		if v == "" || strings.ContainsAny(v, " \t'\"$`\\") {
			v = "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		}
		fmt.Fprintf(&b, " -%s %s", f.Name, v)
	})
	return b.String()
}

// splitNames flattens repeated and comma-separated names.
func splitNames(in []string) []string {
	var out []string
	for _, s := range in {
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
	}
	return out
}
