package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/egress"
	"github.com/junction-mcp/junction/internal/privdir"
)

// Spec is a sandbox as a user declares it (docs/sandbox.md): files,
// network, processes, resources and environment. It is what
// upstream.Sandbox (a stdio server) and toolbox.Sandbox (a toolbox
// plugin) are; [Spec.Command] turns it into a [Policy] for one process
// and prepares what that process needs besides (a private temporary
// directory, an egress proxy). The zero value and a nil *Spec run the
// process as junction's own user, unconfined.
type Spec struct {
	// Level is "off" (or empty), "on" (every layer the system has; a
	// warning for each it lacks) or "strict" (refuse to start without all
	// of them).
	Level string
	// ReadOnly and ReadWrite are more paths the process may read (and
	// execute), and write. Besides them it may read what its command
	// needs to run (the executable, its runtime's installation, the
	// system's libraries), write its runtime's package caches (~/.npm,
	// ~/.cache/uv), read the files and directories its arguments name and
	// its working directory, and write a private temporary directory.
	ReadOnly, ReadWrite []string
	// Deny are paths the process must never reach, on top of the keys and
	// credentials under the home directory that are always denied
	// (junction's own configuration and stores, say). A ReadOnly or
	// ReadWrite path that contains one is refused.
	Deny []string
	// Network are the host[:port] patterns the process may reach, through
	// an egress proxy junction runs for it; empty means no network.
	Network []string
	// Env names variables of junction's environment the process gets.
	// Besides them and the variables its configuration sets it gets PATH,
	// HOME, LANG and LC_ALL, and nothing else.
	Env []string
	// Memory (bytes, per process), CPU (time, per process), Procs and
	// Files bound the process; zero means the defaults of
	// [DefaultLimits].
	Memory int64
	CPU    time.Duration
	Procs  int
	Files  int
}

// baseEnv are the variables a sandboxed process gets from junction's
// environment without asking.
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_ALL"}

// ParsedLevel returns the spec's level, [Off] for a nil or empty one.
func (s *Spec) ParsedLevel() (Level, error) {
	if s == nil || s.Level == "" {
		return Off, nil
	}
	return ParseLevel(s.Level)
}

// Check reports a sandbox that cannot be set up as written for command
// args run in dir: an unknown level, a network pattern that does not
// parse, a read-only path that does not exist, a path that contains a
// denied one. It starts nothing.
func (s *Spec) Check(command string, args []string, dir string) error {
	lvl, err := s.ParsedLevel()
	if err != nil || lvl == Off {
		return err
	}
	var errs []error
	if _, err := egress.ParseAllowlist(s.Network); err != nil {
		errs = append(errs, fmt.Errorf("network: %w", err))
	}
	for _, p := range s.ReadOnly {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("read_only: %s does not exist (create it, or take it out of the list)", p))
		} else if err != nil {
			errs = append(errs, fmt.Errorf("read_only: %w", err))
		}
	}
	p := s.policy(lvl, command, args, dir, nil)
	if err := p.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// policy is the sandbox policy of a process run as command args in dir,
