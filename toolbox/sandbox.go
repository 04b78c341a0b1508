package toolbox

import (
	"os/exec"
	"strings"

	"github.com/junction-mcp/junction/internal/sandbox"
)

// Sandbox confines a plugin process to what it declares, with the same
// settings and the same code as a sandboxed stdio server (it is the type
// upstream.Sandbox is; docs/sandbox.md): files, network, processes,
// resources and environment. A nil *Sandbox, or one with level "off" (or
// empty), runs the plugin unconfined.
//
// A sandboxed plugin always gets the unix socket handshake, whatever
// Options.UnixSocket says: its network namespace has only its own
// loopback, so a TCP port it listens on is out of the hub's reach. The
// socket's private directory is read-write in the sandbox.
type Sandbox = sandbox.Spec

// sandboxed returns the command that starts the plugin in its sandbox,
// with env (the JUNCTION_TOOLBOX* variables) set on top of Command.Env,
// and the box to close once the plugin is gone. sockDir, the socket
// directory, is added to the paths the plugin may write.
func (s *Source) sandboxed(cmd Command, env []string, sockDir string) (*exec.Cmd, *sandbox.Box, error) {
	sb := *cmd.Sandbox
	sb.ReadWrite = append(append([]string(nil), sb.ReadWrite...), sockDir)
	set := make(map[string]string, len(cmd.Env)+len(env))
	for _, kv := range append(append([]string(nil), cmd.Env...), env...) {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			set[k] = v
		}
	}
	return sb.Command(cmd.Path, cmd.Args, cmd.Dir, set, s.logger, nil)
}
