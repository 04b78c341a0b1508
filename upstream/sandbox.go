package upstream

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/egress"
	"github.com/junction-mcp/junction/internal/sandbox"
)

// Sandbox confines a stdio server to what it declares (docs/sandbox.md):
// files, network, processes, resources and environment. The zero value
// and a nil *Sandbox run the server as junction's own user, unconfined.
type Sandbox struct {
	// Level is "off" (or empty), "on" (every layer the system has; a
	// warning for each it lacks) or "strict" (refuse to start without all
	// of them).
	Level string
	// ReadOnly and ReadWrite are more paths the server may read (and
	// execute), and write. Besides them it may read what its command
	// needs to run (the executable, its runtime's installation, the
	// system's libraries), write its runtime's package caches (~/.npm,
	// ~/.cache/uv), read the files and directories its arguments name and
	// its working directory, and write a private temporary directory.
	ReadOnly, ReadWrite []string
	// Deny are paths the server must never reach, on top of the keys and
	// credentials under the home directory that are always denied
	// (junction's own configuration and stores, say). A ReadOnly or
	// ReadWrite path that contains one is refused.
	Deny []string
	// Network are the host[:port] patterns the server may reach, through
	// an egress proxy junction runs for it; empty means no network.
	Network []string
	// Env names variables of junction's environment the server gets.
	// Besides them and Config.Env it gets PATH, HOME, LANG and LC_ALL,
	// and nothing else.
	Env []string
	// Memory (bytes, per process), CPU (time, per process), Procs and
	// Files bound the server; zero means the defaults of
	// [sandbox.DefaultLimits].
	Memory int64
	CPU    time.Duration
	Procs  int
	Files  int
}

// baseEnv are the variables a sandboxed server gets from junction's
// environment without asking.
var baseEnv = []string{"PATH", "HOME", "LANG", "LC_ALL"}

// level returns the sandbox level, Off for a nil or empty one.
func (s *Sandbox) level() (sandbox.Level, error) {
	if s == nil || s.Level == "" {
		return sandbox.Off, nil
	}
	return sandbox.ParseLevel(s.Level)
}

// Check reports a sandbox that cannot be set up as written: an unknown
// level, a network pattern that does not parse, a read-only path that
// does not exist, a path that contains a denied one. It starts nothing.
func (s *Sandbox) Check(command string, args []string, dir string) error {
	lvl, err := s.level()
	if err != nil || lvl == sandbox.Off {
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
	p, _ := s.policy(lvl, command, args, dir, nil)
	if err := p.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// policy is the sandbox policy of a server run as command args in dir,
// with extra variables set.
func (s *Sandbox) policy(lvl sandbox.Level, command string, args []string, dir string, extra map[string]string) (sandbox.Policy, error) {
	ro, rw := sandbox.DefaultPaths(command)
	ro = append(ro, argPaths(args, dir)...)
	if dir != "" {
		ro = append(ro, dir)
	}
	ro = append(ro, s.ReadOnly...)
	rw = append(rw, s.ReadWrite...)
	lim := sandbox.DefaultLimits()
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
	env = mergeEnv(env, nil, extra)
	return sandbox.Policy{Level: lvl, ReadOnly: ro, ReadWrite: rw, Deny: s.Deny, Env: env, Limits: lim}, nil
}

// argPaths returns what the server's arguments name on disk, to be
// readable: for a file inside a node_modules tree, the outermost
// node_modules directory (the package's dependencies sit beside it);
// otherwise the file or directory itself. A relative argument counts
// when it exists relative to dir.
func argPaths(args []string, dir string) []string {
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

// A box is what a sandboxed server's spawn holds besides the process:
// its private temporary directory and, with a network allowlist, the
// egress proxy on a unix socket. Close releases them.
type box struct {
	tmp   string        // the directory the sandbox mounts its tmpfs over
	sock  string        // the proxy's socket directory, or ""
	proxy *egress.Proxy // nil without network
	done  chan struct{} // closed when the proxy's Serve returns
	once  sync.Once
}

// sandboxed returns the command that starts the server in its sandbox,
// and the box to close once the server is gone. Each connection the
// proxy refuses is a sandbox event of the server.
func (t *commandTransport) sandboxed(lvl sandbox.Level) (*exec.Cmd, *box, error) {
	sb := t.cfg.Sandbox
	p, err := sb.policy(lvl, t.cfg.Command, t.cfg.Args, t.cfg.Dir, t.cfg.Env)
	if err != nil {
		return nil, nil, err
	}
	b := &box{}
	fail := func(err error) (*exec.Cmd, *box, error) {
		b.Close()
		return nil, nil, err
	}
	if b.tmp, err = os.MkdirTemp("", "junction-sandbox-tmp-"); err != nil {
		return fail(fmt.Errorf("sandbox: %w", err))
	}
	p.TempDir = b.tmp
	if len(sb.Network) > 0 {
		allow, err := egress.ParseAllowlist(sb.Network)
		if err != nil {
			return fail(fmt.Errorf("sandbox network: %w", err))
		}
		if b.sock, err = os.MkdirTemp("", "junction-egress-"); err != nil {
			return fail(fmt.Errorf("sandbox: %w", err))
		}
		path := filepath.Join(b.sock, "proxy.sock")
		l, err := net.Listen("unix", path)
		if err != nil {
			return fail(fmt.Errorf("sandbox: egress proxy: %w", err))
		}
		logger := t.logger.With("component", "egress")
		b.proxy = egress.New(egress.Config{Allow: allow, Logger: logger, OnConn: t.egressEvent})
		b.done = make(chan struct{})
		go func() {
			defer close(b.done)
			b.proxy.Serve(l)
		}()
		p.ProxySocket = path
		p.ReadWrite = append(p.ReadWrite, b.sock)
	}
	cmd, err := sandbox.Command(p, t.cfg.Command, t.cfg.Args, t.cfg.Dir)
	if err != nil {
		return fail(err)
	}
	return cmd, b, nil
}

// egressEvent records a connection the egress proxy refused.
func (t *commandTransport) egressEvent(ev egress.Event) {
	if ev.Outcome == "allowed" {
		return
	}
	t.sandboxNote(fmt.Sprintf("network: %s to %s:%d %s: %s", ev.Proto, ev.Host, ev.Port, ev.Outcome, ev.Reason))
}

// Close stops the proxy and removes the box's directories. It is safe to
// call more than once and on a partly built box.
func (b *box) Close() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		if b.proxy != nil {
			b.proxy.Close()
			<-b.done
		}
		for _, d := range []string{b.sock, b.tmp} {
			if d != "" {
				if err := os.RemoveAll(d); err != nil {
					slog.Debug("sandbox: removing a private directory", "dir", d, "error", err)
				}
			}
		}
	})
}

// EnableSandbox lets this program start sandboxed servers: a program that
// embeds the upstream package and sets [Config.Sandbox] calls it first
// thing in main, as junction's own main does; in a process started as a
// sandbox's init or its exec stage it does that work and never returns.
func EnableSandbox() { sandbox.Enable() }
