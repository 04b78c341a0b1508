//go:build linux

package sandbox

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runExec is the exec stage (PID 2): on one thread it sets the limits,
// drops every capability, sets no_new_privs, applies Landlock and the
// seccomp filter, and execs the server from that thread, which the
// server's process then consists of.
func runExec() {
	runtime.LockOSThread() // never unlocked: the thread's credentials change
	syscall.Exit(execMain())
}

func execMain() int {
	sp, err := readSpec()
	if err != nil {
		say("bad spec: %v", err)
		return exitSetup
	}
	p := &sp.Policy
	ls := &layers{level: p.Level}
	need := ls.need
	if sp.Dir != "" {
		if err := os.Chdir(sp.Dir); err != nil {
			say("server directory: %v", err)
			return exitSetup
		}
	}

	// The Landlock ruleset, built while paths can still be opened.
	var ll *landlockRules
	if abi := landlockABI(); abi == 0 {
		need("Landlock", errors.New("unavailable: file system access is not restricted"))
	} else if ll, err = newLandlock(abi); err != nil {
		need("Landlock", err)
	} else {
		add := func(path string, rights uint64, mustExist bool) {
			missing, err := ll.addPath(path, rights)
			if err == nil && missing && mustExist {
				err = errors.New(path + " does not exist")
			}
			need("Landlock", err)
		}
		for _, d := range p.ReadOnly {
			add(d, llRead, false)
		}
		for _, d := range p.ReadWrite {
			add(d, ^uint64(0), true)
		}
		for _, d := range deviceFiles {
			add(d, llDevice, false)
		}
		if sp.ProcOK {
			// The sandbox's own /proc: its processes only.
			add("/proc", llRead, true)
		}
		if p.TempDir != "" && sp.TempOK {
			add(p.TempDir, ^uint64(0), true)
		}
		if sp.Port > 0 {
			need("Landlock", ll.allowConnect(sp.Port))
		}
	}
	if ls.failed {
		return exitSetup
	}

	need("dropping capabilities", dropCaps())
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		say("no_new_privs: %v", err)
		return exitSetup
	}
	if ll != nil {
		need("Landlock", ll.restrict())
	}
	if !seccompSupported() {
		need("seccomp", errors.New("unavailable: dangerous system calls are not blocked"))
	} else {
		need("seccomp", loadSeccomp(filter{}, 0))
	}
	if ls.failed {
		return exitSetup
	}

	// Limits, last: a runtime that maps memory as it goes (a race-enabled
	// binary) could trip them. For this process; the server's children
	// inherit them.
	l := p.Limits
	setLimit := func(what string, res int, v uint64, hard uint64) {
		need("the "+what+" limit", unix.Setrlimit(res, &unix.Rlimit{Cur: v, Max: hard}))
	}
	if l.Memory > 0 {
		setLimit("memory", unix.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory))
	}
	if l.CPU > 0 {
		s := uint64((l.CPU + 999_999_999) / 1_000_000_000)
		setLimit("CPU", unix.RLIMIT_CPU, s, s+1)
	}
	if l.Files > 0 {
		setLimit("open files", unix.RLIMIT_NOFILE, uint64(l.Files), uint64(l.Files))
	}
	if l.Procs > 0 {
		setLimit("process", unix.RLIMIT_NPROC, uint64(l.Procs), uint64(l.Procs))
	}
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})

	if ls.failed {
		return exitSetup
	}

	env := append([]string(nil), p.Env...)
	if p.TempDir != "" && sp.TempOK {
		env = setEnv(env, "TMPDIR", p.TempDir)
	}
	if sp.Port > 0 {
		u := "http://127.0.0.1:" + strconv.Itoa(sp.Port)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
			env = setEnv(env, k, u)
		}
		env = setEnv(env, "NO_PROXY", "")
		env = setEnv(env, "no_proxy", "")
	}
	err = syscall.Exec(sp.Path, sp.Args, env)
	switch {
	case errors.Is(err, syscall.ENOENT):
		say("cannot run %s: %v", sp.Path, err)
		return exitNotFound
	case errors.Is(err, syscall.EACCES):
		say("cannot run %s: %v (is it, and its interpreter, under the policy's read-only paths?)", sp.Path, err)
		return exitNoExec
	}
	say("cannot run %s: %v", sp.Path, err)
	return exitNoExec
}

func setEnv(env []string, k, v string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return append(out, k+"="+v)
}

// dropCaps empties the calling thread's capability sets (all of them:
// bounding, ambient, inheritable, permitted, effective) and locks the
// securebits so that uid 0 in the sandbox (junction run as root) gains
// none back on exec.
func dropCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		// Empty the bounding set: uid 0 in the sandbox (junction run as
		// root) would get all of it back on exec; for another uid it is
		// defence in depth.
		last := unix.CAP_LAST_CAP
		if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				last = n
			}
		}
		for c := 0; c <= last; c++ {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
				return err
			}
		}
		// NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED (KEEP_CAPS off),
		// NO_CAP_AMBIENT_RAISE, each locked.
		const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
			return err
		}
	}
	data = [2]unix.CapUserData{}
	return unix.Capset(&hdr, &data[0])
}
