//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"golang.org/x/sys/unix"
)

// Exit statuses of a sandbox that did not get as far as the server.
const (
	exitSetup    = 125 // a layer could not be applied (Strict), or the spec is bad
	exitNoExec   = 126 // the server's executable may not be run
	exitNotFound = 127 // it does not exist
)

func readSpec() (spec, error) {
	var sp spec
	err := json.Unmarshal([]byte(os.Getenv(envSpec)), &sp)
	return sp, err
}

// say writes one line to stderr, which junction logs as the server's.
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sandbox: "+format+"\n", args...)
}

// runInit is the init stage: PID 1 of the sandbox's PID namespace.
func runInit() {
	syscall.Exit(initMain())
}

func initMain() int {
	sp, err := readSpec()
	if err != nil {
		say("bad spec: %v", err)
		return exitSetup
	}
	p := &sp.Policy
	ls := &layers{level: p.Level}
	need := ls.need
	if sp.NS {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			need("making mounts private", err)
		} else {
			err := mountProc()
			sp.ProcOK = err == nil
			need("mounting a fresh /proc (/proc is hidden from the server)", err)
			if p.TempDir != "" {
				size := p.Limits.TempSize
				if size == 0 {
					size = 256 << 20
				}
				err := unix.Mount("tmpfs", p.TempDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV,
					"mode=0700,size="+strconv.FormatInt(size, 10))
				sp.TempOK = err == nil
				need("mounting the temp dir's tmpfs on "+p.TempDir, err)
			}
			if p.Limits.Procs > 0 && sp.ProcOK {
				n := max(p.Limits.Procs+1, 301)
				if err := setPIDMax(n); err != nil && os.Geteuid() == 0 {
					// For uid 0 it is the only bound on tasks.
					need("setting the PID namespace's pid_max", err)
				}
			}
		}
		unix.Sethostname([]byte("sandbox"))
		if p.ProxySocket != "" {
			need("bringing up lo", loopbackUp())
		}
	} else {
		need("namespaces", errors.New("user namespaces are unavailable: no PID, mount or network namespace"))
		// Orphans of the server come to the init, which reaps them.
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	if p.ProxySocket != "" && !ls.failed {
		port, err := forward(p.ProxySocket)
		need("starting the proxy forwarder", err)
		sp.Port = port
	}
	if ls.failed {
		return exitSetup
	}
	b, err := json.Marshal(sp)
	if err != nil {
		say("%v", err)
		return exitSetup
	}

	sigs := make(chan os.Signal, 32)
	relayed := []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}
	signal.Notify(sigs, append(relayed, syscall.SIGCHLD)...)
	pid, err := syscall.ForkExec("/proc/self/exe", []string{execName}, &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{envName + "=exec", envSpec + "=" + string(b)},
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		say("starting the server: %v", err)
		return exitSetup
	}
	// The server holds stdin and stdout now; the init keeps only
	// stderr, so the caller sees them close when the server does.
	if null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err == nil {
		unix.Dup3(null, 0, unix.O_CLOEXEC)
		unix.Dup3(null, 1, unix.O_CLOEXEC)
		unix.Close(null)
	}
	start := time.Now()
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			syscall.Kill(pid, sig.(syscall.Signal))
			continue
		}
		for {
			var ws syscall.WaitStatus
			var ru syscall.Rusage
			got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, &ru)
			if err == syscall.EINTR {
				continue
			}
			if got <= 0 {
				break
			}
			if got == pid {
				code := report(p, ws, &ru, time.Since(start))
				endAll(sp.NS)
				return code
			}
		}
	}
	return exitSetup
}

// report writes a line when a limit probably ended the server and
// returns the init's exit status: the server's, or 128+n for signal n.
func report(p *Policy, ws syscall.WaitStatus, ru *syscall.Rusage, _ time.Duration) int {
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	lim := p.Limits
	switch {
	case ws.Signaled() && ws.Signal() == syscall.SIGXCPU,
		ws.Signaled() && ws.Signal() == syscall.SIGKILL && lim.CPU > 0 && cpu >= lim.CPU:
		say("server ended by the CPU limit (%s)", lim.CPU)
	case lim.Memory > 0 && !(ws.Exited() && ws.ExitStatus() == 0) && ru.Maxrss*1024 >= lim.Memory/2:
		// The limit bounds the memory mapped, which a runtime maps
		// before it touches it (a Go heap grows by arenas of 64 MiB, and
		// its metadata beside them), so a server can meet it with far
		// less resident: a Go server allocating to a limit of 256 MiB
		// ended with 227 MiB resident in most runs, and once, beside a
		// busy processor, early enough that three quarters of the limit
		// was not reached and no line said why it ended.
		say("server ended, probably by the memory limit (%s): it had reached %s", size(lim.Memory), size(ru.Maxrss*1024))
	}
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// endAll kills what the server left running: in a PID namespace every
// other process (the kernel would do so as the init exits anyway); else
// the init's process group.
func endAll(ns bool) {
	if ns && os.Getpid() == 1 {
		syscall.Kill(-1, syscall.SIGKILL)
		return
	}
	self := os.Getpid()
	pids, _ := reaper.GroupMembers(syscall.Getpgrp())
	for _, pid := range pids {
		if pid != self {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// mountProc mounts a fresh /proc, which shows the new PID namespace's
// processes only.
func mountProc() error {
	return unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// setPIDMax sets the PID namespace's pid_max (Linux 6.14): at most n-1
// tasks at once.
func setPIDMax(n int) error {
	return os.WriteFile("/proc/sys/kernel/pid_max", []byte(strconv.Itoa(n)), 0)
}

// loopbackUp brings up lo in the network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// forward listens on 127.0.0.1 (in the sandbox's network namespace) and
// forwards each connection to the proxy's unix socket; it returns the
// port. It runs in the init, which is outside the server's Landlock
// domain and seccomp filter.
func forward(sock string) (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			go relay(c, sock)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func relay(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		say("proxy %s: %v", sock, err)
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(u, c)
		u.(*net.UnixConn).CloseWrite()
		done <- struct{}{}
	}()
	io.Copy(c, u)
	c.(*net.TCPConn).CloseWrite()
	<-done
}

// layers tracks the layers of a sandbox stage as they are applied.
type layers struct {
	level  Level
	failed bool // a layer could not be applied at level Strict
}

// need reports a layer that could not be applied (err not nil): Strict
// refuses to start the server, On warns and goes on without it.
func (ls *layers) need(what string, err error) {
	if err == nil {
		return
	}
	if ls.level == Strict {
		say("refusing to start the server: %s: %v", what, err)
		ls.failed = true
		return
	}
	say("warning: %s: %v (continuing without it)", what, err)
}
