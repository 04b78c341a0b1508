package upstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/sandbox"
	"github.com/junction-mcp/junction/wire"
)

// maxLineLength bounds one line read from a stdio server. A longer line is
// discarded (and logged) rather than buffered.
const maxLineLength = wire.DefaultMaxLine

// stdoutPipeSize is the capacity asked for the pipe of a stdio server's
// stdout (see wire.GrowPipe). Pipe pages are allocated as data is written, so
// an idle pipe costs no more, but the size counts against the user's pipe
// quota (/proc/sys/fs/pipe-user-pages-soft, 64 MiB by default; past it
// the user's new pipes get 8 KiB). 256 KiB forwarded 1 MiB results as
// fast as 1 MiB did (BenchmarkForward/fast/result-1MiB, then named fastup: 260-290 MB/s
// against 220-320; the default 64 KiB: 130-220) at a quarter of the quota.
var stdoutPipeSize = 256 << 10

// commandTransport is the client side of a stdio upstream. Unlike
// go-sdk's mcp.CommandTransport it
//   - runs the server in its own process group and stops the whole group
//     (close stdin, wait, SIGTERM, wait, SIGKILL), so wrappers such as npx
//     and uvx leave nothing behind, and, once EnableReaper has run, starts
//     a reaper in that group that does the same if this program dies;
//   - logs and skips lines on stdout that are not JSON-RPC messages, where
//     go-sdk's decoder ends the session on the first one;
//   - sends the server's stderr to the logger line by line.
type commandTransport struct {
	cfg     Config
	logger  *slog.Logger
	observe func(method string, params json.RawMessage) // counts what the server sends about calls (Server.observe)
	note    func(string)                                // records a sandbox event (Server.sandboxNote); nil: none
	conn    *stdioConn                                  // set by Connect
}

// sandboxNote records a sandbox event, if the transport has somewhere to.
func (t *commandTransport) sandboxNote(text string) {
	if t.note != nil {
		t.note(text)
	}
}

var _ mcp.Transport = (*commandTransport)(nil)

// Connect starts the process. ctx only bounds the start: the process lives
// until the returned connection is closed.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lvl, err := t.cfg.Sandbox.ParsedLevel()
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	var cmd *exec.Cmd
	var box *sandbox.Box
	if lvl != sandbox.Off {
		// In a session and process group of its own, with only the
		// declared environment (see sandbox.go).
		if cmd, box, err = t.sandboxed(); err != nil {
			return nil, fmt.Errorf("spawn %q in its sandbox: %w", t.cfg.Command, err)
		}
	} else {
		cmd = exec.Command(t.cfg.Command, t.cfg.Args...)
		cmd.Dir = t.cfg.Dir
		cmd.Env = mergeEnv(os.Environ(), t.cfg.UnsetEnv, t.cfg.Env)
		setProcessGroup(cmd)
	}
	// A sandboxed server needs no reaper: its init is PID 1 of a PID
	// namespace and dies with junction (its parent-death signal), which
	// ends every process in the namespace; and a reaper could not join
	// its process group, which is in a session of its own.
	reaping := reaper.Enabled() && box == nil
	if reaping {
		clearParentDeathSignal(cmd)
	}

	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		box.Close()
		return nil, fmt.Errorf("spawn: %w", err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		box.Close()
		return nil, fmt.Errorf("spawn: %w", err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		stdoutR.Close()
		stdoutW.Close()
		box.Close()
		return nil, fmt.Errorf("spawn: %w", err)
	}
	// Results are the large messages: a bigger stdout pipe takes a
	// megabyte in four writes rather than sixteen. Best effort.
	if err := wire.GrowPipe(stdoutR, stdoutPipeSize); err != nil {
		t.logger.Debug("could not grow the stdout pipe", "error", err)
	}
	// The child gets its ends as *os.File, so exec starts no copying
	// goroutines and Wait waits for the process only.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
	err = cmd.Start()
	stdinR.Close()
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		stderrR.Close()
		box.Close()
		return nil, fmt.Errorf("spawn %q: %w", t.cfg.Command, err)
	}
	c := &stdioConn{
		box:        box,
		note:       t.sandboxNote,
		logger:     t.logger.With("pid", cmd.Process.Pid),
		cmd:        cmd,
		pgid:       cmd.Process.Pid,
		stop:       reaper.Stages{Grace: t.cfg.stopTimeout(), Term: t.cfg.stopTimeout()},
		stdout:     stdoutR,
		stderr:     stderrR,
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
	}
	c.endErr = sync.OnceValue(c.exitError)
	if reaping {
		// The leader cannot have been reaped yet (only c.wait does that),
		// so its group exists to be joined.
		if c.reaper, err = reaper.Start(c.pgid, c.stop); err != nil {
			c.logger.Warn("no reaper for the server: it may outlive this program if the program is killed", "error", err)
		}
	}
	c.serverConn = newServerConn(stdinPipe{File: stdinW, broken: c.serverEnded}, stdoutR, &serverConnOptions{
		Logger:   c.logger,
		MaxLine:  cmp.Or(t.cfg.maxLine, maxLineLength),
		Observe:  t.observe,
		EndError: func() error { c.serverEnded(); return c.endErr() },
	})
	t.conn = c
	c.wg.Add(2)
	go c.readStderr()
	go c.wait()
	return c, nil
}

