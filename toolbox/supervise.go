package toolbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/junction-mcp/junction/internal/privdir"
	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/sandbox"
	"github.com/junction-mcp/junction/toolbox/plugin"
	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
)

// Command is how to start a plugin process.
type Command struct {
	// Path is the program to run (looked up in PATH when it has no slash).
	Path string
	Args []string
	// Env is the plugin's environment; nil means the hub's own. The hub
	// adds the JUNCTION_TOOLBOX* variables either way. For a sandboxed
	// plugin nothing is inherited: Env holds only the variables set on top
	// of what the sandbox passes (PATH, HOME, LANG, LC_ALL and the names
	// in Sandbox.Env).
	Env []string
	// Dir is the working directory; empty means the hub's.
	Dir string
	// Sandbox, if set with a level other than "off", confines the plugin
	// (see [Sandbox]); it then always uses the unix socket handshake.
	Sandbox *Sandbox
}

func (c Command) String() string {
	return strings.Join(append([]string{c.Path}, c.Args...), " ")
}

// NewPlugin starts the plugin process cmd and supervises it until Close:
//
//   - it waits for the handshake line on the plugin's stdout (other stdout
//     lines are logged and skipped), then checks it with an Identity call;
//   - it logs each stderr line at Info under the source's name;
//   - it calls Identity every HealthInterval and kills a plugin that fails
//     HealthFailures checks in a row;
//   - when the plugin dies, calls in flight fail with
//     junction.ErrSourceDown, and it is restarted after a backoff that
//     doubles from MinBackoff to MaxBackoff (reset once a process has run
//     for a minute), for as long as the source is open;
//   - the plugin runs in its own process group, and the whole group is
//     killed when the plugin exits or is stopped, so helpers it started are
//     reaped too; once [EnableReaper] has run, a reaper in the group stops
//     it if this program dies first;
//   - with cmd.Sandbox set (a level other than "off"), it runs in a
//     sandbox as a stdio server does (docs/sandbox.md), under an init
//     that ends it and all it started when this program dies, and it
//     always gets the unix socket handshake.
//
// NewPlugin returns at once; calls wait (up to ReadyTimeout) for the
// first handshake. It fails only when cmd cannot be found or its
// sandbox level is unknown.
func NewPlugin(cmd Command, opts *Options) (*Source, error) {
	o := opts.withDefaults()
	if cmd.Path == "" {
		return nil, fmt.Errorf("toolbox %s: no plugin command given", o.Name)
	}
	if _, err := exec.LookPath(cmd.Path); err != nil {
		return nil, fmt.Errorf("toolbox %s: plugin command: %w", o.Name, err)
	}
	if _, err := cmd.Sandbox.ParsedLevel(); err != nil {
		return nil, fmt.Errorf("toolbox %s: %w", o.Name, err)
	}
	s := newSource(o)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.supervise(ctx, cmd)
	}()
	return s, nil
}

// supervise runs the plugin again and again until ctx ends.
func (s *Source) supervise(ctx context.Context, cmd Command) {
	delay := s.opts.MinBackoff
	for {
		started := time.Now()
		err := s.runOnce(ctx, cmd)
		s.markFirst() // a plugin that failed to start is as ready as it gets for now
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			delay = s.opts.MinBackoff
		}
		// Full jitter on the upper half, so many plugins do not restart in step.
		wait := delay/2 + rand.N(delay/2+1)
		s.logger.Warn("plugin stopped; restarting", "error", err, "after", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		delay = min(delay*2, s.opts.MaxBackoff)
	}
}

