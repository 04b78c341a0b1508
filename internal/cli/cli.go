// Package cli implements the junction command line. [Run] is the whole
// program minus process setup: cmd/junction only builds a signal-aware
// context and maps Run's error to an exit code with [ExitCode], so tests
// drive every command with buffers.
//
// # Commands
//
// Each command is a small function with its own flag.FlagSet, listed in
// [commands]. Flags accept one or two dashes (-name and --name), as the
// standard flag package does; that keeps Diode's single-dash flags
// (-mcp-preset) working beside the usual double-dash style.
//
// # Grammar
//
// The shared parts live here, so every command behaves the same
// (docs/cli.md): [newFlagSet] and [parseFlags] give -help (exit 0, on
// stdout) and a bad flag's two-line error; [outputFlags] is -o text|json;
// [deprecated] is the notice of an old flag name; RunEnv answers an
// unknown command with a suggestion; the completion scripts are made
// from [commands].
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/junction-mcp/junction/internal/editdist"
)

// Env is what a command may touch of the process: its standard streams and
// environment. Commands never use os.Stdout or os.Getenv directly.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
	// Environ lists the environment, for child processes.
	Environ func() []string
	// command is the name the command was run by ("files push", or its
	// old name "push"), for its help and errors.
	command string
}

// command is one subcommand. Names with a space ("tools list") are
// subcommands of a group. A hidden command is an old name kept working:
// help and completion leave it out.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
	hidden  bool
}

// commands lists every subcommand, in the order help shows them. It is
// the one table that dispatch, help, did-you-mean and the completion
// scripts read.
func commands() []command {
	return []command{
		{name: "serve", summary: "serve the hub over stdio or HTTP", run: runServe},
		{name: "tools list", summary: "list the tools of an MCP server or of the hub", run: runToolsList},
		{name: "tools call", summary: "call a tool of an MCP server or of the hub", run: runToolsCall},
		{name: "tools search", summary: "search the tools of a hub in plain words (discovery)", run: runToolsSearch},
		{name: "resources list", summary: "list the resources of an MCP server or of the hub", run: runResourcesList},
		{name: "resources read", summary: "read a resource of an MCP server or of the hub", run: runResourcesRead},
		{name: "prompts list", summary: "list the prompts of an MCP server or of the hub", run: runPromptsList},
		{name: "prompts get", summary: "render a prompt of an MCP server or of the hub", run: runPromptsGet},
		{name: "lock", summary: "pin the served tools (names, descriptions, schemas) in a lock file", run: runLock},
		{name: "selftest", summary: "compare the served tools with the lock file; exit 1 on drift", run: runSelftest},
		{name: "files serve", summary: "serve a directory with the diode files contract (PUT/GET/HEAD)", run: runFilesServe},
		{name: "files push", summary: "upload a file to a file listener", run: runPush},
		{name: "files pull", summary: "download a file from a file listener", run: runPull},
		{name: "files deploy-host", summary: "accept PUT /<uuid>.tar.gz deploys, unpack them safely, write <uuid>.log", run: runDeployHost},
		{name: "diode mcp", summary: "a drop-in for \"diode mcp\": the diode tools over stdio (also \"junction mcp\")", run: runMCP},
		{name: "diode files", summary: "a drop-in for \"diode files\": the same as \"junction files serve\"", run: runFilesServe},
		{name: "diode push", summary: "a drop-in for \"diode push\": the same as \"junction files push\"", run: runPush},
		{name: "diode pull", summary: "a drop-in for \"diode pull\": the same as \"junction files pull\"", run: runPull},
		{name: "toolbox mcp", summary: "serve one toolbox plugin (a program or a URL) as a stdio MCP server", run: runToolboxMCP},
		{name: "config check", summary: "validate a config file (junction, Claude Desktop, Cursor or VS Code form)", run: runConfigCheck},
		{name: "connect", summary: "move a host's MCP servers (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf) into junction and run junction there", run: runConnect},
		{name: "disconnect", summary: "give a host its own MCP servers back from the backup connect made", run: runDisconnect},
		{name: "registry search", summary: "search MCP registries (the official one, or -registry URL) for servers by name", run: runRegistrySearch},
		{name: "registry show", summary: "show a registry server's server.json: packages, remotes, what it needs", run: runRegistryShow},
		{name: "registry check", summary: "report servers added from a registry whose version is deprecated, deleted or has a newer one", run: runRegistryCheck},
		{name: "add", summary: "add a server from an MCP registry to junction's config, pinned to its version", run: runAdd},
		{name: "approve", summary: "take a server out of quarantine: pin its tools in the lock file, then serve it", run: runApprove},
		{name: "update", summary: "move a server added from a registry to a newer version, showing its tool changes", run: runUpdate},
		{name: "diagram compile", summary: "validate a diagram file and optionally save it (-push-as)", run: runDiagramCompile},
		{name: "diagram run", summary: "run a saved diagram or a diagram file, now or in the background", run: runDiagramRun},
		{name: "diagram results", summary: "print a diagram run's status and node outputs by session id", run: runDiagramResults},
		{name: "status", summary: "show a running hub's sources: states, tools, errors, drift", run: runStatus},
		{name: "sandbox check", summary: "show what this system supports for sandboxing stdio servers", run: runSandboxCheck},
		{name: "auth login", summary: "log in to an MCP server that wants OAuth and keep its token", run: runAuthLogin},
		{name: "auth status", summary: "list the stored OAuth tokens of upstream servers", run: runAuthStatus},
		{name: "auth logout", summary: "forget an upstream server's OAuth token", run: runAuthLogout},
		{name: "auth revoke", summary: "take back a user's own token for a server with per-user credentials, at a running hub", run: runAuthRevoke},
		{name: "packs", summary: "list the built-in packs", run: runPacks},
		{name: "completion", summary: "print a shell completion script: bash, zsh or fish", run: runCompletion},
		{name: "version", summary: "print the version", run: runVersion},
		// Old names, kept working.
		{name: "mcp", summary: "the old name of diode mcp, kept for host configs", run: runMCP, hidden: true},
		{name: "push", summary: "the old name of files push", run: runPush, hidden: true},
		{name: "pull", summary: "the old name of files pull", run: runPull, hidden: true},
		{name: "deploy-host", summary: "the old name of files deploy-host", run: runDeployHost, hidden: true},
	}
}

