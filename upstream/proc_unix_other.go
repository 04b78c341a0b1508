//go:build unix && !linux

package upstream

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}

// groupAlive reports whether any process of the group pgid still exists.
func groupAlive(pgid int) bool { return signalGroup(pgid, 0) }
