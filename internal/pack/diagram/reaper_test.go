//go:build linux

package diagram

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/reaper/reapertest"
)

// groupDiagram runs one command node: a shell running script.
const groupDiagram = `
nodes:
  - {id: start, type: start}
  - {id: run, type: command, command: [sh, -c, "{{ .input.script }}"], timeout: 5s}
  - {id: end, type: endpoint}
edges: [{from: start, to: run}, {from: run, to: end}]
`

// A command node's process group lives as long as the node: what the
// command leaves running when it exits is killed, so that nothing is left
// for a hub that is killed later. Before, a "sleep 300 &" outlived the
// run and the hub.
func TestCommandLeftoversKilled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", func(o *Options) { o.AllowCommands = true })
	pidfile := filepath.Join(t.TempDir(), "pid")
	out, _ := e.call(t, "run_diagram", map[string]any{"diagram_content": groupDiagram, "input_data": map[string]any{
		"script": reapertest.WritePID(pidfile) + "; sleep 300 >/dev/null 2>&1 & echo started",
	}})
	if out["status"] != "completed" {
		t.Fatalf("run = %v", out)
	}
	pgid := reapertest.ReadPID(t, pidfile)
	if left := reapertest.WaitGone(pgid, 5*time.Second); len(left) != 0 {
		t.Errorf("processes %v of the command's group alive 5s after its run completed", left)
	}
}

// With reapers on (as in junction), a command's group holds a reaper
// while the command runs, and neither is left once the node ends, by exit
// or because the run was cancelled. (That the reaper kills the group when the hub is
// SIGKILLed is tested through the binary, in internal/e2e.) Not parallel:
// it sets the process-wide switch.
func TestCommandNodeReaper(t *testing.T) {
	reapertest.Enable(t)
	e := newEnv(t, "", func(o *Options) { o.AllowCommands = true })
	for _, tc := range []struct{ script, status string }{
		{"sleep 300 >/dev/null 2>&1 & while [ ! -e $0.go ]; do sleep 0.01; done", StatusCompleted},
		{"sleep 300 & sleep 301", StatusCancelled},
	} {
		pidfile := filepath.Join(t.TempDir(), "pid")
		out, _ := e.call(t, "run_backend", map[string]any{"diagram_content": groupDiagram, "input_data": map[string]any{
			"script": reapertest.WritePID(pidfile) + "; " + strings.ReplaceAll(tc.script, "$0", pidfile),
		}})
		id := fmt.Sprint(out["session_id"])
		pgid := reapertest.ReadPID(t, pidfile)
		rp := reapertest.WaitReaper(pgid)
		if rp == 0 {
			t.Errorf("%q: no reaper in the command's group %v", tc.script, reapertest.Members(pgid))
		}
		if tc.status == StatusCancelled {
			e.call(t, "cancel_run", map[string]any{"session_id": id})
		} else {
			os.WriteFile(pidfile+".go", nil, 0o600) // the script exits now
		}
		if res := e.poll(t, id); res["status"] != tc.status {
			t.Errorf("%q: run = %v, want %s", tc.script, res, tc.status)
		}
		if left := reapertest.WaitGone(pgid, 5*time.Second); len(left) != 0 {
			t.Errorf("%q: processes %v of the command's group alive 5s after the node ended", tc.script, left)
		}
		if rp != 0 && reaper.Alive(rp) {
			t.Errorf("%q: reaper %d alive after the node ended", tc.script, rp)
		}
	}
}
