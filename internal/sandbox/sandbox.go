package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Level is how much confinement a server gets.
type Level int

const (
	// Off runs the server as a plain child process: nothing but the
	// policy's environment and directory applies.
	Off Level = iota
	// On applies every layer the kernel supports and writes one warning
	// line per layer it could not apply to the server's stderr.
	On
	// Strict applies every layer or refuses to start the server.
	Strict
)

// String returns "off", "on" or "strict".
func (l Level) String() string {
	switch l {
	case Off:
		return "off"
	case On:
		return "on"
	case Strict:
		return "strict"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// ParseLevel parses "off", "on" or "strict" (as a config file says them).
func ParseLevel(s string) (Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "false", "no":
		return Off, nil
	case "on", "true", "yes", "":
		return On, nil
	case "strict":
		return Strict, nil
	}
	return Off, fmt.Errorf("sandbox: unknown level %q (want off, on or strict)", s)
}

// Limits bounds what a sandboxed server may use. A zero field sets no
// limit of that kind.
type Limits struct {
	// Memory is the most private writable memory (RLIMIT_DATA), in
	// bytes, of each process of the server. RLIMIT_DATA rather than
	// RLIMIT_AS: runtimes such as V8 and Go reserve far more address space
	// than they use.
	Memory int64
	// CPU is the most CPU time each process may use (RLIMIT_CPU): at
	// CPU it gets SIGXCPU, a second later SIGKILL.
	CPU time.Duration
	// Procs is the most tasks (processes and threads) of the server at
	// once: RLIMIT_NPROC, which in the sandbox's own user namespace
	// counts only the sandbox's tasks, the init's few threads included.
	// It does not bind uid 0 (junction run as root); the PID namespace's
	// pid_max (Linux 6.14 and later) then bounds the tasks to
	// max(Procs, 300) instead.
	Procs int
	// Files is the most open file descriptors per process
	// (RLIMIT_NOFILE).
	Files int
	// TempSize is the size of the private temporary directory's tmpfs;
	// 0 means 256 MiB.
	TempSize int64
}

// DefaultLimits are limits fit for a typical node or python MCP server.
func DefaultLimits() Limits {
	return Limits{
		Memory: 4 << 30,
		Procs:  512,
		Files:  4096,
	}
}

// Policy is what a sandboxed server may do.
type Policy struct {
	Level Level
	// ReadOnly and ReadWrite are the absolute paths (files or
	// directories, with all beneath them) the server may read (and
	// execute), or read, write, create and remove in. [DefaultPaths]
	// computes what a command needs. Every sandbox may also read /proc
	// (its own PID namespace's) and use /dev/null, /dev/zero, /dev/full,
	// /dev/random, /dev/urandom and /dev/tty. A ReadOnly path that does
	// not exist is left out; a ReadWrite one is created (a directory,
	// mode 0700) by [Command].
	ReadOnly, ReadWrite []string
	// Deny lists paths no ReadOnly or ReadWrite entry may contain or lie
	// in (junction's config, token store, keys). [SensitivePaths] are
	// always denied as well.
	Deny []string
	// Env is exactly the environment the server gets: nothing is
	// inherited. The sandbox adds TMPDIR when TempDir is set and the
	// proxy variables when ProxySocket is.
	Env []string
	// ProxySocket, when set, is the path of a unix socket of an egress
	// proxy junction runs (HTTP, with CONNECT). In the sandbox's own
	// network namespace, which otherwise has only a loopback interface,
	// 127.0.0.1:PORT forwards to it, and HTTP_PROXY, HTTPS_PROXY and
	// ALL_PROXY (and their lower-case forms) say http://127.0.0.1:PORT.
	// When empty the server has no network at all.
	ProxySocket string
	Limits      Limits
	// TempDir, when set, is an existing directory over which the sandbox
	// mounts a private tmpfs (Limits.TempSize), writable by the server and
	// named by TMPDIR; what is under it on the host is hidden. "/tmp" is
	// a good choice unless ReadOnly or ReadWrite lists paths under it.
	TempDir string
}

// ErrUnsupported is returned (wrapped) by [Command] when the policy's
// level needs what this system lacks.
var ErrUnsupported = errors.New("sandbox: not supported")

// SensitivePaths are the paths under home that no policy may expose:
// keys, credentials and other programs' configuration.
func SensitivePaths(home string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for _, p := range []string{
		".ssh", ".gnupg", ".aws", ".azure", ".config", ".kube", ".docker",
		".netrc", ".npmrc", ".pypirc", ".git-credentials", ".password-store",
		".local/share/keyrings", ".mozilla", ".bash_history", ".zsh_history",
	} {
		out = append(out, filepath.Join(home, p))
	}
	return out
}

// Validate checks the policy: absolute paths, and no ReadOnly or
// ReadWrite entry that contains or lies in a denied path (Deny or
// [SensitivePaths] of the user's home directory).
func (p *Policy) Validate() error {
	if p.Level < Off || p.Level > Strict {
		return fmt.Errorf("sandbox: invalid level %d", int(p.Level))
	}
	home, _ := os.UserHomeDir()
	deny := append(append([]string(nil), p.Deny...), SensitivePaths(home)...)
	for _, d := range p.Deny {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("sandbox: denied path %q is not absolute", d)
		}
	}
	check := func(kind string, list []string) error {
		for _, e := range list {
			if !filepath.IsAbs(e) {
				return fmt.Errorf("sandbox: %s path %q is not absolute", kind, e)
			}
			ce := filepath.Clean(e)
			if ce == "/" {
				return fmt.Errorf("sandbox: %s path %q is the whole file system", kind, e)
			}
			for _, d := range deny {
				cd := filepath.Clean(d)
				if within(cd, ce) || within(ce, cd) {
					return fmt.Errorf("sandbox: %s path %s would expose %s, which is denied", kind, e, d)
				}
				// The same through symbolic links.
				re, err1 := filepath.EvalSymlinks(ce)
				rd, err2 := filepath.EvalSymlinks(cd)
				if err1 == nil && err2 == nil && (within(rd, re) || within(re, rd)) {
					return fmt.Errorf("sandbox: %s path %s (%s) would expose %s, which is denied", kind, e, re, d)
				}
			}
		}
		return nil
	}
	if err := check("read-only", p.ReadOnly); err != nil {
		return err
	}
	if err := check("read-write", p.ReadWrite); err != nil {
		return err
	}
	if p.TempDir != "" {
		if !filepath.IsAbs(p.TempDir) {
			return fmt.Errorf("sandbox: temp dir %q is not absolute", p.TempDir)
		}
		td := filepath.Clean(p.TempDir)
		for _, e := range append(append([]string(nil), p.ReadOnly...), p.ReadWrite...) {
			if within(td, filepath.Clean(e)) && filepath.Clean(e) != td {
				return fmt.Errorf("sandbox: path %s lies in the temp dir %s, whose tmpfs would hide it", e, td)
			}
		}
	}
	if p.ProxySocket != "" && !filepath.IsAbs(p.ProxySocket) {
		return fmt.Errorf("sandbox: proxy socket %q is not absolute", p.ProxySocket)
	}
	if p.Limits.Memory < 0 || p.Limits.CPU < 0 || p.Limits.Procs < 0 || p.Limits.Files < 0 || p.Limits.TempSize < 0 {
		return errors.New("sandbox: negative limit")
	}
	if p.Limits.Memory != 0 && p.Limits.Memory < 16<<20 {
		return fmt.Errorf("sandbox: memory limit %d bytes is below 16 MiB", p.Limits.Memory)
	}
	return nil
}

