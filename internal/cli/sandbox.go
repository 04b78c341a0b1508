package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/junction-mcp/junction/internal/sandbox"
)

const sandboxCheckAbout = `
Print what this system offers the sandbox of stdio servers, one line per
layer: user namespaces (with a fresh /proc and a loopback of their own),
Landlock and its ABI, seccomp, cgroup v2 delegation, and what running as
root changes.

A server's sandbox level (the config's sandbox: setting) is one of:
  off     the server runs as it always has (the default)
  on      every layer this system has; each missing one is a warning in
          the server's log and in "junction status"
  strict  every layer, or the server does not start
See docs/sandbox.md.

Exit status: 0 when level strict can run here (for any server: one
with a network list and a process limit too), 1 when a layer it needs is
missing (the last line names them), 2 for bad flags.`

// sandboxCheck finds what this system supports; tests replace it (the
// real one starts this program as a probe, which a test binary is not).
var sandboxCheck = sandbox.Check

// sandboxReport is "sandbox check -o json": the Support, and what level
// strict would lack.
type sandboxReport struct {
	sandbox.Support
	// Strict: a server at level strict can start here.
	Strict bool
	// Missing are the layers strict needs that this system lacks.
	Missing []string
}

func runSandboxCheck(_ context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "sandbox check", "[-o json]", sandboxCheckAbout)
	out := outputFlags(fs, true)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("sandbox check takes no arguments, got %q", fs.Args())
	}
	s := sandboxCheck()
	missing := s.Missing(sandbox.StrictPolicy)
	var result error
	if len(missing) > 0 {
		result = &ExitError{Code: exitFailure}
	}
	if out.json {
		if missing == nil {
			missing = []string{}
		}
		if err := writeJSON(env.Stdout, sandboxReport{Support: s, Strict: len(missing) == 0, Missing: missing}); err != nil {
			return err
		}
		return result
	}
	for _, l := range s.Lines() {
		fmt.Fprintln(env.Stdout, l)
	}
	switch {
	case s.OS != "linux":
		fmt.Fprintf(env.Stdout, "no sandbox on %s: servers at level on or strict refuse to start; give them sandbox: off to run them unconfined\n", s.OS)
	case len(missing) > 0:
		fmt.Fprintf(env.Stdout, "strict cannot run here: missing %s; at level on a server starts with a warning for each, at level strict it refuses to start\n", strings.Join(missing, ", "))
	default:
		fmt.Fprintln(env.Stdout, "every layer is here: level strict can run")
	}
	return result
}
