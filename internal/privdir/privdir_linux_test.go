package privdir

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveStale: the directories of a process that ended go, with
// what they hold; those of running processes, names without an id,
// links and files stay.
func TestRemoveStale(t *testing.T) {
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(ended.Process.Pid)
	// A process that has exited and is not reaped yet (a zombie) will not
	// remove its directories either.
	exited := exec.Command("true")
	if err := exited.Start(); err != nil {
		t.Fatal(err)
	}
	defer exited.Wait()
	zombie := strconv.Itoa(exited.Process.Pid)
	var info unix.Siginfo // waits for the exit, and leaves the process unreaped
	if err := unix.Waitid(unix.P_PID, exited.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	live := strconv.Itoa(os.Getppid())
	self := strconv.Itoa(os.Getpid())

	dir := t.TempDir()
	elsewhere := t.TempDir()
	mkdir := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		"junction-sandbox-tmp-" + dead + "-123",
		"junction-egress-" + dead + "-456",
		"junction-toolbox-" + zombie + "-789",
	}
	for _, name := range gone {
		p := mkdir(name)
		if err := os.WriteFile(filepath.Join(p, "left.txt"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kept := []string{
		"junction-sandbox-tmp-" + live + "-1",
		"junction-egress-" + self + "-2",
		"junction-egress-1408655476", // no id: an older junction's
		"junction-edit-" + dead,      // nor one of junction's commands
		"junction-sandbox-tmp-0" + dead + "-3",
		"junction-sandbox-tmp-x-4",
		"junction-egress-" + dead + "-x",
		"junction--" + dead + "-5",
		"other-egress-" + dead + "-6",
	}
	for _, name := range kept {
		mkdir(name)
	}
	file := "junction-sandbox-tmp-" + dead + "-7"
	if err := os.WriteFile(filepath.Join(dir, file), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := "junction-egress-" + dead + "-8"
	if err := os.Symlink(elsewhere, filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, file, link)
	// A directory whose lock is held: a junction's in another PID
	// namespace, where the id names no process here.
	locked := "junction-egress-" + dead + "-9"
	held, err := hold(mkdir(locked))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	kept = append(kept, locked)

	removeStale(dir, slog.New(slog.DiscardHandler))

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	for _, name := range gone {
		if slices.Contains(left, name) {
			t.Errorf("%s, of a process that ended, is still there", name)
		}
	}
	for _, name := range kept {
		if !slices.Contains(left, name) {
			t.Errorf("%s was removed", name)
		}
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("the link's target: %v", err)
	}
}

// TestMake: a directory's name carries its kind and the process's id,
// which pidOf reads back; it is locked until Remove.
func TestMake(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, kind := range []string{"sandbox-tmp", "egress", "toolbox"} {
		d, err := Make(kind, nil)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(d.Path)
		if !strings.HasPrefix(name, "junction-"+kind+"-") {
			t.Errorf("Make(%q) made %s", kind, name)
		}
		if pid, ok := pidOf(name); !ok || pid != os.Getpid() {
			t.Errorf("pidOf(%s) = %d, %v; want %d", name, pid, ok, os.Getpid())
		}
		if f, err := hold(d.Path); err == nil {
			f.Close()
			t.Errorf("%s is not locked", d.Path)
		}
		if err := d.Remove(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(d.Path); err == nil {
			t.Errorf("%s is still there after Remove", d.Path)
		}
	}
}
