package upstream

import (
	"os"
	"syscall"
	"testing"
)

func pipeSize(t *testing.T, f *os.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n uintptr
	var errno syscall.Errno
	rc.Control(func(fd uintptr) {
		n, _, errno = syscall.Syscall(syscall.SYS_FCNTL, fd, 1032 /* F_GETPIPE_SZ */, 0)
	})
	if errno != 0 {
		t.Fatal(errno)
	}
	return int(n)
}

func TestGrowPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before := pipeSize(t, r)
	if err := growPipe(r, 256<<10); err == syscall.EPERM {
		t.Skipf("F_SETPIPE_SZ refused: the user's pipe quota is spent: %v", err)
	} else if err != nil {
		t.Fatalf("growPipe: %v", err)
	}
	if got := pipeSize(t, w); got < 256<<10 {
		t.Errorf("pipe size after growPipe(256 KiB) = %d (was %d)", got, before)
	}
}

// TestStdoutPipeGrown: a stdio server's stdout pipe gets stdoutPipeSize.
func TestStdoutPipeGrown(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "pipe", rawConfig(t, nil))
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	conn := sess.stdio()
	if conn == nil {
		t.Fatal("no stdio connection")
	}
	if got := pipeSize(t, conn.stdout); got < stdoutPipeSize {
		t.Errorf("stdout pipe holds %d bytes, want %d", got, stdoutPipeSize)
	}
}
