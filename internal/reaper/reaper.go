// Package reaper keeps the process groups a program starts from outliving
// it on Linux, whatever signal ends the program.
//
// A reaper is a small process: the program itself, started again with a
// hidden switch. It joins a process group the program started and holds
// the read end of a pipe from the program. If the program ends without
// stopping the group (it is killed with SIGKILL, it crashes, it exits
// without cleaning up), the kernel closes the pipe, and the reaper stops
// the whole group in [Stages]: grandchildren included, as the program
// would have. When the program stops the group itself, it releases the
// reaper, which exits without touching anything.
//
//	func main() {
//		reaper.Enable() // first: in a reaper, this does its work and exits
//		...
//	}
//
//	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
//	if err := cmd.Start(); err != nil { ... }
//	r, err := reaper.Start(cmd.Process.Pid, reaper.Stages{Term: 5 * time.Second})
//	... // before cmd.Wait: the group must exist to be joined
//	cmd.Wait()
//	... // stop the group (the reaper pins its id until released)
//	r.Release()
//
// A command that runs to an end (a diagram's command node, a deploy
// command) needs only [Run], which does all of that and also kills what
// the command leaves running in its group when it exits.
//
// # Overview
//
//	program ─────── pipe ───────▶ reaper ─┐
//	   │ starts (Setpgid)                 │ joins
//	   ▼                                  ▼
//	 leader ── its children ──  one process group (PGID = leader's pid)
//
// The reaper is a member of the group it may signal, so the group's id
// cannot be given to an unrelated group while the reaper might still use
// it. For the same reason a program may signal a group after reaping its
// leader as long as the group's reaper has not been released. The reaper
// ignores SIGTERM, SIGINT, SIGHUP, SIGQUIT and SIGPIPE; SIGKILL to the
// group ends it along with the rest.
//
// A reaper costs one process (about 1.5 MiB of private memory; the
// program's pages are shared) for as long as its group runs. Started for
// a short command that is then killed with its group, it added about
// 0.4 ms (junction's binary; see BenchmarkStart for this package's test
// binary).
//
// # Other systems
//
// Reapers exist on Linux only, where a process group can be watched
// through /proc; elsewhere [Enable] only records that the program called
// it, [Start] returns a nil *Reaper, and every method of a nil *Reaper
// does nothing.
package reaper

import (
	"os"
	"sync/atomic"
	"time"
)

// Stages is how a group is stopped, by a reaper whose program is gone and
// by [StopGroup]: the group has Grace to exit on its own (a stdio server
// exits when its stdin ends), then it is sent SIGTERM and has Term, then
// it is sent SIGKILL. A zero Grace sends SIGTERM at once; a zero Term
// sends SIGKILL right after it.
type Stages struct {
	Grace, Term time.Duration
}

// Enable makes [Start] start reapers from then on. Call it first thing in
// main, before anything else runs: in a process started as a reaper,
// Enable does not return (it does the reaper's work and exits); in any
// other process it only records that reapers may be started. A program
// that does not call it gets no reapers, since a reaper is the program
// itself run again and only a main that calls Enable knows to act as one.
func Enable() {
	RunIfReaper()
	enabled.Store(supported)
}

// RunIfReaper does a reaper's work and exits if this process was started
// as one; otherwise it returns at once. [Enable] calls it; a test binary
// whose tests start reapers calls it before they run (in TestMain or an
// init function) and turns reapers on with [SetEnabled].
func RunIfReaper() {
	if os.Getenv(envName) == envValue {
		run(os.Args) // does not return
	}
}

// Enabled reports whether [Start] starts reapers: [Enable] has run, on a
// system that has them.
func Enabled() bool { return enabled.Load() }

// SetEnabled turns reapers on or off for the groups started from then on
// and returns the previous setting. It is for tests, in a binary that
// calls [RunIfReaper] first; programs call [Enable]. Outside Linux
// reapers stay off.
func SetEnabled(on bool) (was bool) {
	return enabled.Swap(on && supported)
}

// enabled is set by Enable at the start of main: whether the program runs
// the reaper's main is a property of the program, so it is process-wide.
var enabled atomic.Bool

// A reaper is this program started with envName=envValue in its
// environment and [Name] as argv[0]; both are checked, so a stray
// variable alone does not make a program signal a group.
const (
	envName  = "JUNCTION_REAPER"
	envValue = "1"
)

// Name is a reaper's argv[0], as ps shows it: "junction-reaper PGID GRACE
// TERM".
const Name = "junction-reaper"
