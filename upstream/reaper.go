package upstream

import "github.com/junction-mcp/junction/internal/reaper"

// EnableReaper makes every stdio server this program starts from then on
// get a reaper: a small process, this same program run again, that
// belongs to the server's process group and holds one end of a pipe from
// this program. If this program ends without stopping the server (it is
// killed with SIGKILL, it crashes, it exits without closing its
// [Registry]), the kernel closes the pipe, and the reaper stops the whole
// group as [Server.Close] would: it waits for it to exit on stdin EOF,
// then sends SIGTERM, then SIGKILL, each wait Config.StopTimeout. So
// nothing the program started outlives it, grandchildren included, whatever
// signal ends it. When the program stops the server itself, it releases
// the reaper, which exits without touching the group.
//
// It is one switch for the whole program: toolbox plugins started through
// the toolbox package get reapers too (toolbox.EnableReaper is the same
// switch).
//
// Call it first thing in main, before anything else runs: in a process
// started as a reaper, EnableReaper never returns (it does the reaper's
// work and exits); in any other process it only records that reapers may
// be started. A program that does not call it gets no reapers: on Linux
// the server process itself is still killed when the program dies (it
// has a parent-death signal), but its children may outlive it.
//
// Reapers exist on Linux only, where a process group can be watched
// through /proc; elsewhere EnableReaper does nothing. A reaper costs one
// process per running stdio server.
func EnableReaper() { reaper.Enable() }
