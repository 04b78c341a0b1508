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
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
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
}

// command is one subcommand. Names with a space ("tools list") are
// subcommands of a group.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands lists every subcommand, in the order help shows them.
func commands() []command {
	return []command{
		{"serve", "serve the hub over stdio or HTTP", runServe},
		{"tools list", "list the tools of an MCP server or of the hub", runToolsList},
		{"tools call", "call a tool of an MCP server or of the hub", runToolsCall},
		{"resources list", "list the resources of an MCP server or of the hub", runResourcesList},
		{"resources read", "read a resource of an MCP server or of the hub", runResourcesRead},
		{"prompts list", "list the prompts of an MCP server or of the hub", runPromptsList},
		{"prompts get", "render a prompt of an MCP server or of the hub", runPromptsGet},
		{"lock", "pin the served tools (names, descriptions, schemas) in a lock file", runLock},
		{"selftest", "compare the served tools with the lock file; exit 1 on drift", runSelftest},
		{"mcp", "a drop-in for \"diode mcp\": the diode tools over stdio", runMCP},
		{"files serve", "serve a directory with the diode files contract (PUT/GET/HEAD)", runFilesServe},
		{"push", "upload a file to a file listener", runPush},
		{"pull", "download a file from a file listener", runPull},
		{"deploy-host", "accept PUT /<uuid>.tar.gz deploys, unpack them safely, write <uuid>.log", runDeployHost},
		{"toolbox mcp", "serve one toolbox plugin (a program or a URL) as a stdio MCP server", runToolboxMCP},
		{"config check", "validate a config file (junction, Claude Desktop, Cursor or VS Code form)", runConfigCheck},
		{"connect", "move a host's MCP servers (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf) into junction and run junction there", runConnect},
		{"disconnect", "give a host its own MCP servers back from the backup connect made", runDisconnect},
		{"diagram compile", "validate a diagram file and optionally save it (-push-as)", runDiagramCompile},
		{"diagram run", "run a saved diagram or a diagram file, now or in the background", runDiagramRun},
		{"diagram results", "print a diagram run's status and node outputs by session id", runDiagramResults},
		{"status", "show a running hub's sources: states, tools, errors, drift", runStatus},
		{"auth login", "log in to an MCP server that wants OAuth and keep its token", runAuthLogin},
		{"auth status", "list the stored OAuth tokens of upstream servers", runAuthStatus},
		{"auth logout", "forget an upstream server's OAuth token", runAuthLogout},
		{"packs", "list the built-in packs", runPacks},
		{"version", "print the version", runVersion},
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
	if len(args) == 0 {
		usage(env.Stderr)
		return usageErrorf("no command given")
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return RunEnv(ctx, env, append(args[1:], "-help"))
		}
		usage(env.Stdout)
		return nil
	case "-version", "--version":
		return runVersion(ctx, env, nil)
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
				return c.run(ctx, env, args[n:])
			}
		}
	}
	// A group name alone ("tools") lists its subcommands.
	var group []command
	for _, c := range cmds {
		if strings.HasPrefix(c.name, args[0]+" ") {
			group = append(group, c)
		}
	}
	if len(group) > 0 {
		fmt.Fprintf(env.Stderr, "junction %s: a subcommand is needed:\n", args[0])
		printCommands(env.Stderr, group)
		return usageErrorf("junction %s needs a subcommand", args[0])
	}
	usage(env.Stderr)
	return usageErrorf("unknown command %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `junction is an MCP hub: one server for the tools of built-in packs,
upstream MCP servers and toolbox plugins.

Usage:
  junction <command> [flags] [args]

Commands:`)
	printCommands(w, commands())
	fmt.Fprintln(w, `
Run "junction help <command>" or "junction <command> -help" for a command's flags.
Flags take one or two dashes: -http and --http are the same.`)
}

func printCommands(w io.Writer, cmds []command) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
}

// newFlagSet returns a flag set whose usage prints the command's synopsis
// and flags to env.Stderr (or Stdout for -help).
func newFlagSet(env *Env, name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("junction "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: junction %s %s\n\n", name, synopsis)
		if about != "" {
			fmt.Fprintf(out, "%s\n\n", strings.TrimSpace(about))
		}
		fmt.Fprintln(out, "Flags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; -help prints usage to stdout and ends the command
// successfully.
func parseFlags(env *Env, fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(env.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(env.Stdout)
		fs.Usage()
		return errHelpShown
	}
	if err != nil {
		fs.Usage()
		return usageErrorf("%v", err)
	}
	return nil
}

// errHelpShown ends a command after -help; ExitCode maps it to 0.
var errHelpShown = errors.New("help shown")

// UsageError is a mistake on the command line; ExitCode maps it to 2.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
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

// ExitCode prints err to stderr (when there is something to say) and
// returns the process exit code: 0 for nil, 2 for a usage error, an
// ExitError's own code, 130 for an interrupt, 1 for anything else.
func ExitCode(err error, stderr io.Writer) int {
	var ue *UsageError
	var ee *ExitError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "junction: %v\n", err)
		return 2
	case errors.As(err, &ee):
		if ee.Err != nil {
			fmt.Fprintf(stderr, "junction: %v\n", ee.Err)
		}
		return ee.Code
	case errors.Is(err, context.Canceled):
		return 130
	default:
		fmt.Fprintf(stderr, "junction: %v\n", err)
		return 1
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func sortedCopy(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}
