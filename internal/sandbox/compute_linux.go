//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

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
	f, err := seccompProgram(filter{deny: computeDenied, self: os.Getpid()})
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	// no_new_privs and the filter on one thread; TSYNC then gives both to
	// every other thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	tid, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	switch {
	case e != 0:
		return fmt.Errorf("seccomp: %w", e)
	case tid != 0:
		return fmt.Errorf("seccomp: thread %d could not take the filter", tid)
	}
	return nil
}
