package wire

import (
	"os"
	"syscall"
)

// F_SETPIPE_SZ and F_GETPIPE_SZ (linux/fcntl.h), which package syscall
// does not name.
const (
	fSetPipeSize = 1031
	fGetPipeSize = 1032
)

// GrowPipe asks Linux to let the pipe f hold size bytes, so that a
// writer puts a large message into it in fewer writes and its reader
// takes it with fewer wake-ups (a pipe holds 64 KiB by default). It is
// best effort: the kernel caps the size at /proc/sys/fs/pipe-max-size
// (1 MiB by default) and refuses it when the user's pipe quota is spent,
// and the pipe then keeps its size. f that is not a pipe is an error too.
func GrowPipe(f *os.File, size int) error {
	_, err := pipeFcntl(f, fSetPipeSize, size)
	return err
}

// PipeCapacity returns how many bytes the pipe f holds.
func PipeCapacity(f *os.File) (int, error) {
	return pipeFcntl(f, fGetPipeSize, 0)
}

func pipeFcntl(f *os.File, cmd, arg int) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var r uintptr
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		r, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, uintptr(cmd), uintptr(arg))
	}); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
