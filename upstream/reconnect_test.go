package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// eventLog collects a registry's events on a channel, for tests to wait
// on them rather than poll.
type eventLog chan Event

func (e eventLog) record(ev Event) {
	select {
	case e <- ev:
	default: // OnEvent must not block; the tests read far fewer
	}
}

// next waits (at most 20s) for the next event that match accepts.
func (e eventLog) next(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev := <-e:
			if match(ev) {
				return ev
			}
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// waitAttempts waits (at most 20s) until n more connection attempts of s
// have finished after the call, without connecting.
func waitAttempts(t *testing.T, s *Server, n int) {
	t.Helper()
	s.mu.Lock()
	want := s.attempts + n
	s.mu.Unlock()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		attempts, sess, ch := s.attempts, s.sess, s.changed
		s.mu.Unlock()
		if sess != nil {
			t.Fatal("the server connected while attempts were meant to fail")
		}
		if attempts >= want {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %d failed connection attempts", n)
		}
	}
}

func isState(st State) func(Event) bool {
	return func(e Event) bool { return e.Kind == EventState && e.State == st }
}

func isCatalog(e Event) bool { return e.Kind == EventCatalog }

// killGroup kills the process group of the server's current stdio
// process, as a crash would.
func killGroup(t *testing.T, s *Server) {
	t.Helper()
	pid := s.Snapshot().PID
	if pid == 0 {
		t.Fatal("no process to kill")
	}
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill process group %d: %v", pid, err)
	}
}

func (l *recListener) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changes
}

func echo(ctx context.Context, s *Server, arg string) (*mcp.CallToolResult, error) {
	return s.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(arg)}})
}

// A server whose process crashes keeps serving its tools while it
// reconnects, even through failed attempts, and a call made meanwhile
// waits for the new session (beyond ConnectTimeout: the bound is the
// call's own timeout) instead of failing.
func TestToolsStayWhileReconnecting(t *testing.T) {
	t.Parallel()
	events := make(eventLog, 256)
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 60 * time.Millisecond, OnEvent: events.record})
	fix := filepath.Join(t.TempDir(), "fixed")
	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_FIX_FILE": fix})
	cfg.CallTimeout = 20 * time.Second
	s := addReady(t, r, "crash", cfg)
	l := &recListener{}
	s.SetListener(l)
	want := s.Snapshot().Tools
	// A short connect timeout while the attempts fail, and only then: a
	// first connection or the reconnect at the end under a loaded
	// machine's -race may take longer than it to start the server.
	short := cfg
	short.ConnectTimeout = 300 * time.Millisecond
	if _, err := s.Update(short); err != nil {
		t.Fatal(err)
	}

	// From now on the process exits at start: reconnecting fails until
	// the file is back.
	if err := os.Remove(fix); err != nil {
		t.Fatal(err)
	}
	killGroup(t, s)
	events.next(t, "the session to end", isState(StateDegraded))
	events.next(t, "a failed reconnect", isState(StateFailed))

	cat, err := s.Catalog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Tools) != len(want) {
		t.Errorf("Catalog while reconnecting has %d tools, want the %d of the last session", len(cat.Tools), len(want))
	}
	if diff := cmp.Diff(want, s.Snapshot().Tools); diff != "" {
		t.Errorf("Snapshot().Tools while reconnecting (-want +got):\n%s", diff)
	}
	if n := l.count(); n != 0 {
		t.Errorf("listener told of %d catalog changes while reconnecting, want none", n)
	}

	start := time.Now()
	done := make(chan error, 1)
	go func() {
		res, err := echo(t.Context(), s, `"waited"`)
		if err == nil && resultText(t, res) != `"waited"` {
			err = errors.New("echo returned " + resultText(t, res))
		}
		done <- err
	}()
	// Let several attempts fail while the call waits, and more time pass
	// than ConnectTimeout.
	waitAttempts(t, s, 3)
	select {
	case err := <-done:
		t.Fatalf("the call ended while the server was reconnecting: %v", err)
	case <-time.After(time.Until(start.Add(2 * short.ConnectTimeout))):
	}
	if _, err := s.Update(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("call made while reconnecting = %v, want the new session's answer", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end after the server came back")
	}
	if snap := s.Snapshot(); snap.State != StateConnected || snap.Connects != 2 || snap.Withdrawn {
		t.Errorf("after the reconnect: %+v; want connected, 2 sessions, not withdrawn", snap)
	}
}