// Run runs the junction command line with args (without the program name).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, Environ: os.Environ}
	return RunEnv(ctx, env, args)
}

// RunEnv is [Run] with an explicit environment, for tests.
func RunEnv(ctx context.Context, env *Env, args []string) error {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if env.Environ == nil {
		env.Environ = func() []string { return nil }
	}
	if len(args) > 0 {
		switch args[0] {
		case "help":
			return runHelp(ctx, env, args[1:])
		case "-version", "--version":
			return runVersion(ctx, env, nil)
		}
	}
	cmds := commands()
	// Longest match first, so "tools list" wins over a group name.
	for _, n := range []int{2, 1} {
		if len(args) < n {
			continue
		}
		name := strings.Join(args[:n], " ")
		for _, c := range cmds {
			if c.name == name {
				e := *env
				e.command = name
				return c.run(ctx, &e, args[n:])
			}
		}
	}
	// No command matched: args name a group ("", "tools"), are a help
	// flag after one, or are a mistake.
	group, rest := "", args
	if len(args) > 0 && len(groupCommands(cmds, args[0])) > 0 {
		group, rest = args[0], args[1:]
	}
	if len(rest) > 0 && isHelpFlag(rest[0]) {
		usage(env.Stdout, cmds, group)
		return errHelpShown
	}
	if group == "" && len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		return &UsageError{
			msg:  fmt.Sprintf("%s before a command: give the command first, then its flags", rest[0]),
			hint: "Usage: junction <command> [flags] [args]; \"junction help\" lists the commands.\n",
		}
	}
	if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
		var help strings.Builder
		usage(&help, cmds, group)
		if group == "" {
			return &UsageError{msg: "no command given", hint: help.String()}
		}
		return &UsageError{msg: fmt.Sprintf("%q needs a subcommand", group), hint: help.String()}
	}
	return unknownCommand(cmds, group, rest[0])
}

// runHelp is "junction help [command]": the list of commands, a group's
// subcommands, or a command's own -help.
func runHelp(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		usage(env.Stdout, commands(), "")
		return errHelpShown
	}
	return RunEnv(ctx, env, append(append([]string(nil), args...), "-help"))
}

func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

// groupCommands returns the visible subcommands of group, or every
// visible command for group "".
func groupCommands(cmds []command, group string) []command {
	var out []command
	for _, c := range cmds {
		if !c.hidden && (group == "" || strings.HasPrefix(c.name, group+" ")) {
			out = append(out, c)
		}
	}
	return out
}

