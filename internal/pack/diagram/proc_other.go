//go:build !unix

package diagram

import "os/exec"

func setProcessGroup(*exec.Cmd) {}
