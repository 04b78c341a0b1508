//go:build linux

// Command sandboxtest is the hostile server of internal/sandbox's tests:
// each mode tries one thing a sandboxed server must not be able to do
// (or must) and prints what happened, one "key: value" line per attempt,
// "ok" for success and "err: ..." for failure. The tests build it with
// go build and run it in a sandbox.
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func result(key string, err error) {
	if err != nil {
		fmt.Printf("%s: err: %v\n", key, err)
		return
	}
	fmt.Printf("%s: ok\n", key)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sandboxtest MODE [ARGS]")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "read": // read PATH...
		for _, p := range args {
			_, err := os.ReadFile(p)
			result("read "+p, err)
		}
	case "write": // write PATH...
		for _, p := range args {
			result("write "+p, os.WriteFile(p, []byte("pwned\n"), 0o600))
		}
	case "connect": // connect HOST:PORT
		c, err := net.Dial("tcp", args[0])
		if err == nil {
			c.Close()
		}
		result("connect "+args[0], err)
	case "dns": // dns NAME
		_, err := net.LookupHost(args[0])
		result("dns "+args[0], err)
	case "env":
		env := os.Environ()
		sort.Strings(env)
		for _, kv := range env {
			fmt.Println("env " + kv)
		}
	case "pid":
		fmt.Printf("pid: %d\nppid: %d\n", os.Getpid(), os.Getppid())
		ents, err := os.ReadDir("/proc")
		var pids []string
		for _, e := range ents {
			if _, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, e.Name())
			}
		}
		fmt.Printf("procs: %s\n", strings.Join(pids, ","))
		result("readdir /proc", err)
	case "parent": // ptrace and kill the parent (the init)
		ppid := os.Getppid()
		result("ptrace", syscall.PtraceAttach(ppid))
		result("kill", syscall.Kill(ppid, syscall.SIGKILL))
		result("kill-term", syscall.Kill(ppid, syscall.SIGTERM))
		_, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", ppid))
		result("environ", err)
		f, err := os.Open(fmt.Sprintf("/proc/%d/mem", ppid))
		if err == nil {
			f.Close()
		}
		result("mem", err)
	case "privs": // the status lines that matter, then a setuid binary's view
		b, _ := os.ReadFile("/proc/self/status")
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"NoNewPrivs", "CapEff", "CapPrm", "CapBnd", "CapAmb", "Seccomp:"} {
				if strings.HasPrefix(line, k) {
					f := strings.Fields(line)
					fmt.Println("status " + strings.TrimSuffix(f[0], ":") + " " + strings.Join(f[1:], " "))
				}
			}
		}
		fmt.Printf("uid: %d euid: %d\n", os.Getuid(), os.Geteuid())
		if len(args) > 0 { // a setuid copy of this program
			out, err := exec.Command(args[0], "ids").CombinedOutput()
			fmt.Printf("setuid: %s", out)
			result("setuid run", err)
		}
		result("mount", syscall.Mount("tmpfs", "/mnt", "tmpfs", 0, ""))
		result("unshare", syscall.Unshare(syscall.CLONE_NEWUSER))
		result("chroot", syscall.Chroot("/"))
	case "ids":
		fmt.Printf("euid %d\n", os.Geteuid())
	case "escape": // escape SECRET: reach it through /proc's magic links
		s := args[0]
		for _, p := range []string{
			"/proc/1/root" + s, "/proc/self/root" + s, "/proc/thread-self/root" + s,
			"/proc/1/cwd/" + filepath.Base(s),
		} {
			_, err := os.ReadFile(p)
			result("escape "+p, err)
		}
		// An open directory fd of an allowed path, then .. upwards.
		fd, err := syscall.Open("/proc/self/fd", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		if err == nil {
			nfd, err := syscall.Openat(fd, "../../1/root"+s, syscall.O_RDONLY, 0)
			if err == nil {
				syscall.Close(nfd)
			}
			result("escape openat", err)
			syscall.Close(fd)
		}
	case "symlink": // symlink DIR SECRET ROUNDS: race a link in DIR between a file there and SECRET
		dir, secret := args[0], args[1]
		rounds, _ := strconv.Atoi(args[2])
		safe := filepath.Join(dir, "safe")
		os.WriteFile(safe, []byte("safe\n"), 0o600)
		link := filepath.Join(dir, "link")
		result("symlink", os.Symlink(secret, link))
		_, err := os.ReadFile(link)
		result("read via symlink", err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			tmp := filepath.Join(dir, "link.tmp")
			for i := 0; i < rounds; i++ {
				target := safe
				if i%2 == 0 {
					target = secret
				}
				os.Remove(tmp)
				os.Symlink(target, tmp)
				os.Rename(tmp, link)
			}
		}()
		leaked, safeReads := 0, 0
		for i := 0; i < rounds; i++ {
			b, err := os.ReadFile(link)
			if err == nil && string(b) != "safe\n" {
				leaked++
			} else if err == nil {
				safeReads++
			}
		}
		<-done
		fmt.Printf("race: leaked %d safe %d\n", leaked, safeReads)
	case "forkbomb": // forkbomb MAX: start sleepers until fork fails or MAX
		max, _ := strconv.Atoi(args[0])
		n := 0
		var err error
		for ; n < max; n++ {
			_, err = syscall.ForkExec("/bin/sleep", []string{"sleep", "1000"}, &syscall.ProcAttr{})
			if err != nil {
				break
			}
		}
		fmt.Printf("forked: %d\n", n)
		result("fork", err)
	case "membomb": // membomb MAXMIB: allocate and touch until it fails
		max, _ := strconv.Atoi(args[0])
		var keep [][]byte
		for i := 0; i < max/16; i++ {
			b := make([]byte, 16<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			keep = append(keep, b)
		}
		fmt.Printf("allocated: %d MiB\n", len(keep)*16)
	case "cpu": // burn CPU for ever
		x := 0
		for {
			x++
		}
	case "daemon": // start a grandchild that leaves the session and holds stdout
		cmd := exec.Command(os.Args[0], "hold")
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		result("daemon", cmd.Start())
		fmt.Printf("daemon pid: %d\n", cmd.Process.Pid)
		// Exit without waiting: the daemon is orphaned to the init.
	case "hold":
		for { // for ever, stdout open
			unix.Pause()
		}
	case "proxy": // talk through HTTP_PROXY: send a line, read it back
		u := os.Getenv("HTTP_PROXY")
		addr := strings.TrimPrefix(u, "http://")
		c, err := net.Dial("tcp", addr)
		if err != nil {
			result("proxy", err)
			return
		}
		fmt.Fprintf(c, "hello through %s\n", addr)
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		fmt.Printf("proxy said: %s", line)
		result("proxy", err)
	case "tmp":
		d := os.Getenv("TMPDIR")
		result("tmp "+d, os.WriteFile(filepath.Join(d, "x"), []byte("x"), 0o600))
	case "cat":
		io.Copy(os.Stdout, os.Stdin)
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", os.Args[1])
		os.Exit(2)
	}
}
