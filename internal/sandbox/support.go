package sandbox

import (
	"fmt"
	"strings"
)

// Support is what this system offers a sandbox, as [Check] found it.
type Support struct {
	OS string // runtime.GOOS
	// UserNS: an unprivileged process can start a child in new user,
	// mount, PID, network, IPC and UTS namespaces (the probe did).
	UserNS bool
	// ProcMount: a fresh /proc for the new PID namespace could be
	// mounted (it can fail where /proc is partly masked, as in some
	// containers).
	ProcMount bool
	// Loopback: lo could be brought up in the new network namespace.
	Loopback bool
	// PIDMax: the PID namespace has its own pid_max (Linux 6.14), which
	// bounds the tasks of a sandbox even for uid 0.
	PIDMax bool
	// LandlockABI is the kernel's Landlock ABI version; 0 without
	// Landlock. 1: file system; 4: TCP bind/connect; 6: signal and
	// abstract unix socket scoping.
	LandlockABI int
	// Seccomp: seccomp filters can be loaded.
	Seccomp bool
	// CgroupV2 is the delegated (writable, memory and pids enabled)
	// cgroup v2 directory this process is in, or "".
	CgroupV2 string
	// Root: junction runs as uid 0, which RLIMIT_NPROC does not bind.
	Root bool
	// Problems says why a probe failed, one line each.
	Problems []string
}

// Lines describes the support in human-readable lines, for `junction
// sandbox check`.
func (s Support) Lines() []string {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	var l []string
	if s.OS != "linux" {
		l = append(l, fmt.Sprintf("system: %s: no sandbox (level on and strict refuse to start servers)", s.OS))
		return l
	}
	l = append(l,
		"user namespaces (with mount, PID, network, IPC, UTS): "+yes(s.UserNS),
		"fresh /proc in the PID namespace: "+yes(s.ProcMount),
		"loopback in the network namespace: "+yes(s.Loopback),
		"per-namespace pid_max (task ceiling for root): "+yes(s.PIDMax),
	)
	switch {
	case s.LandlockABI == 0:
		l = append(l, "Landlock: NO (file system access is not restricted)")
	default:
		var has []string
		has = append(has, "file system")
		if s.LandlockABI >= 4 {
			has = append(has, "TCP")
		}
		if s.LandlockABI >= 6 {
			has = append(has, "signal and abstract socket scoping")
		}
		l = append(l, fmt.Sprintf("Landlock: ABI %d (%s)", s.LandlockABI, strings.Join(has, ", ")))
	}
	l = append(l, "seccomp filters: "+yes(s.Seccomp))
	if s.CgroupV2 != "" {
		l = append(l, "cgroup v2 delegated: "+s.CgroupV2+" (limits still use rlimits)")
	} else {
		l = append(l, "cgroup v2 delegated: no (limits use rlimits)")
	}
	if s.Root {
		if s.PIDMax {
			l = append(l, "running as root: RLIMIT_NPROC does not apply; pid_max bounds tasks to at least 300")
		} else {
			l = append(l, "running as root: RLIMIT_NPROC does not apply and there is no per-namespace pid_max: the process limit is NOT enforced")
		}
	}
	for _, p := range s.Problems {
		l = append(l, "problem: "+p)
	}
	return l
}

// Missing lists what policy p needs that s lacks, one line each: what a
// server at level Strict is refused for, and at level On warned about.
// [StrictPolicy] needs every layer.
func (s Support) Missing(p Policy) []string {
	if s.OS != "linux" {
		return []string{"no sandbox on " + s.OS}
	}
	var m []string
	if !s.UserNS {
		m = append(m, "user namespaces are unavailable: no PID, mount or network namespace (the server shares the network)")
	} else {
		if !s.ProcMount {
			m = append(m, "a fresh /proc cannot be mounted: /proc is hidden from the server")
		}
		if p.ProxySocket != "" && !s.Loopback {
			m = append(m, "loopback cannot be brought up: the proxy is unreachable")
		}
	}
	if s.LandlockABI == 0 {
		m = append(m, "Landlock is unavailable: file system access is not restricted")
	} else {
		if s.LandlockABI < 6 {
			m = append(m, fmt.Sprintf("Landlock ABI %d lacks signal scoping (ABI 6)", s.LandlockABI))
		}
		if !s.UserNS && s.LandlockABI < 4 {
			m = append(m, fmt.Sprintf("Landlock ABI %d cannot restrict TCP (ABI 4) and there is no network namespace", s.LandlockABI))
		}
	}
	if !s.Seccomp {
		m = append(m, "seccomp is unavailable: dangerous system calls are not blocked")
	}
	if p.Limits.Procs > 0 && s.Root && !s.PIDMax {
		m = append(m, "running as root without per-namespace pid_max: the process limit cannot be enforced")
	}
	return m
}

// StrictPolicy is the most demanding policy [Support.Missing] judges: a
// network list (the loopback and its proxy) and a process limit.
var StrictPolicy = Policy{Level: Strict, ProxySocket: "proxy.sock", Limits: Limits{Procs: 1}}