// within reports whether path is dir or lies beneath it.
func within(dir, path string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// Names a sandbox process has as argv[0], as ps shows them.
const (
	// InitName is the sandbox's init: PID 1 of its PID namespace.
	InitName = "junction-sandbox"
	// execName is the short-lived stage that confines itself and execs
	// the server (PID 2).
	execName  = "junction-sandbox-exec"
	probeName = "junction-sandbox-probe"
)

// envName selects the sandbox stage of a re-executed junction; envSpec
// carries the serialised spec.
const (
	envName = "JUNCTION_SANDBOX"
	envSpec = "JUNCTION_SANDBOX_SPEC"
)

// maxSpec bounds the serialised spec (an environment string may hold
// 128 KiB).
const maxSpec = 120 << 10

// Enable runs the sandbox's stages. Call it first thing in main: in a
// process started as a sandbox stage (by [Command] or [Check]) it does
// that stage's work and never returns; in any other process it returns
// at once.
func Enable() {
	stage := os.Getenv(envName)
	if stage == "" || len(os.Args) == 0 {
		return
	}
	switch {
	case stage == "init" && os.Args[0] == InitName:
		runInit()
	case stage == "exec" && os.Args[0] == execName:
		runExec()
	case stage == "probe" && os.Args[0] == probeName:
		runProbe()
	}
}