// unknownCommand is the usage error for word, which names no command (in
// group, when not ""): the error, the nearest names, and one usage line.
func unknownCommand(cmds []command, group, word string) error {
	full := strings.TrimSpace(group + " " + word)
	var names []string // the words that could stand where word does
	seen := map[string]bool{}
	for _, c := range cmds {
		n := c.name
		if group != "" {
			rest, ok := strings.CutPrefix(n, group+" ")
			if !ok {
				continue
			}
			n = rest
		}
		n, _, _ = strings.Cut(n, " ")
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var hint strings.Builder
	if near := nearest(word, names); len(near) > 0 {
		for i, n := range near {
			near[i] = strings.TrimSpace(group + " " + n)
		}
		fmt.Fprintf(&hint, "Did you mean %s?\n", quoteList(near))
	}
	if group == "" {
		hint.WriteString("Usage: junction <command> [flags] [args]; \"junction help\" lists the commands.\n")
	} else {
		var subs []string
		for _, c := range groupCommands(cmds, group) {
			subs = append(subs, strings.TrimPrefix(c.name, group+" "))
		}
		fmt.Fprintf(&hint, "Usage: junction %s %s [flags] [args]; \"junction help %s\" says more.\n", group, strings.Join(subs, "|"), group)
	}
	return &UsageError{msg: fmt.Sprintf("unknown command %q", full), hint: hint.String()}
}

// nearest returns the names within a small edit distance of word (or
// that start with it), closest first.
func nearest(word string, names []string) []string {
	best, limit := []string(nil), 2
	if len(word) > 6 {
		limit = 3
	}
	for _, n := range names {
		d := editdist.Distance(word, n)
		if len(word) >= 3 && strings.HasPrefix(n, word) {
			d = min(d, 1)
		}
		switch {
		case d > limit:
		case d < limit:
			best, limit = []string{n}, d
		default:
			best = append(best, n)
		}
	}
	return best
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// usage prints the help of group: every command for "", else the
// group's subcommands.
func usage(w io.Writer, cmds []command, group string) {
	if group != "" {
		fmt.Fprintf(w, "Usage: junction %s <command> [flags] [args]\n\nCommands:\n", group)
		printCommands(w, groupCommands(cmds, group))
		fmt.Fprintf(w, "\nRun \"junction help %s <command>\" or \"junction %s <command> -help\" for a command's flags.\n", group, group)
		return
	}
	fmt.Fprintln(w, `junction is an MCP hub: one server for the tools of built-in packs,
upstream MCP servers and toolbox plugins.

Usage:
  junction <command> [flags] [args]

Commands:`)
	printCommands(w, groupCommands(cmds, ""))
	fmt.Fprintln(w, `
Run "junction help <command>" or "junction <command> -help" for a command's flags.
Flags take one or two dashes: -http and --http are the same.
Commands that print a result take -o text|json.
Exit status: 0 ok, 1 failure, 2 usage error, 3 "junction status" found a failed source.`)
}

func printCommands(w io.Writer, cmds []command) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
}

// newFlagSet returns a flag set whose usage prints the command's synopsis
// and flags to env.Stderr (or Stdout for -help). A flag whose usage starts
// with "internal:" or "deprecated:" works but is left out of the help.
func newFlagSet(env *Env, name, synopsis, about string) *flag.FlagSet {
	if env.command != "" {
		name = env.command
	}
	fs := flag.NewFlagSet("junction "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: junction %s %s\n\n", name, synopsis)
		if about != "" {
			fmt.Fprintf(out, "%s\n\n", strings.TrimSpace(about))
		}
		var flags strings.Builder
		printFlags(&flags, fs)
		if flags.Len() > 0 {
			fmt.Fprintf(out, "Flags:\n%s", flags.String())
		}
	}
	return fs
}

// hiddenFlag reports whether help leaves f out.
func hiddenFlag(f *flag.Flag) bool {
	return strings.HasPrefix(f.Usage, "internal:") || strings.HasPrefix(f.Usage, "deprecated:")
}

// printFlags prints fs's visible flags in the standard package's format.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if hiddenFlag(f) {
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "  -%s", f.Name)
		kind, text := flag.UnquoteUsage(f)
		if kind != "" {
			b.WriteString(" " + kind)
		}
		if b.Len() <= 4 { // one-letter boolean: usage on the same line
			b.WriteString("\t")
		} else {
			b.WriteString("\n    \t")
		}
		b.WriteString(strings.ReplaceAll(text, "\n", "\n    \t"))
		switch f.DefValue {
		case "", "0", "false", "0s", "[]":
		default:
			if kind == "string" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w, b.String())
	})
}