// runOnce starts the plugin, serves through it until it dies or ctx ends,
// and reaps it. It returns why the plugin stopped.
func (s *Source) runOnce(ctx context.Context, cmd Command) error {
	token := randomToken()
	lvl, err := cmd.Sandbox.ParsedLevel()
	if err != nil {
		return err
	}
	confined := lvl != sandbox.Off
	hubEnv := []string{plugin.EnvMagic + "=1", plugin.EnvToken + "=" + token}
	var sockDir string
	if s.opts.UnixSocket || confined {
		// A sandboxed plugin's loopback is its own: only a socket in a
		// directory both sides see reaches it.
		d, err := privdir.Make("toolbox", s.logger)
		if err != nil {
			return fmt.Errorf("socket directory: %w", err)
		}
		sockDir = d.Path
		defer d.Remove()
		hubEnv = append(hubEnv, plugin.EnvUnixDir+"="+sockDir)
	}
	var c *exec.Cmd
	if confined {
		// In a session and process group of its own (the init's), with
		// only the declared environment; no reaper: the init dies with
		// this program and takes the plugin's PID namespace with it.
		var box *sandbox.Box
		if c, box, err = s.sandboxed(cmd, hubEnv, sockDir); err != nil {
			return fmt.Errorf("start %s in its sandbox: %w", cmd, err)
		}
		defer box.Close()
	} else {
		c = exec.Command(cmd.Path, cmd.Args...)
		c.Dir = cmd.Dir
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		c.Env = append(append([]string(nil), env...), hubEnv...)
		ownProcessGroup(c)
	}
	c.Stdin = nil
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	c.Stdout, c.Stderr = outW, errW
	if err := c.Start(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return fmt.Errorf("start %s: %w", cmd, err)
	}
	outW.Close()
	errW.Close()
	pid := c.Process.Pid
	log := s.logger.With("pid", pid)
	log.Info("plugin started", "command", cmd.String())
	// Before anything reaps the plugin, so that its group exists to be
	// joined. The reaper stops the group as stop does if this program
	// dies, and pins the group's id until it is released.
	var rp *reaper.Reaper
	if !confined {
		if rp, err = reaper.Start(pid, reaper.Stages{Term: s.opts.StopTimeout}); err != nil {
			log.Warn("no reaper for the plugin: it may outlive this program if the program is killed", "error", err)
		}
	}

	var readers sync.WaitGroup
	handshake := make(chan string, 1)
	readers.Add(2)
	go func() {
		defer readers.Done()
		s.readStdout(outR, handshake, log)
	}()
	go func() {
		defer readers.Done()
		s.readStderr(errR, log, confined)
	}()
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()

	// Whatever happens next, the process group dies and the pipes close
	// before we return.
	var exitErr error
	exitSeen := false
	gone := make(chan struct{})
	defer func() {
		s.setConn(nil)
		if !exitSeen {
			exitErr = s.stop(c, exited)
		}
		killGroup(pid) // the reaper too: the group is still pinned until now
		rp.Release()
		// A grandchild holding the pipes open is dead now; close our ends
		// anyway so the readers cannot outlive us.
		closer := time.AfterFunc(time.Second, func() { outR.Close(); errR.Close() })
		readers.Wait()
		closer.Stop()
		outR.Close()
		errR.Close()
		close(gone)
		log.Info("plugin exited", "status", exitStatus(exitErr))
	}()

	// Wait for the handshake.
	timer := time.NewTimer(s.opts.HandshakeTimeout)
	defer timer.Stop()
	var line string
	select {
	case <-ctx.Done():
		return ctx.Err()
	case exitErr = <-exited:
		exitSeen = true
		return fmt.Errorf("plugin exited before its handshake: %s", exitStatus(exitErr))
	case <-timer.C:
		return fmt.Errorf("no handshake within %v", s.opts.HandshakeTimeout)
	case line = <-handshake:
	}
	hs, err := plugin.ParseHandshake(line)
	if err != nil {
		return err
	}
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	base := "http://" + hs.Address
	if hs.Network == "unix" {
		if sockDir == "" || !strings.HasPrefix(hs.Address, sockDir+string(os.PathSeparator)) {
			return fmt.Errorf("handshake: unix socket %q is outside the directory the hub gave (%s)", hs.Address, plugin.EnvUnixDir)
		}
		var d net.Dialer
		dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", hs.Address)
		}
		base = "http://plugin"
	}
	hc, err := httpClient(hs.Protocol, false, dial)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	cn := &conn{http: hc, client: newClient(hc, base, hs.Protocol, token), gone: gone}
	ictx, cancel := context.WithTimeout(ctx, s.opts.HandshakeTimeout)
	ident, err := cn.client.Identity(ictx, connect.NewRequest(&toolboxv1.IdentityRequest{}))
	cancel()
	if err != nil {
		return fmt.Errorf("first Identity call: %w", err)
	}
	cn.ident = ident.Msg
	log.Info("plugin ready", "name", ident.Msg.GetName(), "version", ident.Msg.GetVersion(), "address", hs.Address, "protocol", hs.Protocol)

	// Serve: watch for changes, check health, and wait for the end.
	live, stopLive := context.WithCancel(ctx)
	defer stopLive()
	var workers sync.WaitGroup
	defer workers.Wait()
	defer stopLive() // runs before workers.Wait
	workers.Add(1)
	go func() {
		defer workers.Done()
		s.watchLoop(live, cn)
	}()
	unhealthy := make(chan error, 1)
	if s.opts.HealthInterval > 0 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := s.healthLoop(live, cn); err != nil {
				unhealthy <- err
			}
		}()
	}
	s.setConn(cn)
	s.notifyCatalog()

	select {
	case <-ctx.Done():
		return ctx.Err()
	case exitErr = <-exited:
		exitSeen = true
		return fmt.Errorf("plugin exited: %s", exitStatus(exitErr))
	case err := <-unhealthy:
		return err
	}
}

