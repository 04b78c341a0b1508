package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper/reapertest"
)

// A SIGKILLed junction leaves nothing of the process groups it started:
// a toolbox plugin's, a diagram command node's, a deploy command's (a
// stdio server's is in TestFaultUpstream). In each group a shell starts a
// grandchild; a reaper (junction's own binary, started again) stops the
// group once junction is gone. Before, each group outlived junction whole:
// the plugin itself, or the command's shell, and its sleep.
func TestFaultReaperSIGKILL(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("reapers need /proc (Linux)")
	}
	// grandchild is what each group runs once its leader has written its
	// pid (the group's id) to $PIDFILE: a shell with a sleep under it, and
	// a sleep of its own.
	const grandchild = "sh -c 'sleep 300' & sleep 301"

	t.Run("plugin", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		pidfile := filepath.Join(dir, "pid")
		wrapper := writeFile(t, dir, "plugin.sh", "#!/bin/sh\n"+reapertest.WritePID(pidfile)+"\nsh -c 'sleep 300' &\nexec "+toolboxGo(t)+"\n")
		if err := os.Chmod(wrapper, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), "plugins:\n  wrapped:\n    command: "+strconvQuote(wrapper)+"\n")
		killJunction(t, killCase{
			pidfile: pidfile,
			args:    []string{"serve", "-no-default-packs", "-config", cfg},
			members: "plugin, shell, sleep, reaper",
		})
	})

	t.Run("diagram command node", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		pidfile := filepath.Join(dir, "pid")
		flow := writeFile(t, dir, "cmd.yaml", fmt.Sprintf(`
nodes:
  - {id: start, type: start}
  - {id: run, type: command, command: [sh, -c, %q], timeout: 10m}
  - {id: end, type: endpoint}
edges: [{from: start, to: run}, {from: run, to: end}]
`, reapertest.WritePID(pidfile)+"; "+grandchild))
		killJunction(t, killCase{
			pidfile: pidfile,
			args:    []string{"diagram", "run", flow, "-data-dir", filepath.Join(dir, "data")},
			env:     []string{"JUNCTION_DIAGRAM_ALLOW_COMMANDS=1"},
			members: "shell, shell, two sleeps, reaper",
		})
	})

	t.Run("deploy command", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		pidfile := filepath.Join(dir, "pid")
		tarball := filepath.Join(dir, "site.tar.gz")
		deployTarball(t, tarball)
		body, err := os.ReadFile(tarball)
		if err != nil {
			t.Fatal(err)
		}
		killJunction(t, killCase{
			pidfile: pidfile,
			args: []string{"deploy-host", "-root", t.TempDir(), "-insecure-no-auth", "127.0.0.1:0",
				"--", "sh", "-c", reapertest.WritePID(pidfile) + "; " + grandchild},
			banner: "junction: deploy host listening on http://",
			// The deploy's command runs while its PUT waits for it.
			start: func(addr string) func() {
				done := make(chan struct{})
				go func() {
					defer close(done)
					req, _ := http.NewRequest("PUT", "http://"+addr+"/"+diodeUUID+".tar.gz", bytes.NewReader(body))
					if resp, err := http.DefaultClient.Do(req); err == nil { // fails when junction is killed
						resp.Body.Close()
					}
				}()
				return func() { <-done }
			},
			members: "shell, shell, two sleeps, reaper",
		})
	})
}

// killCase is one junction process to SIGKILL while a process group it
// started runs.
type killCase struct {
	pidfile string   // where the group's leader writes its pid, the group's id
	args    []string // junction's arguments
	env     []string // added to junction's environment
	members string   // what the group holds, for the log
	// banner, if set, is the start of the stderr line to wait for before
	// start is called with the rest of it up to the next '/'.
	banner string
	// start, if set, sets the group off; it returns a function that
	// waits for what it started, called once junction is gone.
	start func(rest string) (wait func())
}

// killJunction runs junction as c says, waits until the group whose id
// lands in c.pidfile holds a reaper, SIGKILLs junction and checks that
// every process of the group is gone within 10s. It logs the figures.
func killJunction(t *testing.T, c killCase) {
	t.Helper()
	cmd := exec.Command(junctionBin(t), c.args...)
	cmd.Env = append(childEnv(t.TempDir()), c.env...)
	stdin, err := cmd.StdinPipe() // held open: serve over stdio runs until it ends
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	stderr := newLineWatcher(c.banner)
	if c.banner == "" {
		stderr = newOutput()
	}
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout // a survivor holding stderr cannot hang Wait
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	pgid := 0
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		stdin.Close()
		// Only while a member lives: then the id is still the group's.
		if pgid > 0 && len(reapertest.Members(pgid)) > 0 {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("junction %s stderr:\n%s", strings.Join(c.args, " "), stderr.String())
		}
	})
	wait := func() {}
	if c.banner != "" {
		select {
		case line := <-stderr.found:
			rest, _, _ := strings.Cut(strings.TrimPrefix(line, c.banner), "/")
			wait = c.start(rest)
		case <-exited:
			t.Fatalf("junction exited before printing %q", c.banner)
		case <-time.After(startTimeout):
			t.Fatalf("junction did not print %q within %v", c.banner, startTimeout)
		}
	}
	pgid = reapertest.ReadPID(t, c.pidfile)
	rp := reapertest.WaitReaper(pgid)
	if rp == 0 {
		t.Fatalf("no reaper in the group %d %v after 10s", pgid, reapertest.Members(pgid))
	}
	before := reapertest.Members(pgid)
	private := privateKB(rp)

	start := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("junction did not exit within 20s of SIGKILL")
	}
	left := reapertest.WaitGone(pgid, 10*time.Second)
	took := time.Since(start)
	wait()
	if len(left) != 0 {
		t.Errorf("processes %v of the group (%v before) alive 10s after junction was SIGKILLed", left, before)
	}
	t.Logf("SIGKILLed junction: the group (%d processes: %s) was gone %v later; left: %d; the reaper's private memory: %d KiB",
		len(before), c.members, took.Round(time.Millisecond), len(left), private)
}

// privateKB returns the private memory (clean and dirty) of pid in KiB,
// from /proc/PID/smaps_rollup, or 0 if it cannot be read.
func privateKB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && (k == "Private_Clean" || k == "Private_Dirty") {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			total += n
		}
	}
	return total
}
