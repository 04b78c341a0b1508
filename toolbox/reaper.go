package toolbox

import "github.com/junction-mcp/junction/internal/reaper"

// EnableReaper makes every plugin process [NewPlugin] starts from then on
// get a reaper: a small process, this same program run again, that
// belongs to the plugin's process group and holds one end of a pipe from
// this program. If this program ends without stopping the plugin (it is
// killed with SIGKILL, it crashes, it exits without closing the
// [Source]), the kernel closes the pipe, and the reaper stops the whole
// group as [Source.Close] would: SIGTERM, then SIGKILL after
// Options.StopTimeout. So neither the plugin nor anything it started
// outlives the program, whatever signal ends it. When the program stops
// the plugin itself, the reaper goes with the group.
//
// It is one switch for the whole program: upstream.EnableReaper is the
// same switch, and turns on reapers for stdio servers too.
//
// Call it first thing in main, before anything else runs: in a process
// started as a reaper, EnableReaper never returns (it does the reaper's
// work and exits); in any other process it only records that reapers may
// be started. Reapers exist on Linux only; elsewhere EnableReaper does
// nothing. A reaper costs one process per running plugin.
func EnableReaper() { reaper.Enable() }