// A server that cannot get a session back for WithdrawAfter has its
// catalog withdrawn (and the listener told); calls waiting for it fail
// then; the catalog comes back when it reconnects.
func TestWithdrawAfter(t *testing.T) {
	t.Parallel()
	events := make(eventLog, 256)
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 60 * time.Millisecond, OnEvent: events.record})
	fix := filepath.Join(t.TempDir(), "fixed")
	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_FIX_FILE": fix})
	cfg.WithdrawAfter = 400 * time.Millisecond
	cfg.CallTimeout = time.Minute
	s := addReady(t, r, "w", cfg)
	l := &recListener{}
	s.SetListener(l)

	if err := os.Remove(fix); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	killGroup(t, s)
	events.next(t, "the session to end", isState(StateDegraded))
	waiting := make(chan error, 1)
	go func() {
		_, err := echo(t.Context(), s, `1`)
		waiting <- err
	}()
	events.next(t, "the catalog to be withdrawn", isCatalog)
	if d := time.Since(killed); d < cfg.WithdrawAfter {
		t.Errorf("catalog withdrawn %v after the crash, before WithdrawAfter (%v)", d, cfg.WithdrawAfter)
	}
	if tools := s.Tools(); len(tools) != 0 {
		t.Errorf("Tools() after withdrawal = %d tools, want none", len(tools))
	}
	if snap := s.Snapshot(); !snap.Withdrawn || len(snap.Tools) != 0 {
		t.Errorf("Snapshot after withdrawal = %+v, want withdrawn with no tools", snap)
	}
	if l.count() == 0 {
		t.Error("listener not told of the withdrawal")
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, junction.ErrSourceDown) || !strings.Contains(err.Error(), "withdrawn") {
			t.Errorf("call waiting at withdrawal = %v, want ErrSourceDown naming the withdrawal", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a call waiting for the session did not end when the catalog was withdrawn")
	}
	// Withdrawn: a call fails after one attempt, not after its timeout.
	if _, err := echo(ctxTimeout(t, 20*time.Second), s, `2`); !errors.Is(err, junction.ErrSourceDown) {
		t.Errorf("call after withdrawal = %v, want ErrSourceDown", err)
	}

	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	events.next(t, "the reconnect", isState(StateConnected))
	if snap := s.Snapshot(); snap.State != StateConnected || snap.Withdrawn || !containsString(snap.Tools, "echo") {
		t.Errorf("after reconnecting: %+v; want connected, tools served again", snap)
	}
}

// WithdrawAfter set with Update while the server is down applies at
// once, counted from the end of the session; negative never withdraws.
func TestWithdrawAfterUpdatedWhileDown(t *testing.T) {
	t.Parallel()
	events := make(eventLog, 256)
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 60 * time.Millisecond, OnEvent: events.record})
	fix := filepath.Join(t.TempDir(), "fixed")
	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_FIX_FILE": fix})
	cfg.WithdrawAfter = -1
	s := addReady(t, r, "u", cfg)
	if err := os.Remove(fix); err != nil {
		t.Fatal(err)
	}
	killGroup(t, s)
	events.next(t, "the session to end", isState(StateDegraded))
	waitAttempts(t, s, 3)
	if s.Snapshot().Withdrawn || len(s.Tools()) == 0 {
		t.Fatal("catalog withdrawn with WithdrawAfter < 0")
	}
	cfg.WithdrawAfter = time.Millisecond
	if restart, err := s.Update(cfg); err != nil || restart {
		t.Fatalf("Update(WithdrawAfter) = %v, %v; want applied in place", restart, err)
	}
	events.next(t, "the catalog to be withdrawn", isCatalog)
	if !s.Snapshot().Withdrawn {
		t.Error("not withdrawn after WithdrawAfter was shortened")
	}
}

