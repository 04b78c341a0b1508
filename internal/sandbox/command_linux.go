//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// spec is what the init and exec stages get, serialised in envSpec.
type spec struct {
	Policy Policy
	Path   string   // the server's executable, absolute
	Args   []string // its argv
	Dir    string
	NS     bool // started in new namespaces
	// Set by the init for the exec stage:
	ProcOK bool // a fresh /proc is mounted
	TempOK bool // the temp dir's tmpfs is mounted
	Port   int  // the proxy forwarder's port, 0 without
}

const cloneFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
	syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP

// nsAttr is the SysProcAttr of a process started in the sandbox's new
// namespaces, mapping the caller's uid and gid to themselves.
func nsAttr() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:                 cloneFlags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		// A session of its own: no controlling terminal to open or
		// inject into, and a process group (pgid = pid) for the caller
		// (and internal/reaper) to signal.
		Setsid:    true,
		Pdeathsig: syscall.SIGKILL,
		// What the init needs in the new namespaces (mounts, pid_max,
		// lo; CAP_SETPCAP for the exec stage to empty the bounding
		// set), kept across its exec for an ordinary user, whose
		// capabilities exec would otherwise clear. The exec stage drops
		// them all before the server runs.
		AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_SETPCAP},
	}
}

// Command returns a command that runs the program path (looked up in
// the PATH of p.Env, else junction's, when it has no slash) with args in
// directory dir, confined by p. Unless p.Level is Off it is junction
// itself (/proc/self/exe) started as the sandbox's init in new
// namespaces, with the policy in its environment; the init runs the
// server and exits with its status (128+n when signal n ended it). The
// caller sets Stdin, Stdout and Stderr (they reach the server as they
// are: use *os.File pipes) and starts it; the command is in a session
// and process group of its own. Killing the command's process (or its
// group) ends everything in the sandbox.
//
// With Level Strict, Command fails (wrapping [ErrUnsupported]) when the
// system lacks a layer the policy needs.
func Command(p Policy, path string, args []string, dir string) (*exec.Cmd, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	exe, err := lookPath(path, p.Env, dir)
	if err != nil {
		return nil, err
	}
	env := p.Env
	if env == nil {
		env = []string{} // nil would inherit junction's
	}
	argv := append([]string{path}, args...)
	if p.Level == Off {
		return &exec.Cmd{
			Path: exe, Args: argv, Env: env, Dir: dir,
			SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		}, nil
	}
	s := cachedSupport()
	if missing := s.Missing(p); p.Level == Strict && len(missing) > 0 {
		return nil, fmt.Errorf("%w: level strict refuses to start %s: %s", ErrUnsupported, path, strings.Join(missing, "; "))
	}
	for _, d := range p.ReadWrite {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return nil, fmt.Errorf("sandbox: creating read-write path: %w", err)
			}
		}
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	sp := spec{Policy: p, Path: exe, Args: argv, Dir: dir, NS: s.UserNS}
	sp.Policy.Env = env
	b, err := json.Marshal(sp)
	if err != nil {
		return nil, err
	}
	if len(b) > maxSpec {
		return nil, fmt.Errorf("sandbox: policy too large (%d bytes, at most %d)", len(b), maxSpec)
	}
	cmd := &exec.Cmd{
		// This program, even if its file was replaced since it started.
		Path: "/proc/self/exe",
		Args: []string{InitName},
		Env:  []string{envName + "=init", envSpec + "=" + string(b)},
		Dir:  "/",
	}
	if sp.NS {
		cmd.SysProcAttr = nsAttr()
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	}
	return cmd, nil
}

// lookPath resolves path as the server's exec would: a name without a
// slash in PATH (env's, else junction's), a relative path against dir.
func lookPath(path string, env []string, dir string) (string, error) {
	if path == "" {
		return "", errors.New("sandbox: empty command")
	}
	if strings.Contains(path, "/") {
		if !filepath.IsAbs(path) {
			base := dir
			if base == "" {
				base, _ = os.Getwd()
			}
			path = filepath.Join(base, path)
		}
		return path, nil
	}
	pathEnv, found := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathEnv, found = v, true
		}
	}
	if !found {
		pathEnv = os.Getenv("PATH")
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		f := filepath.Join(d, path)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", fmt.Errorf("sandbox: %s: %w", path, exec.ErrNotFound)
}

var (
	supportOnce sync.Once
	supportVal  Support
)

func cachedSupport() Support {
	supportOnce.Do(func() { supportVal = Check() })
	return supportVal
}

// probeResult is what the probe stage prints.
type probeResult struct {
	ProcMount, Loopback, PIDMax bool
	Problems                    []string
}

// Check reports what this kernel offers a sandbox. It starts this
// program once as a probe in new namespaces (a few milliseconds), so the
// program must call [Enable] first in main.
func Check() Support {
	s := Support{OS: "linux", Root: os.Geteuid() == 0}
	s.LandlockABI = landlockABI()
	s.Seccomp = seccompSupported()
	s.CgroupV2 = delegatedCgroup()
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{probeName},
		Env:         []string{envName + "=probe"},
		Dir:         "/",
		SysProcAttr: nsAttr(),
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
			msg = "cannot create user namespaces (" + err.Error() + "): see kernel.unprivileged_userns_clone, user.max_user_namespaces or AppArmor's restrict_unprivileged_userns"
		} else if stderr.Len() > 0 {
			msg += ": " + strings.TrimSpace(stderr.String())
		}
		s.Problems = append(s.Problems, msg)
		return s
	}
	var r probeResult
	if err := json.Unmarshal(out, &r); err != nil {
		s.Problems = append(s.Problems, "the namespace probe said nothing readable (does main call sandbox.Enable first?)")
		return s
	}
	s.UserNS = true
	s.ProcMount, s.Loopback, s.PIDMax = r.ProcMount, r.Loopback, r.PIDMax
	s.Problems = append(s.Problems, r.Problems...)
	return s
}

// runProbe is the probe stage: it tries what the init does and prints
// the result.
func runProbe() {
	var r probeResult
	note := func(what string, err error) bool {
		if err != nil {
			r.Problems = append(r.Problems, what+": "+err.Error())
			return false
		}
		return true
	}
	if note("making / private", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")) {
		r.ProcMount = note("mounting /proc", mountProc())
		if r.ProcMount {
			r.PIDMax = setPIDMax(400) == nil
		}
	}
	r.Loopback = note("bringing up lo", loopbackUp())
	b, _ := json.Marshal(r)
	os.Stdout.Write(b)
	syscall.Exit(0)
}

// delegatedCgroup returns this process's cgroup v2 directory when it is
// delegated (writable, with memory and pids available), else "".
func delegatedCgroup() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	var rel string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "0::"); ok {
			rel = v
		}
	}
	if rel == "" {
		return ""
	}
	mnt := ""
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, x := range fields {
			if x == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				mnt = fields[4]
			}
		}
	}
	if mnt == "" {
		return ""
	}
	dir := filepath.Join(mnt, rel)
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return ""
	}
	c := " " + strings.TrimSpace(string(ctl)) + " "
	if !strings.Contains(c, " memory ") || !strings.Contains(c, " pids ") {
		return ""
	}
	if unix.Access(dir, unix.W_OK) != nil || unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) != nil {
		return ""
	}
	return dir
}
