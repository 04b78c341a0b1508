//go:build linux

package upstream

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/reaper/reapertest"
)

// The reapers the tests start run this test binary again (/proc/self/exe);
// this switch makes it one before any test runs.
func init() {
	reaper.RunIfReaper()
}

// With reapers enabled, every stdio server gets one in its group; Close
// stops the group as before (a server that exits on stdin EOF needs no
// SIGTERM: the reaper does not count as a member still running) and then
// releases the reaper. Not parallel: it sets the process-wide switch, and
// no parallel test runs beside a sequential one.
func TestReaperBesideStdioServer(t *testing.T) {
	reapertest.Enable(t) // off again after the parallel subtests
	for _, stubborn := range []bool{false, true} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			var pidfile string
			if stubborn {
				pidfile = filepath.Join(t.TempDir(), "pids")
				env["FAKE_CHILD_PIDFILE"] = pidfile
				env["FAKE_STUBBORN"] = "1"
			}
			cfg := fakeConfig(t, "server", env)
			cfg.StopTimeout = 5 * time.Second
			if stubborn {
				cfg.StopTimeout = 200 * time.Millisecond
			}
			r, logs := newRegistry(t, nil)
			s := addReady(t, r, "g", cfg)
			pgid := s.Snapshot().PID
			var rp int
			waitFor(t, "a reaper in the server's group", func() bool { rp = reapertest.Of(pgid); return rp != 0 })
			members := reapertest.Members(pgid)
			if stubborn {
				readPids(t, pidfile)
			}
			start := time.Now()
			if err := s.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
			t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
			if left := reapertest.Members(pgid); len(left) != 0 {
				t.Errorf("processes %v of the group (reaper %d) alive after Close", left, rp)
			}
			if pidAlive(rp) {
				t.Errorf("reaper %d alive after Close", rp)
			}
			sentTERM := strings.Contains(logs.String(), "sending SIGTERM")
			if !stubborn && sentTERM {
				t.Errorf("Close sent SIGTERM to a server that exits on stdin EOF (group %v): the reaper was counted as a member", members)
			}
			if stubborn && !strings.Contains(logs.String(), "killing its process group") {
				t.Errorf("Close of a stubborn group did not reach SIGKILL")
			}
		})
	}
}