// A call's wait for a session is bounded by the call's own timeout.
func TestReconnectWaitBoundedByCallTimeout(t *testing.T) {
	t.Parallel()
	events := make(eventLog, 256)
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 60 * time.Millisecond, OnEvent: events.record})
	fix := filepath.Join(t.TempDir(), "fixed")
	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_FIX_FILE": fix})
	cfg.ToolTimeouts = map[string]time.Duration{"echo": 300 * time.Millisecond}
	s := addReady(t, r, "b", cfg)
	if err := os.Remove(fix); err != nil {
		t.Fatal(err)
	}
	killGroup(t, s)
	events.next(t, "the session to end", isState(StateDegraded))
	start := time.Now()
	_, err := echo(ctxTimeout(t, 20*time.Second), s, `1`)
	if !errors.Is(err, junction.ErrSourceDown) || !strings.Contains(err.Error(), "timeout") {
		t.Errorf("call while the server cannot reconnect = %v, want ErrSourceDown after its timeout", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("call gave up after %v, before its own timeout (300ms)", d)
	}
}

// SetLogLevel reaches the upstream at once (logging/setLevel, sent in the
// background) and at every reconnect; "info" is asked for until it is
// called.
func TestSetLogLevel(t *testing.T) {
	t.Parallel()
	events := make(eventLog, 256)
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 60 * time.Millisecond, OnEvent: events.record})
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25" // logging/setLevel exists before 2026-07-28
	s := addReady(t, r, "l", cfg)
	levels := func() string {
		res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "levels"}})
		if err != nil {
			t.Fatalf("CallTool(levels) = %v", err)
		}
		return resultText(t, res)
	}
	if got := levels(); got != "info" {
		t.Errorf("levels asked for at connect = %q, want info", got)
	}
	s.SetLogLevel("debug")
	s.SetLogLevel("debug") // the same level again is not sent again
	waitFor(t, "logging/setLevel debug upstream", func() bool { return levels() == "info,debug" })

	killGroup(t, s)
	events.next(t, "the session to end", isState(StateDegraded))
	events.next(t, "the reconnect", isState(StateConnected))
	if got := levels(); got != "debug" {
		t.Errorf("levels asked for at reconnect = %q, want debug (the level set before)", got)
	}
}

// SetLogLevel does not wait for the upstream, and a logging/setLevel the
// upstream never answers does not keep Close waiting (the package's
// TestMain checks that no goroutine is left behind).
func TestSetLogLevelDoesNotBlock(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	marks := t.TempDir()
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_SETLEVEL_HANG": "debug", "FAKE_MARK_DIR": marks})
	cfg.ProtocolVersion = "2025-11-25"
	cfg.ConnectTimeout = time.Minute // bounds the setLevel request; the test's bounds are shorter
	s := addReady(t, r, "h", cfg)
	returned := make(chan struct{})
	go func() {
		s.SetLogLevel("debug") // never answered
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("SetLogLevel waited for the upstream")
	}
	// The upstream got the request (and, as a go-sdk server handles
	// such requests in order, now answers nothing at all).
	waitFor(t, "logging/setLevel debug upstream", func() bool {
		_, err := os.Stat(filepath.Join(marks, "setlevel-debug"))
		return err == nil
	})
	// Another level while that one hangs is queued behind it.
	returned = make(chan struct{})
	go func() {
		s.SetLogLevel("error")
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("SetLogLevel waited for the upstream")
	}
	closed := make(chan error, 1)
	go func() { closed <- r.Remove("h") }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Remove = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close waited for an unanswered logging/setLevel")
	}
}