// with extra variables set.
func (s *Spec) policy(lvl Level, command string, args []string, dir string, extra map[string]string) Policy {
	ro, rw := DefaultPaths(command)
	ro = append(ro, ArgPaths(args, dir)...)
	if dir != "" {
		ro = append(ro, dir)
	}
	ro = append(ro, s.ReadOnly...)
	rw = append(rw, s.ReadWrite...)
	lim := DefaultLimits()
	if s.Memory > 0 {
		lim.Memory = s.Memory
	}
	if s.CPU > 0 {
		lim.CPU = s.CPU
	}
	if s.Procs > 0 {
		lim.Procs = s.Procs
	}
	if s.Files > 0 {
		lim.Files = s.Files
	}
	var env []string
	for _, name := range append(slices.Clone(baseEnv), s.Env...) {
		if _, set := extra[name]; set {
			continue
		}
		if v, ok := os.LookupEnv(name); ok && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") }) {
			env = append(env, name+"="+v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	// git, which many servers run, stops at a configuration file it may
	// not read: the user's own (~/.gitconfig), unless the sandbox lets it
	// be read, is replaced by none.
	if _, set := extra["GIT_CONFIG_GLOBAL"]; !set {
		home, _ := os.UserHomeDir()
		if gc := filepath.Join(home, ".gitconfig"); home == "" || !slices.Contains(ro, gc) && !slices.Contains(rw, gc) {
			env = append(env, "GIT_CONFIG_GLOBAL=/dev/null")
		}
	}
	return Policy{Level: lvl, ReadOnly: ro, ReadWrite: rw, Deny: s.Deny, Env: env, Limits: lim}
}

// ArgPaths returns what a command's arguments name on disk, to be
// readable: for a file inside a node_modules tree, the outermost
// node_modules directory (the package's dependencies sit beside it);
// otherwise the file or directory itself. A relative argument counts
// when it exists relative to dir.
func ArgPaths(args []string, dir string) []string {
	var out []string
	for _, a := range args {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			if dir == "" || !strings.ContainsRune(p, filepath.Separator) {
				continue
			}
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		p = filepath.Clean(p)
		if i := strings.Index(p, string(filepath.Separator)+"node_modules"+string(filepath.Separator)); i >= 0 {
			p = p[:i+len("/node_modules")]
		}
		out = append(out, p)
	}
	return out
}

// A Box is what a sandboxed process's spawn holds besides the process:
// its private temporary directory and, with a network allowlist, the
// egress proxy on a unix socket. Close releases them once the process is
// gone. A nil *Box is valid and holds nothing.
type Box struct {
	tmp   *privdir.Dir  // the directory the sandbox mounts its tmpfs over
	sock  *privdir.Dir  // the proxy's socket directory; nil without network
	proxy *egress.Proxy // nil without network
	done  chan struct{} // closed when the proxy's Serve returns
	once  sync.Once
}

// Command returns the command (not yet started) that runs command args
// in dir in the spec's sandbox, with env set on top of the environment
// the spec allows (nothing else is inherited), and the [Box] to close
// once the process is gone. The command runs in a session and process
// group of its own, under an init that dies with this program.
//
// With a Network list it starts an egress proxy on a unix socket for the
// process; logger (nil: none) gets its records, and refused, if not nil,
// is called with a line describing each connection the proxy refuses
// ("network: CONNECT to host:443 refused: ..."), the process's sandbox
// events.
func (s *Spec) Command(command string, args []string, dir string, env map[string]string, logger *slog.Logger, refused func(string)) (*exec.Cmd, *Box, error) {
	lvl, err := s.ParsedLevel()
	if err != nil {
		return nil, nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := s.policy(lvl, command, args, dir, env)
	b := &Box{}
	fail := func(err error) (*exec.Cmd, *Box, error) {
		b.Close()
		return nil, nil, err
	}
	if b.tmp, err = privdir.Make("sandbox-tmp", logger); err != nil {
		return fail(fmt.Errorf("sandbox: %w", err))
	}
	p.TempDir = b.tmp.Path
	if len(s.Network) > 0 {
		allow, err := egress.ParseAllowlist(s.Network)
		if err != nil {
			return fail(fmt.Errorf("sandbox network: %w", err))
		}
		if b.sock, err = privdir.Make("egress", logger); err != nil {
			return fail(fmt.Errorf("sandbox: %w", err))
		}
		path := filepath.Join(b.sock.Path, "proxy.sock")
		l, err := net.Listen("unix", path)
		if err != nil {
			return fail(fmt.Errorf("sandbox: egress proxy: %w", err))
		}
		onConn := func(ev egress.Event) {
			if ev.Outcome != "allowed" && refused != nil {
				refused(fmt.Sprintf("network: %s to %s:%d %s: %s", ev.Proto, ev.Host, ev.Port, ev.Outcome, ev.Reason))
			}
		}
		b.proxy = egress.New(egress.Config{Allow: allow, Logger: logger.With("component", "egress"), OnConn: onConn})
		b.done = make(chan struct{})
		go func() {
			defer close(b.done)
			b.proxy.Serve(l)
		}()
		p.ProxySocket = path
		p.ReadWrite = append(p.ReadWrite, b.sock.Path)
	}
	cmd, err := Command(p, command, args, dir)
	if err != nil {
		return fail(err)
	}
	return cmd, b, nil
}

// Close stops the proxy and removes the box's directories. It is safe to
// call more than once, on a partly built box and on nil.
func (b *Box) Close() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		if b.proxy != nil {
			b.proxy.Close()
			<-b.done
		}
		for _, d := range []*privdir.Dir{b.sock, b.tmp} {
			if err := d.Remove(); err != nil {
				slog.Debug("sandbox: removing a private directory", "dir", d.Path, "error", err)
			}
		}
	})
}
