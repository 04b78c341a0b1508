//go:build unix && !linux

package reaper

// groupAlive reports whether any process of the group pgid still exists.
// except is for reapers, which exist on Linux only.
func groupAlive(pgid, _ int) bool { return signalGroup(pgid, 0) }
