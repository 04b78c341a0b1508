//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// computeDenied is what Compute denies beyond deniedSyscalls: a process
// that computes on what it was given opens no file, makes no socket,
// starts no program, changes nothing on disk and signals, limits or
// watches no other process.
var computeDenied = []string{
	"open", "openat", "openat2", "creat", "open_by_handle_at",
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
	"execve", "execveat", "fork", "vfork",
	"link", "linkat", "symlink", "symlinkat", "unlink", "unlinkat",
	"rename", "renameat", "renameat2", "mkdir", "mkdirat", "rmdir", "mknod", "mknodat",
	"chmod", "fchmodat", "fchmodat2", "chown", "lchown", "fchownat", "truncate",
	"tkill", "pidfd_open", "pidfd_send_signal", "setpriority", "sched_setaffinity",
	"ioprio_set", "memfd_create", "inotify_init", "inotify_init1", "fanotify_init",
}

// Compute confines the calling process, each of its threads and each
// thread it starts, to computing on what it already has (its memory and
// the files it has open): from then on it cannot open a file, make a
// socket, start a program, change the file system, or signal or limit
// another process, and the calls a sandbox denies (ptrace, mount, bpf
// ...) are denied too. It cannot be undone. A Go program keeps working:
// its threads are made with clone, and signals to itself are allowed.
// Code mode's engine process calls it before it reads a script.
func Compute() error {
	if !seccompSupported() {
		return fmt.Errorf("seccomp: %w", ErrUnsupported)
	}
	// no_new_privs and the filter on one thread; TSYNC then gives both to
	// every other thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	return loadSeccomp(filter{deny: computeDenied, self: os.Getpid()}, unix.SECCOMP_FILTER_FLAG_TSYNC)
}
