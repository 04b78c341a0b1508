package upstream

import (
	"os"
	"syscall"
)

// fSetPipeSize is F_SETPIPE_SZ (linux/fcntl.h), which package syscall
// does not name.
const fSetPipeSize = 1031

// growPipe asks Linux to let the pipe f hold size bytes, so a server
// writing a large message fills it in fewer writes and junction reads it
// with fewer wake-ups (the default is 64 KiB). It is best effort: the
// kernel caps the size at /proc/sys/fs/pipe-max-size (1 MiB by default)
// and refuses it when the user's pipe quota is spent; the pipe then keeps
// its size. It reports the error, for tests.
func growPipe(f *os.File, size int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSize, uintptr(size))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
