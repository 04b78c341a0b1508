//go:build linux

package sandbox

import (
	"fmt"
	"maps"
	"slices"
	"unsafe"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM in a sandbox: debugging and reading
// other processes, mounting and namespaces, kernel modules and keys,
// BPF, perf, userfaultfd and io_uring (large attack surface), and system
// administration. Names this architecture lacks are skipped.
var deniedSyscalls = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount",
	"fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	"setns", "unshare",
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"create_module", "query_module", "get_kernel_syms",
	"keyctl", "add_key", "request_key",
	"open_by_handle_at", "name_to_handle_at",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"syslog", "lookup_dcookie", "vhangup", "iopl", "ioperm", "uselib", "nfsservctl",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime",
}

// namespaceCloneFlags: clone with any of them fails with EPERM.
const namespaceCloneFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// A filter is what a seccomp program denies beyond deniedSyscalls.
type filter struct {
	deny []string // more system calls that fail with EPERM
	// self, when not zero, is the process's id: clone then makes threads
	// only, and the calls in selfOnly work on this process only.
	self int
}

// selfOnly are the system calls whose first argument names a process;
// with filter.self they fail with EPERM for any other. The value is
// another argument that also means the process itself: 0 for prlimit64;
// none for kill, where 0 is the whole process group.
var selfOnly = map[string]int{"kill": -1, "tgkill": -1, "prlimit64": 0}

// seccompProgram assembles the filter: another architecture's system
// calls (and x32's) fail with ENOSYS; the denied ones and clone with
// namespace flags with EPERM; clone3, whose flags a filter cannot see,
// with ENOSYS (libc then falls back to clone); everything else is
// allowed.
func seccompProgram(f filter) ([]unix.SockFilter, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, err
	}
	const (
		eperm  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		allow  = unix.SECCOMP_RET_ALLOW
	)
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: enosys},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	if info.ID == arch.X86_64.ID {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: uint32(arch.X32.SeccompMask), SkipFalse: 1},
			bpf.RetConstant{Val: enosys})
	}
	for _, name := range append(deniedSyscalls[:len(deniedSyscalls):len(deniedSyscalls)], f.deny...) {
		nr, ok := info.SyscallNames[name]
		if !ok {
			continue
		}
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
			bpf.RetConstant{Val: eperm})
	}
	// The first argument's low 32 bits: a pid, or clone's flags.
	arg0 := uint32(16) // seccomp_data.args[0]
	if !littleEndian() {
		arg0 += 4
	}
	if f.self != 0 {
		for _, name := range slices.Sorted(maps.Keys(selfOnly)) {
			nr, ok := info.SyscallNames[name]
			if !ok {
				continue
			}
			// The accumulator holds the argument only on the way to a
			// return.
			p = append(p,
				bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(nr), SkipTrue: 5},
				bpf.LoadAbsolute{Off: arg0, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(f.self), SkipTrue: 2},
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(selfOnly[name]), SkipTrue: 1},
				bpf.RetConstant{Val: eperm},
				bpf.RetConstant{Val: allow})
		}
	}
	if nr, ok := info.SyscallNames["clone3"]; ok {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
			bpf.RetConstant{Val: enosys})
	}
	if nr, ok := info.SyscallNames["clone"]; ok {
		// The flags are clone's first argument on the architectures
		// junction ships for (amd64, arm64); their low 32 bits hold
		// every namespace flag.
		// With filter.self, a thread of this process, not a new process.
		// This is the last check: the accumulator holds the flags after it.
		skip := uint8(3)
		if f.self != 0 {
			skip = 5
		}
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(nr), SkipTrue: skip},
			bpf.LoadAbsolute{Off: arg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: namespaceCloneFlags, SkipFalse: 1},
			bpf.RetConstant{Val: eperm})
		if f.self != 0 {
			p = append(p,
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_THREAD, SkipTrue: 1},
				bpf.RetConstant{Val: eperm})
		}
	}
	p = append(p, bpf.RetConstant{Val: allow})
	raw, err := bpf.Assemble(p)
	if err != nil {
		return nil, err
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// loadSeccomp loads f's program on the calling thread (no_new_privs must
// be set), with the seccomp flags given: with SECCOMP_FILTER_FLAG_TSYNC
// on every thread of the process, else on this one only (the sandbox's
// exec stage execs next).
func loadSeccomp(f filter, flags uintptr) error {
	prog, err := seccompProgram(f)
	if err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	tid, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	switch {
	case e != 0:
		return fmt.Errorf("seccomp: %w", e)
	case tid != 0: // TSYNC's answer when a thread could not take it
		return fmt.Errorf("seccomp: thread %d could not take the filter", tid)
	}
	return nil
}

// seccompSupported reports whether filters can be loaded.
func seccompSupported() bool {
	action := uint32(unix.SECCOMP_RET_ALLOW)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return e == 0
}
