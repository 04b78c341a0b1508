//go:build linux

package toolbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/reaper/reapertest"
)

// With reapers on, each plugin process group holds a reaper while it
// runs: beside the first plugin process, and beside the one started after
// it died. Close stops the group, reaper included, and leaves nothing.
// (That the reaper stops the group when the hub is SIGKILLed is tested
// through the binary, in internal/e2e.) Not parallel: it sets the
// process-wide switch.
func TestReaperInPluginGroup(t *testing.T) {
	reapertest.Enable(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "wrapper.sh")
	body := "#!/bin/sh\nsleep 300 &\nexec " + goPluginPath + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := testOptions("reaped", &logBuffer{})
	opts.StopTimeout = 300 * time.Millisecond
	src, err := NewPlugin(Command{Path: script}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var reapers []int
	var pgid int
	for range 2 {
		pid := pidFromSource(t, ctx, src) // the plugin, which the shell became: the group's leader
		if pid == pgid {
			t.Fatalf("plugin %d still running after it was killed", pid)
		}
		pgid = pid
		var rp int
		waitFor(t, 10*time.Second, "the plugin's helper and reaper", func() bool {
			rp = reapertest.Of(pgid)
			return rp != 0 && len(reapertest.Members(pgid)) == 3
		})
		if slices.Contains(reapers, rp) {
			t.Fatalf("reaper %d serves two plugin processes", rp)
		}
		reapers = append(reapers, rp)
		// The plugin dies: the supervisor kills the rest of its group
		// (the reaper too) and starts another one.
		if len(reapers) == 1 {
			syscall.Kill(pid, syscall.SIGKILL)
			if left := reapertest.WaitGone(pgid, 10*time.Second); len(left) != 0 {
				t.Fatalf("processes %v of a dead plugin's group left", left)
			}
		}
	}
	start := time.Now()
	src.Close()
	took := time.Since(start)
	// SIGKILL takes effect a moment after kill returns: the helper, not
	// a child of ours, is polled for.
	if left := reapertest.WaitGone(pgid, 5*time.Second); len(left) != 0 {
		t.Errorf("processes %v of the plugin's group alive 5s after Close", left)
	}
	for _, rp := range reapers {
		if reaper.Alive(rp) {
			t.Errorf("reaper %d alive after Close", rp)
		}
	}
	t.Logf("plugin group with a reaper: Close took %v (stop timeout %v)", took.Round(time.Millisecond), opts.StopTimeout)
}
