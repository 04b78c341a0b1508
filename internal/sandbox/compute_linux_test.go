//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestCompute: a process confined by Compute cannot open, create or
// remove a file, make a socket, start a program or signal its parent,
// and still runs Go: new threads, signals to itself, the collector.
func TestCompute(t *testing.T) {
	if os.Getenv("SANDBOX_TEST_COMPUTE") != "" {
		computeChild(os.Getenv("SANDBOX_TEST_COMPUTE"))
		return
	}
	if !seccompSupported() {
		// Compute loads nothing here (it fails before confining the test
		// process), and must say why.
		if err := Compute(); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("Compute without seccomp: %v, want an error wrapping ErrUnsupported", err)
		}
		t.Skip("this kernel (or the container it runs in) offers no seccomp filters: Compute reports ErrUnsupported, as checked, and there is no confinement to test")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompute$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SANDBOX_TEST_COMPUTE="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the confined process: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			got[k] = v
		}
	}
	for _, denied := range []string{"open", "create", "remove", "socket", "exec", "signal the parent", "kill the group"} {
		if got[denied] != "denied" {
			t.Errorf("%s: %q after Compute, want denied\n%s", denied, got[denied], out)
		}
	}
	for _, allowed := range []string{"compute", "threads", "signal itself", "read an open file"} {
		if got[allowed] != "ok" {
			t.Errorf("%s: %q after Compute, want ok\n%s", allowed, got[allowed], out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "created")); err == nil {
		t.Error("the confined process created a file")
	}
}

// computeChild confines itself and reports what it can still do.
func computeChild(dir string) {
	keep, err := os.Open(os.Args[0]) // open before, read after
	if err != nil {
		fmt.Println("setup:", err)
		os.Exit(1)
	}
	if err := Compute(); err != nil {
		fmt.Println("Compute:", err)
		os.Exit(1)
	}
	outcome := func(name string, err error) {
		switch {
		case err == nil:
			fmt.Printf("%s: ok\n", name)
		case errors.Is(err, syscall.EPERM):
			fmt.Printf("%s: denied\n", name)
		default:
			fmt.Printf("%s: %v\n", name, err)
		}
	}
	_, err = os.Open("/proc/self/status")
	outcome("open", err)
	outcome("create", os.WriteFile(filepath.Join(dir, "created"), nil, 0o600))
	outcome("remove", os.Remove(dir))
	_, err = net.Dial("tcp", "127.0.0.1:9")
	outcome("socket", err)
	outcome("exec", exec.Command("/bin/true").Run())
	outcome("signal the parent", syscall.Kill(os.Getppid(), 0))
	outcome("kill the group", syscall.Kill(0, 0))
	outcome("signal itself", syscall.Kill(os.Getpid(), 0))
	_, err = keep.Read(make([]byte, 16))
	outcome("read an open file", err)
	// More threads than the process had: each goroutine holds one.
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			runtime.Gosched()
		})
	}
	wg.Wait()
	outcome("threads", nil)
	b := make([][]byte, 0, 1000)
	for i := range 1000 {
		b = append(b, make([]byte, 64<<10))
		b[i][0] = 1
	}
	runtime.GC()
	outcome("compute", nil)
	os.Exit(0)
}