// healthLoop calls Identity every HealthInterval and returns an error
// after HealthFailures failures in a row; it returns nil when ctx ends.
func (s *Source) healthLoop(ctx context.Context, c *conn) error {
	t := time.NewTicker(s.opts.HealthInterval)
	defer t.Stop()
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, max(s.opts.HealthInterval/2, time.Second))
		_, err := c.client.Identity(hctx, connect.NewRequest(&toolboxv1.IdentityRequest{}))
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			failures = 0
			continue
		}
		failures++
		s.logger.Warn("plugin health check failed", "failures", failures, "error", err)
		if failures >= s.opts.HealthFailures {
			return fmt.Errorf("plugin failed %d health checks in a row: %w", failures, err)
		}
	}
}

// stop ends the plugin gracefully: SIGTERM to its process group, then
// SIGKILL after StopTimeout. It returns the exit error.
func (s *Source) stop(c *exec.Cmd, exited <-chan error) error {
	pid := c.Process.Pid
	terminateGroup(c.Process)
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	select {
	case err := <-exited:
		return err
	case <-t.C:
	}
	s.logger.Warn("plugin did not stop after SIGTERM; killing it", "pid", pid, "waited", s.opts.StopTimeout)
	killGroup(pid)
	return <-exited
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// maxLine bounds one stdout or stderr line kept for the log.
const maxLine = 64 << 10

// readStdout passes the first handshake line to handshake and logs every
// other line.
func (s *Source) readStdout(r io.Reader, handshake chan<- string, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) {
	sent := false
	eachLine(r, func(line string) {
		if !sent && plugin.IsHandshake(line) {
			sent = true
			handshake <- line
			return
		}
		log.Info("plugin stdout", "line", line)
	})
}

// readStderr logs every stderr line. A sandboxed plugin's lines from the
// sandbox itself ("sandbox: warning: ...", a limit that ended the
// plugin) are logged as warnings.
func (s *Source) readStderr(r io.Reader, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}, confined bool) {
	eachLine(r, func(line string) {
		if confined && strings.HasPrefix(line, "sandbox: ") {
			log.Warn("plugin stderr", "line", line)
			return
		}
		log.Info("plugin stderr", "line", line)
	})
}

// eachLine calls f with every line of r (without the newline), cutting
// lines longer than maxLine. It returns at EOF or a read error.
func eachLine(r io.Reader, f func(string)) {
	br := bufio.NewReaderSize(r, 4096)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf) < maxLine {
			buf = append(buf, chunk[:min(len(chunk), maxLine-len(buf))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(buf) > 0 {
			f(strings.TrimRight(string(buf), "\r\n"))
		}
		buf = buf[:0]
		if err != nil {
			return
		}
	}
}
