package sandbox

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveStale: the box directories of a process that ended go, with
// what they hold; those of running processes, names without an id,
// links and files stay.
func TestRemoveStale(t *testing.T) {
	ended := exec.Command("true")
	if err := ended.Run(); err != nil {
		t.Fatal(err)
	}
	dead := strconv.Itoa(ended.Process.Pid)
	// A process that has exited and is not reaped yet (a zombie) will not
	// close its boxes either.
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
		tmpPrefix + dead + "-123",
		egressPrefix + dead + "-456",
		tmpPrefix + zombie + "-789",
	}
	for _, name := range gone {
		p := mkdir(name)
		if err := os.WriteFile(filepath.Join(p, "left.txt"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	kept := []string{
		tmpPrefix + live + "-1",
		egressPrefix + self + "-2",
		egressPrefix + "1408655476", // no id: an older junction's
		tmpPrefix + "0" + dead + "-3",
		tmpPrefix + "x-4",
		"junction-other-" + dead + "-5",
	}
	for _, name := range kept {
		mkdir(name)
	}
	if err := os.WriteFile(filepath.Join(dir, tmpPrefix+dead+"-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := egressPrefix + dead + "-link"
	if err := os.Symlink(elsewhere, filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, tmpPrefix+dead+"-file", link)

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

// TestBoxDir: a box directory's name carries the process's id, which
// boxPID reads back.
func TestBoxDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, prefix := range boxPrefixes {
		d, err := boxDir(prefix)
		if err != nil {
			t.Fatal(err)
		}
		if pid, ok := boxPID(filepath.Base(d)); !ok || pid != os.Getpid() {
			t.Errorf("boxPID(%s) = %d, %v; want %d", filepath.Base(d), pid, ok, os.Getpid())
		}
	}
}