// mergeEnv returns base without the variables in unset and with extra
// set on top (extra sorted by key, for deterministic output).
func mergeEnv(base, unset []string, extra map[string]string) []string {
	if len(extra) == 0 && len(unset) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := cutEnv(kv)
		if _, override := extra[k]; !override && !slices.Contains(unset, k) {
			out = append(out, kv)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

func cutEnv(kv string) (string, string, bool) {
	for i := 1; i < len(kv); i++ { // a leading '=' belongs to the key (Windows)
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// stdioConn is a mcp.Connection to a child process: its [serverConn] on
// its pipes, and the process. It owns two
// goroutines (stderr reader, process waiter) beside the connection's
// stdout reader; Close stops the process group and waits for all three.
type stdioConn struct {
	*serverConn
	box    *sandbox.Box // the sandbox's temporary directory and egress proxy; nil when not sandboxed
	note   func(string) // records a sandbox event
	logger *slog.Logger
	cmd    *exec.Cmd
	pgid   int
	stop   reaper.Stages  // each stage the stop timeout
	reaper *reaper.Reaper // nil without one; released by Close

	stdout *os.File
	stderr *os.File

	exited  chan struct{} // closed by wait when the leader exits
	waitErr error         // set by wait before closing exited

	stderrDone chan struct{} // closed by readStderr when it returns
	lastMu     sync.Mutex    // guards lastLines
	lastLines  []string      // the last lines read from stderr (at most keptLines), for exitError

	endErr func() error // exitError, computed once
	// endedFirst is set when the server ended the connection before
	// junction closed it (its stdout ended, or its stdin was found
	// closed): endErr then says how the server ended.
	endedFirst atomic.Bool
	closing    atomic.Bool // Close has begun

	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// exitError describes why stdout ended: the server's exit status and the
// last lines it wrote on stderr (often the reason: a missing key, a bad
// argument, a stack), or that it closed stdout without exiting. stdout usually
// ends a moment before the exit is reaped, so it waits for the exit and
// the end of stderr, up to exitGrace.
func (c *stdioConn) exitError() error {
	grace := time.NewTimer(exitGrace)
	defer grace.Stop()
	select {
	case <-c.exited:
	case <-grace.C:
		return fmt.Errorf("server closed stdout: %w", io.EOF)
	}
	select {
	case <-c.stderrDone:
	case <-grace.C: // a child keeps stderr open; wait's deadline ends it later
	}
	msg := "server exited"
	if c.waitErr != nil {
		msg += ": " + c.waitErr.Error()
	}
	c.lastMu.Lock()
	last := slices.Clone(c.lastLines)
	c.lastMu.Unlock()
	switch len(last) {
	case 0:
	case 1:
		msg += fmt.Sprintf(" (last line on stderr: %q)", last[0])
	default:
		quoted := make([]string, len(last))
		for i, l := range last {
			quoted[i] = strconv.Quote(l)
		}
		msg += fmt.Sprintf(" (last %d lines on stderr: %s)", len(last), strings.Join(quoted, ", "))
	}
	return fmt.Errorf("%s: %w", msg, io.EOF)
}

// exitGrace bounds how long exitError waits for the exit of a server
// whose stdout ended.
const exitGrace = 500 * time.Millisecond

// maxLastLine bounds each stderr line an exit error quotes, and keptLines
// how many it quotes.
const (
	maxLastLine = 200
	keptLines   = 5
)

// keepLastLine remembers line, trimmed and bounded, if it is not blank,
// with the keptLines-1 before it.
func (c *stdioConn) keepLastLine(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	last := string(line)
	if len(last) > maxLastLine {
		last = last[:maxLastLine] + "..."
	}
	c.lastMu.Lock()
	if len(c.lastLines) == keptLines {
		c.lastLines = append(c.lastLines[:0], c.lastLines[1:]...)
	}
	c.lastLines = append(c.lastLines, last)
	c.lastMu.Unlock()
}

// readStderr logs the server's stderr line by line.
func (c *stdioConn) readStderr() {
	defer c.wg.Done()
	defer close(c.stderrDone)
	r := wire.NewLineReader(c.stderr, 64<<10)
	for {
		line, tooLong, err := r.Next()
		if tooLong {
			c.logger.Info("stderr", "line", "(over-long line skipped)")
		} else if len(line) > 0 {
			c.logger.Info("stderr", "line", string(line))
			c.keepLastLine(line)
			if c.box != nil && bytes.HasPrefix(line, []byte("sandbox: ")) {
				// The sandbox's own lines: a layer it could not apply, a
				// limit that ended the server.
				c.note(string(line))
			}
		}
		if err != nil {
			return
		}
	}
}

// wait reaps the group leader. Once it has exited, the readers get a
// short grace to drain what it wrote, then their pipes time out, so a
// grandchild that keeps stdout open cannot keep a dead session alive.
func (c *stdioConn) wait() {
	defer c.wg.Done()
	c.waitErr = c.cmd.Wait()
	close(c.exited)
	deadline := time.Now().Add(500 * time.Millisecond)
	c.stdout.SetReadDeadline(deadline)
	c.stderr.SetReadDeadline(deadline)
}

// Close stops the server: it closes stdin and waits, then sends SIGTERM
// to the process group and waits, then SIGKILL, each wait bounded by the
// configured stop timeout; then it releases the reaper. It is safe to call
// more than once and concurrently; later calls return the first call's
// result.
// serverEnded notes that the server's end of the connection is gone,
// unless junction is closing it.
func (c *stdioConn) serverEnded() {
	if !c.closing.Load() {
		c.endedFirst.Store(true)
	}
}

// stdinPipe is a server's stdin. A write that finds the pipe closed (the
// server exited, or closed its stdin) means the server ended first.
type stdinPipe struct {
	*os.File
	broken func()
}

func (p stdinPipe) Write(b []byte) (int, error) {
	n, err := p.File.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.broken()
	}
	return n, err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closing.Store(true)
		c.serverConn.Close() // closes stdin
		c.closeErr = reaper.StopGroup(c.pgid, c.stop, c.logger, c.waitGroupGone, c.cmd.Process)
		c.reaper.Release()
		c.stdout.Close()
		// The group is gone, so stderr ends once its last lines are read
		// (exitError quotes them); a process that left the group and
		// keeps it open is cut off after exitGrace.
		drained := time.NewTimer(exitGrace)
		select {
		case <-c.stderrDone:
		case <-drained.C:
		}
		drained.Stop()
		c.stderr.Close()
		c.serverConn.Wait()
		c.wg.Wait()
		c.box.Close()
	})
	return c.closeErr
}

// waitGroupGone waits up to d for the leader to exit and the rest of its
// process group, but the reaper, to disappear. Processes that outlive the
// leader are no longer our children, so their exit is polled.
func (c *stdioConn) waitGroupGone(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case <-c.exited:
	case <-deadline.C:
		return false
	}
	return reaper.WaitGone(c.pgid, c.reaper.PID(), deadline.C)
}