// parseFlags parses args; -help prints usage to stdout and ends the command
// successfully, also after the arguments ("config check FILE -help"), but
// not after "--". A bad flag is a usage error that points at -help.
func parseFlags(env *Env, fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(env.Stderr)
	if err == nil && helpAfterArgs(args, fs.Args()) {
		err = flag.ErrHelp
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(env.Stdout)
		fs.Usage()
		return errHelpShown
	}
	if err != nil {
		return &UsageError{
			msg:  fmt.Sprintf("%s: %v", strings.TrimPrefix(fs.Name(), "junction "), err),
			hint: fmt.Sprintf("Run \"%s -help\" for its flags.\n", fs.Name()),
		}
	}
	return nil
}

// helpAfterArgs reports whether a help flag stands among rest, the
// arguments of args that flag parsing left, before any "--".
func helpAfterArgs(args, rest []string) bool {
	if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
		return false // rest is all after "--"
	}
	for _, a := range rest {
		if a == "--" {
			return false
		}
		if isHelpFlag(a) {
			return true
		}
	}
	return false
}

// deprecated tells the user, on stderr, that an old flag name still works
// and which one to use instead.
func deprecated(env *Env, command, old, use string) {
	fmt.Fprintf(env.Stderr, "junction: %s %s is deprecated: use %s\n", command, old, use)
}

// errHelpShown ends a command after -help; ExitCode maps it to 0.
var errHelpShown = errors.New("help shown")

// UsageError is a mistake on the command line; ExitCode maps it to 2 and
// prints it, then its hint (what to run or type instead).
type UsageError struct{ msg, hint string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// ExitError ends the program with Code after printing Err (if non-nil).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit statuses; docs/cli.md has the table, with exitFailed (status.go).
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitInterrupt = 130
)

// ExitCode prints err to stderr (when there is something to say) and
// returns the process exit code: 0 for nil or after -help, 2 for a usage
// error, an ExitError's own code, 130 for an interrupt, 1 for anything
// else.
func ExitCode(err error, stderr io.Writer) int {
	var ue *UsageError
	var ee *ExitError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "junction: %v\n%s", err, ue.hint)
		return exitUsage
	case errors.As(err, &ee):
		if ee.Err != nil {
			fmt.Fprintf(stderr, "junction: %v\n", ee.Err)
		}
		return ee.Code
	case errors.Is(err, context.Canceled):
		return exitInterrupt
	default:
		fmt.Fprintf(stderr, "junction: %v\n", err)
		return exitFailure
	}
}

// output is the -o/-output flag: how a command prints its result.
type output struct{ json bool }

func (o *output) String() string {
	if o != nil && o.json {
		return "json"
	}
	return "text"
}

func (o *output) Set(v string) error {
	switch v {
	case "json":
		o.json = true
	case "text":
		o.json = false
	default:
		return fmt.Errorf("%q: use text or json", v)
	}
	return nil
}

// jsonShorthand is -json where it has always meant JSON output.
type jsonShorthand struct{ o *output }

func (j jsonShorthand) IsBoolFlag() bool { return true }
func (j jsonShorthand) String() string   { return "false" }
func (j jsonShorthand) Set(v string) error {
	b, err := strconv.ParseBool(v)
	if err == nil {
		j.o.json = b
	}
	return err
}

// outputFlags registers -o and -output (two names of one flag) on fs and,
// with jsonShort, -json as the shorthand for -o json.
func outputFlags(fs *flag.FlagSet, jsonShort bool) *output {
	o := &output{}
	registerOutput(fs, o, jsonShort)
	return o
}

// registerOutput is [outputFlags] with o's value as the default.
func registerOutput(fs *flag.FlagSet, o *output, jsonShort bool) {
	fs.Var(o, "o", "output `format`: text, or json for scripts")
	fs.Var(o, "output", "output `format`: the same as -o")
	if jsonShort {
		fs.Var(jsonShorthand{o}, "json", "shorthand for -o json")
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}
