//go:build linux

package files

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/reaper/reapertest"
)

// A deploy command's process group lives as long as the command: what it
// leaves running when it exits is killed, and so is the whole group when
// its timeout ends. Before, the command ran in the host's own group: its
// children outlived a timeout (and the answer waited 5s for them to let
// go of the output), and a "sleep 300 &" outlived the deploy.
func TestDeployCommandGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script, result string
	}{
		{"leftover after exit", "sleep 300 >/dev/null 2>&1 & echo $! > $0.left", "result: ok"},
		{"timeout", "sleep 300 & echo $! > $0.left; sleep 301", "result: command failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pid")
			srv, _ := newDeployServer(t, &DeployOptions{
				Command:        []string{"sh", "-c", reapertest.WritePID(pidfile) + "; " + strings.ReplaceAll(tc.script, "$0", pidfile)},
				CommandTimeout: 300 * time.Millisecond,
			})
			start := time.Now()
			if code, msg := put(t, srv+"/"+testUUID+".tar.gz", tarball(t, entry{name: "a", body: "x"})); code != 204 {
				t.Fatalf("PUT = %d %q", code, msg)
			}
			took := time.Since(start)
			if took > 3*time.Second {
				t.Errorf("deploy answered after %v, want it soon after the command (timeout 300ms)", took)
			}
			if _, log := get(t, srv+"/"+testUUID+".log"); !strings.Contains(log, tc.result) {
				t.Errorf("log does not say %q:\n%s", tc.result, log)
			}
			pgid, leftover := reapertest.ReadPID(t, pidfile), reapertest.ReadPID(t, pidfile+".left")
			if left := reapertest.WaitGone(pgid, 5*time.Second); len(left) != 0 {
				t.Errorf("processes %v of the command's group alive 5s after the deploy", left)
			}
			if reaper.Alive(leftover) {
				t.Errorf("the command's child %d is alive after the deploy", leftover)
			}
			t.Logf("%s: deploy answered %v after the PUT", tc.name, took.Round(time.Millisecond))
		})
	}
}

// With reapers on (as in junction deploy-host), the command's group holds
// a reaper while it runs, and neither is left after the deploy. (That the
// reaper kills the group when the host is SIGKILLed is tested through the
// binary, in internal/e2e.) Not parallel: it sets the process-wide switch.
func TestDeployCommandReaper(t *testing.T) {
	reapertest.Enable(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	srv, _ := newDeployServer(t, &DeployOptions{
		Command: []string{"sh", "-c", reapertest.WritePID(pidfile) + "; sleep 300 >/dev/null 2>&1 & while [ ! -e " + pidfile + ".go ]; do sleep 0.01; done"},
	})
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("PUT", srv+"/"+testUUID+".tar.gz", strings.NewReader(string(tarball(t, entry{name: "a", body: "x"}))))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	pgid := reapertest.ReadPID(t, pidfile)
	rp := reapertest.WaitReaper(pgid)
	if rp == 0 {
		t.Errorf("no reaper in the deploy command's group %v", reapertest.Members(pgid))
	}
	os.WriteFile(pidfile+".go", nil, 0o600) // the command exits now
	if code := <-answered; code != 204 {
		t.Errorf("PUT = %d, want 204", code)
	}
	if left := reapertest.WaitGone(pgid, 5*time.Second); len(left) != 0 {
		t.Errorf("processes %v of the command's group alive 5s after the deploy", left)
	}
	if rp != 0 && reaper.Alive(rp) {
		t.Errorf("reaper %d alive after the deploy", rp)
	}
}
