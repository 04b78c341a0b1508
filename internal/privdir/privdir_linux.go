package privdir

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// removeStale removes the directories that junction processes no longer
// running left in dir, the temporary directory: a process killed
// outright (SIGKILL, the OOM killer, a power cut) never removes its
// directories (Make). One is removed only when it is a
// directory, not a link, owned by this user; no process with the id in
// its name is running (one that has exited but is not yet reaped is
// not); and no process holds its lock, which its maker held until it
// removed it or ended: that tells a directory of a junction in another
// PID namespace that shares the temporary directory (where the id names
// another process, or none), which must stay, and the id tells one that
// a process has just made and not yet locked. A name without an id (made
// by a junction before ids were in the names, or by junction's commands
// for what a person may still be editing) is left alone, as is one of a
// process that is running, whichever program that is now.
func removeStale(dir string, logger *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	self, uid := os.Getpid(), os.Getuid()
	for _, e := range entries {
		pid, ok := pidOf(e.Name())
		if !ok || pid == self || !e.IsDir() || running(pid) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		held, err := hold(path)
		if err != nil {
			continue // in use, or gone
		}
		err = os.RemoveAll(path)
		held.Close()
		if err != nil {
			logger.Warn("removing a directory a junction process that ended left behind", "dir", path, "error", err)
			continue
		}
		logger.Debug("removed a directory a junction process that ended left behind", "dir", path, "pid", pid)
	}
}

// hold opens the directory path, not following a link, and takes its
// lock without waiting: an error when another open file holds it.
func hold(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// pidOf returns the process id in name, a directory's name as
// Make makes it (junction-KIND-PID-RANDOM, each of PID and RANDOM
// decimal digits), and false for any other name.
func pidOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	head, random, ok := cutLast(rest, "-")
	if !ok || !digits(random) {
		return 0, false
	}
	kind, id, ok := cutLast(head, "-")
	if !ok || kind == "" || !digits(id) || id[0] == '0' {
		return 0, false
	}
	pid, err := strconv.Atoi(id)
	return pid, err == nil
}

// cutLast is strings.Cut at the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// digits reports whether s is one or more decimal digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// running reports whether the process with id pid is running: false
// when there is none (signal 0 is refused with ESRCH only then) and when
// it has exited and waits to be reaped (a zombie: it will never close
// its directories); true when that cannot be told.
func running(pid int) bool {
	if errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	// The state follows the command's name, which is in parentheses and
	// may hold any byte: it is the first field after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}
