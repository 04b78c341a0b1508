package upstream

import (
	"os/exec"

	"github.com/junction-mcp/junction/internal/sandbox"
)

// Sandbox confines a stdio server to what it declares (docs/sandbox.md):
// files, network, processes, resources and environment. The zero value
// and a nil *Sandbox run the server as junction's own user, unconfined.
//
// Its fields:
//   - Level is "off" (or empty), "on" (every layer the system has; a
//     warning for each it lacks) or "strict" (refuse to start without all
//     of them).
//   - ReadOnly and ReadWrite are more paths the server may read (and
//     execute), and write. Besides them it may read what its command
//     needs to run (the executable, its runtime's installation, the
//     system's libraries), write its runtime's package caches (~/.npm,
//     ~/.cache/uv), read the files and directories its arguments name and
//     its working directory, and write a private temporary directory.
//   - Deny are paths the server must never reach, on top of the keys and
//     credentials under the home directory that are always denied
//     (junction's own configuration and stores, say). A ReadOnly or
//     ReadWrite path that contains one is refused.
//   - Network are the host[:port] patterns the server may reach, through
//     an egress proxy junction runs for it; empty means no network.
//   - Env names variables of junction's environment the server gets.
//     Besides them and Config.Env it gets PATH, HOME, LANG and LC_ALL,
//     and nothing else.
//   - Memory (bytes, per process), CPU (time, per process), Procs and
//     Files bound the server; zero means the defaults.
//
// Check(command, args, dir) reports a sandbox that cannot be set up as
// written: an unknown level, a network pattern that does not parse, a
// read-only path that does not exist, a path that contains a denied one.
// It starts nothing.
//
// It is the same type as toolbox.Sandbox: toolbox plugins are sandboxed
// by the same code.
type Sandbox = sandbox.Spec

// sandboxed returns the command that starts the server in its sandbox,
// and the box to close once the server is gone. Each connection the
// egress proxy refuses is a sandbox event of the server.
func (t *commandTransport) sandboxed() (*exec.Cmd, *sandbox.Box, error) {
	return t.cfg.Sandbox.Command(t.cfg.Command, t.cfg.Args, t.cfg.Dir, t.cfg.Env, t.logger, t.sandboxNote)
}

// EnableSandbox lets this program start sandboxed servers: a program that
// embeds the upstream package and sets [Config.Sandbox] calls it first
// thing in main, as junction's own main does; in a process started as a
// sandbox's init or its exec stage it does that work and never returns.
func EnableSandbox() { sandbox.Enable() }
