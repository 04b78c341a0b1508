//go:build !unix

package reaper

import "os/exec"

// Run runs cmd, which must come from exec.CommandContext. Without process
// groups, ending cmd's context or its process reaches only that process:
// its children may outlive it.
func Run(cmd *exec.Cmd) error { return cmd.Run() }
