//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary is the sandbox's init and exec stages (/proc/self/exe);
// the hostile server is sandboxtest, built once with go build (or named
// by SANDBOX_TEST_HOSTILE, for a run as another user without a Go
// toolchain of its own).
var (
	hostileOnce sync.Once
	hostileDir  string
	hostileExe  string
	hostileErr  error
)

func TestMain(m *testing.M) {
	Enable()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if hostileDir != "" {
			os.RemoveAll(hostileDir)
		}
	}))
}

func hostile(t testing.TB) string {
	t.Helper()
	hostileOnce.Do(func() {
		if p := os.Getenv("SANDBOX_TEST_HOSTILE"); p != "" {
			hostileExe = p
			return
		}
		hostileDir, hostileErr = os.MkdirTemp("", "sandboxtest")
		if hostileErr != nil {
			return
		}
		hostileExe = filepath.Join(hostileDir, "sandboxtest")
		cmd := exec.Command("go", "build", "-o", hostileExe, "./sandboxtest")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			hostileErr = errors.New("go build ./sandboxtest: " + err.Error() + "\n" + string(out))
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileExe
}

// fixture is a fake home with a secret in ~/.ssh, a read-write dir and a
// policy for the hostile server.
type fixture struct {
	home, secret, rw string
	policy           Policy
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{home: t.TempDir(), rw: t.TempDir()}
	t.Setenv("HOME", f.home)
	if err := os.Mkdir(filepath.Join(f.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	f.secret = filepath.Join(f.home, ".ssh", "id_ed25519")
	if err := os.WriteFile(f.secret, []byte("SECRET KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	exe := hostile(t)
	ro, rw := DefaultPaths(exe)
	f.policy = Policy{
		Level:     Strict,
		ReadOnly:  ro,
		ReadWrite: append(rw, f.rw),
		Env:       []string{"PATH=/usr/bin:/bin", "HOME=" + f.home, "DECLARED=yes"},
		Limits:    Limits{Files: 256},
	}
	if m := cachedSupport().Missing(f.policy); len(m) > 0 {
		t.Logf("level on (this system lacks: %s)", strings.Join(m, "; "))
		f.policy.Level = On
	}
	return f
}

type result struct {
	out, err string
	code     int
	lines    map[string]string // "key: value" lines of stdout
}

// run runs the hostile server in p with args and waits for it (and for
// everything holding its stdout) to end.
func run(t *testing.T, p Policy, args ...string) result {
	t.Helper()
	cmd, err := Command(p, hostile(t), args, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	// A process left holding stdout after the server ended fails the
	// test instead of hanging it.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stuck := time.AfterFunc(2*time.Minute, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer stuck.Stop()
	err = cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("something in the sandbox outlived the server, holding its stdout\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	r := result{out: out.String(), err: errb.String(), code: cmd.ProcessState.ExitCode(), lines: map[string]string{}}
	for _, line := range strings.Split(r.out, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			r.lines[k] = v
		}
	}
	t.Logf("%v: exit %d\nstdout:\n%sstderr:\n%s", args, r.code, r.out, r.err)
	return r
}

func (r result) denied(t *testing.T, key string) {
	t.Helper()
	v, ok := r.lines[key]
	if !ok {
		t.Errorf("%s: no result", key)
	} else if !strings.HasPrefix(v, "err:") {
		t.Errorf("%s: %s, want an error", key, v)
	}
}

func (r result) allowed(t *testing.T, key string) {
	t.Helper()
	if v := r.lines[key]; v != "ok" {
		t.Errorf("%s: %q, want ok", key, v)
	}
}

func needLandlock(t *testing.T, abi int) {
	t.Helper()
	if got := cachedSupport().LandlockABI; got < abi {
		t.Skipf("the kernel's Landlock ABI is %d, this needs %d", got, abi)
	}
}

func needNS(t *testing.T) {
	t.Helper()
	if s := cachedSupport(); !s.UserNS || !s.ProcMount {
		t.Skipf("no user namespaces or fresh /proc here: %v", s.Problems)
	}
}

func TestCheck(t *testing.T) {
	s := Check()
	for _, l := range s.Lines() {
		t.Log(l)
	}
	if s.OS != "linux" {
		t.Fatal(s.OS)
	}
}

func TestValidateDenied(t *testing.T) {
	f := newFixture(t)
	jc := filepath.Join(f.rw, "junction")
	for _, tc := range []struct {
		name string
		edit func(*Policy)
	}{
		{"home read-only", func(p *Policy) { p.ReadOnly = append(p.ReadOnly, f.home) }},
		{"ssh read-write", func(p *Policy) { p.ReadWrite = append(p.ReadWrite, filepath.Join(f.home, ".ssh", "x")) }},
		{"config", func(p *Policy) { p.ReadOnly = append(p.ReadOnly, filepath.Join(f.home, ".config", "junction")) }},
		{"caller's deny", func(p *Policy) { p.Deny = []string{jc} }},
		{"relative", func(p *Policy) { p.ReadOnly = append(p.ReadOnly, "usr/lib") }},
		{"root", func(p *Policy) { p.ReadOnly = append(p.ReadOnly, "/") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.policy
			p.ReadOnly = append([]string(nil), p.ReadOnly...)
			p.ReadWrite = append([]string(nil), p.ReadWrite...)
			tc.edit(&p)
			_, err := Command(p, hostile(t), nil, "")
			if err == nil {
				t.Fatal("Command accepted the policy")
			}
			t.Log(err)
		})
	}
}

func TestFiles(t *testing.T) {
	needLandlock(t, 1)
	f := newFixture(t)
	outside := filepath.Join(f.home, "planted")
	inside := filepath.Join(f.rw, "written")

	// Control: unconfined, the attempts succeed (so the test can fail).
	off := f.policy
	off.Level = Off
	r := run(t, off, "read", f.secret)
	r.allowed(t, "read "+f.secret)

	r = run(t, f.policy, "read", f.secret, "/etc/shadow", filepath.Join(f.home, ".ssh"))
	r.denied(t, "read "+f.secret)
	r.denied(t, "read /etc/shadow")
	r = run(t, f.policy, "write", outside, "/etc/junction-pwned", inside)
	r.denied(t, "write "+outside)
	r.denied(t, "write /etc/junction-pwned")
	r.allowed(t, "write "+inside)
	if _, err := os.Stat(outside); err == nil {
		t.Error("the server wrote outside its paths")
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "pwned\n" {
		t.Errorf("read-write path: %q, %v", b, err)
	}
}

func TestTempDir(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	f.policy.TempDir = t.TempDir()
	r := run(t, f.policy, "tmp")
	r.allowed(t, "tmp "+f.policy.TempDir)
	if _, err := os.Stat(filepath.Join(f.policy.TempDir, "x")); err == nil {
		t.Error("the temp dir's file reached the host: no private tmpfs")
	}
}

func TestNetwork(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	off := f.policy
	off.Level = Off
	run(t, off, "connect", addr).allowed(t, "connect "+addr)

	r := run(t, f.policy, "connect", addr)
	r.denied(t, "connect "+addr)
	r = run(t, f.policy, "dns", "example.com")
	r.denied(t, "dns example.com")
	ln.Close()
	<-accepted
}

func TestProxy(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the "proxy": echoes a line
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "proxy echo: "+line)
			c.Close()
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()
	f.policy.ProxySocket = sock
	r := run(t, f.policy, "proxy")
	r.allowed(t, "proxy")
	if !strings.HasPrefix(r.lines["proxy said"], "proxy echo: hello through 127.0.0.1:") {
		t.Errorf("proxy said %q", r.lines["proxy said"])
	}
	r = run(t, f.policy, "env")
	if !strings.Contains(r.out, "env HTTPS_PROXY=http://127.0.0.1:") || !strings.Contains(r.out, "env https_proxy=http://127.0.0.1:") {
		t.Error("no proxy variables")
	}
}

func TestEnv(t *testing.T) {
	f := newFixture(t)
	t.Setenv("JUNCTION_SECRET_TOKEN", "leak")
	r := run(t, f.policy, "env")
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(r.out), "\n") {
		got = append(got, strings.TrimPrefix(l, "env "))
	}
	want := []string{"DECLARED=yes", "HOME=" + f.home, "PATH=/usr/bin:/bin"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("environment:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPIDNamespace(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	r := run(t, f.policy, "pid")
	// The init is PID 1; its runtime's threads take the next few
	// numbers, so the server's is small but not 2.
	pid, _ := strconv.Atoi(r.lines["pid"])
	if pid < 2 || pid > 64 || r.lines["ppid"] != "1" {
		t.Errorf("pid %s ppid %s, want a small pid and 1", r.lines["pid"], r.lines["ppid"])
	}
	if want := "1," + r.lines["pid"]; r.lines["procs"] != want {
		t.Errorf("/proc shows %s, want %s (the init and the server only)", r.lines["procs"], want)
	}
}

func TestParent(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	r := run(t, f.policy, "parent")
	r.denied(t, "ptrace")
	r.denied(t, "environ")
	r.denied(t, "mem")
	if cachedSupport().LandlockABI >= 6 {
		r.denied(t, "kill")
		r.denied(t, "kill-term")
	} else {
		t.Log("Landlock ABI < 6: kill is not denied, but SIGKILL from inside cannot end a PID namespace's init")
	}
	if r.code != 0 {
		t.Errorf("exit %d: the init did not survive", r.code)
	}
}

func TestPrivileges(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	// A setuid copy of the hostile program in the read-write dir.
	suid := filepath.Join(f.rw, "suid")
	b, err := os.ReadFile(hostile(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(suid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(suid, 0o4755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	r := run(t, f.policy, "privs", suid)
	want := map[string]string{
		"status NoNewPrivs": "1",
		"status CapEff":     "0000000000000000",
		"status CapPrm":     "0000000000000000",
		"status CapAmb":     "0000000000000000",
		"status CapBnd":     "0000000000000000",
		"status Seccomp":    "2",
	}
	for _, l := range strings.Split(r.out, "\n") {
		for wk, wv := range want {
			if strings.HasPrefix(l, wk+" ") {
				if got := strings.TrimPrefix(l, wk+" "); got != wv {
					t.Errorf("%s = %s, want %s", wk, got, wv)
				}
				delete(want, wk)
			}
		}
	}
	for wk := range want {
		t.Errorf("no %s line", wk)
	}
	uid := strconv.Itoa(os.Getuid())
	if !strings.Contains(r.out, "setuid: euid "+uid) {
		t.Errorf("setuid program: want euid %s", uid)
	}
	r.denied(t, "mount")
	r.denied(t, "unshare")
	r.denied(t, "chroot")
}

func TestEscape(t *testing.T) {
	needLandlock(t, 1)
	needNS(t)
	f := newFixture(t)
	r := run(t, f.policy, "escape", f.secret)
	n := 0
	for k := range r.lines {
		if strings.HasPrefix(k, "escape ") {
			r.denied(t, k)
			n++
		}
	}
	if n < 5 {
		t.Errorf("%d escape attempts reported, want 5", n)
	}
}

func TestSymlinkRace(t *testing.T) {
	needLandlock(t, 1)
	f := newFixture(t)
	r := run(t, f.policy, "symlink", f.rw, f.secret, "2000")
	r.allowed(t, "symlink")
	r.denied(t, "read via symlink")
	if !strings.HasPrefix(r.lines["race"], "leaked 0 ") {
		t.Errorf("race: %s", r.lines["race"])
	}
}

func TestForkBomb(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	f.policy.Limits.Procs = 32
	bound := 32
	if os.Geteuid() == 0 {
		if !cachedSupport().PIDMax {
			t.Skip("running as root, which RLIMIT_NPROC does not bind, on a kernel without per-namespace pid_max")
		}
		bound = 300 // pid_max
	}
	r := run(t, f.policy, "forkbomb", "2000")
	n, err := strconv.Atoi(r.lines["forked"])
	if err != nil {
		t.Fatalf("no count: %v", err)
	}
	if n >= bound {
		t.Errorf("forked %d processes, want fewer than %d", n, bound)
	}
	r.denied(t, "fork")
	if !strings.Contains(r.lines["fork"], "resource temporarily unavailable") {
		t.Errorf("fork failed with %s, want EAGAIN", r.lines["fork"])
	}
}

func TestMemoryBomb(t *testing.T) {
	f := newFixture(t)
	f.policy.Limits.Memory = 256 << 20
	r := run(t, f.policy, "membomb", "4096")
	if _, ok := r.lines["allocated"]; ok || r.code == 0 {
		t.Errorf("the memory bomb was not stopped (exit %d)", r.code)
	}
	if !strings.Contains(r.err, "sandbox: server ended, probably by the memory limit (256 MiB)") {
		t.Error("no line naming the memory limit")
	}
}

func TestCPULimit(t *testing.T) {
	f := newFixture(t)
	f.policy.Limits.CPU = time.Second
	r := run(t, f.policy, "cpu")
	if r.code != 128+int(syscall.SIGXCPU) && r.code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d, want %d (SIGXCPU)", r.code, 128+int(syscall.SIGXCPU))
	}
	if !strings.Contains(r.err, "sandbox: server ended by the CPU limit (1s)") {
		t.Error("no line naming the CPU limit")
	}
}

func TestDaemonEndsWithServer(t *testing.T) {
	needNS(t)
	f := newFixture(t)
	r := run(t, f.policy, "daemon") // fails if the daemon holds stdout past WaitDelay
	r.allowed(t, "daemon")
}

func TestSignalRelay(t *testing.T) {
	f := newFixture(t)
	cmd, err := Command(f.policy, hostile(t), []string{"cat"}, "")
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A round trip: the server runs and echoes.
	io.WriteString(w, "ping\n")
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("echo: %q, %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	w.Close()
	if got := cmd.ProcessState.ExitCode(); got != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d (the server ended by the relayed SIGTERM)", got, 128+int(syscall.SIGTERM))
	}
}

func TestStdinEOF(t *testing.T) {
	f := newFixture(t)
	cmd, err := Command(f.policy, hostile(t), []string{"cat"}, "")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = strings.NewReader("line one\nline two\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "line one\nline two\n" {
		t.Fatalf("%q, %v", out, err)
	}
}

// BenchmarkSpawn measures start to exit of /bin/true, unconfined (off)
// and in a sandbox (on): the difference is the sandbox's cost per spawn.
func BenchmarkSpawn(b *testing.B) {
	ro, _ := DefaultPaths("/bin/true")
	for _, lvl := range []Level{Off, On} {
		b.Run(lvl.String(), func(b *testing.B) {
			p := Policy{Level: lvl, ReadOnly: ro, Env: []string{"PATH=/usr/bin:/bin"}, Limits: DefaultLimits()}
			cachedSupport()
			for b.Loop() {
				cmd, err := Command(p, "/bin/true", nil, "/")
				if err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}