// Under 2026-07-28 the level goes in each call's _meta: the level set
// with SetLogLevel when the host named none, the host's own otherwise.
func TestLogLevelInMetaOfModernCalls(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "m", fakeConfig(t, "server", nil))
	metaLevel := func(meta mcp.Meta) any {
		res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: meta}})
		if err != nil {
			t.Fatal(err)
		}
		echoed, _ := res.Meta["echoedMeta"].(map[string]any)
		return echoed[mcp.MetaKeyLogLevel]
	}
	if got := metaLevel(nil); got != "info" {
		t.Errorf("log level in _meta before SetLogLevel = %v, want info", got)
	}
	s.SetLogLevel("debug")
	if got := metaLevel(nil); got != "debug" {
		t.Errorf("log level in _meta after SetLogLevel(debug) = %v, want debug", got)
	}
	if got := metaLevel(mcp.Meta{mcp.MetaKeyLogLevel: "error"}); got != "error" {
		t.Errorf("log level in _meta when the host names one = %v, want the host's (error)", got)
	}
}

// drainLogs returns as soon as the log messages read have been handled:
// it waits on a signal, not a polling loop (in a synctest bubble, any
// sleep would show as time passed).
func TestDrainLogsSignalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := bareServer(t)
		c := &call{seq: 1}
		s.countLog("") // one message read, not yet handled
		done := make(chan time.Duration)
		go func() {
			start := time.Now()
			s.drainLogs(c)
			done <- time.Since(start)
		}()
		synctest.Wait()
		s.onLog(t.Context(), &mcp.LoggingMessageRequest{Params: &mcp.LoggingMessageParams{Level: "info", Data: "x"}})
		if d := <-done; d != 0 {
			t.Errorf("drainLogs returned %v after the message was handled, want at once", d)
		}
		// Nothing left to wait for: it returns at once.
		start := time.Now()
		s.drainLogs(c)
		if d := time.Since(start); d != 0 {
			t.Errorf("drainLogs with nothing pending took %v", d)
		}
	})
}

// A call's result waits for the log messages read on its own response
// stream and on streams of no call, not for those of another call's
// stream: a call that streams log messages without end holds up no one
// else's result.
func TestDrainLogsOwnStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := bareServer(t)
		quiet, chatty := &call{seq: 1}, &call{seq: 2}
		s.calls.put(quiet.seq, quiet) // in flight
		s.calls.put(chatty.seq, chatty)
		handle := func(n int) {
			for range n {
				s.onLog(t.Context(), &mcp.LoggingMessageRequest{Params: &mcp.LoggingMessageParams{Level: "info", Data: "x"}})
			}
		}
		waits := func(c *call) bool {
			done := make(chan struct{})
			go func() { s.drainLogs(c); close(done) }()
			synctest.Wait()
			select {
			case <-done:
				return false
			default:
				handle(int(s.logsRead.Load() - s.logsHandled.Load()))
				<-done
				return true
			}
		}
		for range 3 {
			s.countLog(chatty.token()) // read, not handled
		}
		if waits(quiet) {
			t.Error("a call without log messages waited for another call's")
		}
		for range 3 {
			s.countLog(chatty.token())
		}
		s.countLog(quiet.token())
		if !waits(quiet) {
			t.Error("a call's result did not wait for its own log message")
		}
		s.countLog(chatty.token())
		s.countLog("")
		if !waits(quiet) {
			t.Error("a call's result did not wait for a log message of no call")
		}
	})
}

// sessionEnded tells a broken session from a failed request by signals
// (the error's kind, the session's end, the process's exit) without
// waiting.
func TestSessionEndedNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := bareServer(t)
		exited := make(chan struct{})
		sess := &session{done: make(chan struct{}), transport: &commandTransport{conn: &stdioConn{exited: exited}}}
		check := func(what string, err error, want bool) {
			t.Helper()
			start := time.Now()
			if got := s.sessionEnded(sess, err); got != want {
				t.Errorf("sessionEnded(%s) = %v, want %v", what, got, want)
			}
			if d := time.Since(start); d != 0 {
				t.Errorf("sessionEnded(%s) waited %v", what, d)
			}
		}
		check("EOF", io.EOF, true)
		check("connection closed", mcp.ErrConnectionClosed, true)
		check("connection refused", syscall.ECONNREFUSED, true)
		check("an error on a live session", errors.New("bad request"), false)
		close(exited)
		check("an error after the process exited", errors.New("bad request"), true)
		close(sess.done)
		check("an error after the session ended", errors.New("bad request"), true)
	})
}
