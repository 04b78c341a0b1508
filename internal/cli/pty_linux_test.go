package cli

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// openPTY opens a pseudo-terminal: the test plays the person on the
// master side, the command reads and writes the terminal side. Both are
// closed at cleanup. It uses the kernel's interface directly (/dev/ptmx,
// TIOCSPTLCK, TIOCGPTN) rather than a pty package.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(new(int32))); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		t.Fatalf("numbering the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("opening the terminal side: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// ioctl calls ioctl on f's descriptor through SyscallConn, which (unlike
// Fd) leaves f non-blocking, so reads on it honour deadlines and Close.
func ioctl(f *os.File, req uintptr, arg unsafe.Pointer) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, req, uintptr(arg))
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}
