package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReloadSIGHUPUnderLoad drives "junction serve -config F" as an
// operator does: a host keeps calling the tool of upstream a (the echo
// upstream) while F is rewritten and junction gets SIGHUP, twenty times, each
// time waiting for the "config reloaded" line that says the change was
// applied (no sleeps). It checks:
//
//   - a change of a's timeout only: no call fails, a keeps its process;
//   - a change of a's args: no call fails, a gets a new process;
//   - adding and removing an unrelated upstream b: no call to a fails,
//     a keeps its process;
//   - tools/list never lacks a's tool, during all of it and after:
//   - killing a's process group: a's tool stays listed, and a call made
//     at once (once the hub has seen the session end) succeeds once a is
//     back, with a new process.
//
// Two hosts call: one at 2025-11-25, on a session, and one at 2026-07-28
// (go-sdk's client by default, served without a session), each both
// plainly and with a progress token in _meta. /metrics must show calls
// to a forwarded raw.
func TestReloadSIGHUPUnderLoad(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "junction.yaml")
	server := func(name, timeout, arg string) string {
		return fmt.Sprintf("  %s:\n    command: %q\n    args: [%q]\n    env: {%s: \"1\", GORACE: \"atexit_sleep_ms=0\"}\n    timeout: %s\n",
			name, self, arg, envEchoUpstream, timeout)
	}
	type step struct {
		what                               string
		config                             string
		added, restarted, updated, removed int  // the "config reloaded" line's counts
		newPID                             bool // whether a gets a new process
	}
	steps := []step{
		{what: "timeout 31s", config: server("a", "31s", "v1"), updated: 1},
		{what: "timeout 32s", config: server("a", "32s", "v1"), updated: 1},
		{what: "timeout 33s", config: server("a", "33s", "v1"), updated: 1},
		{what: "args v2", config: server("a", "33s", "v2"), restarted: 1, newPID: true},
		{what: "args v3", config: server("a", "33s", "v3"), restarted: 1, newPID: true},
		{what: "args v4", config: server("a", "33s", "v4"), restarted: 1, newPID: true},
		{what: "add b", config: server("a", "33s", "v4") + server("b", "30s", "b"), added: 1},
		{what: "remove b", config: server("a", "33s", "v4"), removed: 1},
		{what: "add b again", config: server("a", "33s", "v4") + server("b", "30s", "b"), added: 1},
		{what: "remove b again", config: server("a", "33s", "v4"), removed: 1},
	}
	// And ten more of the same kinds: twenty reloads under load in all.
	for i := range 3 {
		to := fmt.Sprintf("%ds", 34+i)
		steps = append(steps, step{what: "timeout " + to, config: server("a", to, "v4"), updated: 1})
	}
	for i := range 3 {
		arg := fmt.Sprintf("v%d", 5+i)
		steps = append(steps, step{what: "args " + arg, config: server("a", "36s", arg), restarted: 1, newPID: true})
	}
	for range 2 {
		steps = append(steps,
			step{what: "add c", config: server("a", "36s", "v7") + server("c", "30s", "c"), added: 1},
			step{what: "remove c", config: server("a", "36s", "v7"), removed: 1})
	}
	writeConfig(t, path, "servers:\n"+server("a", "30s", "v1"))
	args := []string{"-insecure-no-auth", "-no-default-packs", "-config", path}
	p := startReloadServer(t, args...)
	cs := connectHTTPVersion(t, p.url, "2025-11-25")
	modern := connectHTTPVersion(t, p.url, "") // go-sdk's latest: 2026-07-28
	waitListed(t, cs, "a__echo")
	pid := connectedPID(t, p.url, "a")

	// The load: a caller of each kind on each host, and a lister.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	load := &reloadLoad{}
	var callers, lister sync.WaitGroup
	for i, host := range []*mcp.ClientSession{cs, cs, modern, modern} {
		callers.Add(1)
		go func() {
			defer callers.Done()
			load.call(ctx, host, i%2 == 1, fmt.Sprintf("caller-%d", i))
		}()
	}
	listerCtx, stopLister := context.WithCancel(ctx)
	defer stopLister()
	lister.Add(1)
	go func() {
		defer lister.Done()
		load.list(listerCtx, cs, "a__echo")
	}()
	stopCallers := func() {
		cancel()
		callers.Wait()
	}
	defer stopCallers()

	for i, st := range steps {
		start := time.Now()
		before := load.calls.Load()
		mark := p.reloads()
		writeConfig(t, path, "servers:\n"+st.config)
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatalf("SIGHUP: %v", err)
		}
		want := fmt.Sprintf("added=%d restarted=%d updated=%d removed=%d", st.added, st.restarted, st.updated, st.removed)
		p.waitReload(t, mark, want)
		newPID := connectedPID(t, p.url, "a")
		switch {
		case st.newPID && newPID == pid:
			t.Errorf("step %d (%s): a kept its process %d; its args changed", i+1, st.what, pid)
		case !st.newPID && newPID != pid:
			t.Errorf("step %d (%s): a's process changed from %d to %d; it should have been kept", i+1, st.what, pid, newPID)
		}
		pid = newPID
		// Some calls must have run across the reload, or it proves
		// nothing: wait for a few more, bounded.
		load.waitCalls(t, before+8)
		t.Logf("step %d (%s): applied in %v; %d calls so far, pid %d", i+1, st.what, time.Since(start).Round(time.Millisecond), load.calls.Load(), pid)
	}
	stopCallers()
	if n, f := load.calls.Load(), load.failures.Load(); f > 0 || n == 0 {
		t.Errorf("%d of %d calls to a failed during the reloads; first failures:\n%s", f, n, strings.Join(load.firstFailures(), "\n"))
	} else {
		t.Logf("%d calls to a during %d reloads, none failed", n, len(steps))
	}

	// Kill a's process group: the tool stays listed, and a call made at
	// once succeeds once a is back. "At once" is once the hub has seen
	// the session end (its "upstream state" line): a call made before
	// that may be written to the dying process, and such a call fails by
	// design (docs/upstream.md: the upstream may have run it).
	mark := p.reloads()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing a's process group %d: %v", pid, err)
	}
	killed := time.Now()
	if names := toolNames(t, cs); !slices.Contains(names, "a__echo") {
		t.Errorf("tools/list right after a was killed: %v, want a__echo still listed", names)
	}
	p.waitLine(t, mark, regexp.MustCompile(`msg="upstream state" source=a state=(degraded|failed)`))
	if names := toolNames(t, cs); !slices.Contains(names, "a__echo") {
		t.Errorf("tools/list once the hub saw a's session end: %v, want a__echo still listed", names)
	}
	callCtx, callCancel := context.WithTimeout(t.Context(), 30*time.Second)
	res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"after": "kill"}})
	callCancel()
	switch {
	case err != nil:
		t.Errorf("a call made at once after a was killed: %v", err)
	case res.IsError:
		t.Errorf("a call made at once after a was killed: tool error %s", textContent(res))
	default:
		t.Logf("a call made at once after a was killed succeeded %v later", time.Since(killed).Round(time.Millisecond))
	}
	if newPID := connectedPID(t, p.url, "a"); newPID == pid {
		t.Errorf("a answered after its process group was killed, but /status still shows pid %d", pid)
	}
	stopLister()
	lister.Wait()
	if lists, lacks := load.lists.Load(), load.lacks.Load(); lacks > 0 || lists == 0 {
		t.Errorf("tools/list lacked a__echo %d times of %d: %s", lacks, lists, strings.Join(load.firstFailures(), "\n"))
	} else {
		t.Logf("tools/list listed a__echo all %d times", lists)
	}

	if raw := rawCalls(t, p.url, "a"); raw == 0 {
		t.Error("no call to a was forwarded raw")
	} else {
		t.Logf("raw calls to a: %d", raw)
	}
}

// reloadLoad is the host's load: calls and lists, and what went wrong.
type reloadLoad struct {
	calls, failures atomic.Int64
	lists, lacks    atomic.Int64

	mu       sync.Mutex // guards failed and progress
	failed   []string   // the first failures, for the report
	progress chan struct{}
}

func (l *reloadLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failed) < 10 {
		l.failed = append(l.failed, time.Now().Format("15:04:05.000 ")+fmt.Sprintf(format, args...))
	}
}

func (l *reloadLoad) firstFailures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failed)
}

// changed returns a channel closed at the next call's end.
func (l *reloadLoad) changed() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.progress == nil {
		l.progress = make(chan struct{})
	}
	return l.progress
}

func (l *reloadLoad) tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.progress != nil {
		close(l.progress)
		l.progress = nil
	}
}

// waitCalls waits until n calls have ended, for at most 10 s.
func (l *reloadLoad) waitCalls(t *testing.T, n int64) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		ch := l.changed()
		if l.calls.Load() >= n {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("only %d calls ended within 10s, want %d", l.calls.Load(), n)
		}
	}
}

// call calls a__echo until ctx is done, plainly or with a progress token,
// and checks each answer echoes its arguments.
func (l *reloadLoad) call(ctx context.Context, cs *mcp.ClientSession, progress bool, name string) {
	for n := 0; ctx.Err() == nil; n++ {
		params := &mcp.CallToolParams{Name: "a__echo", Arguments: map[string]any{"caller": name, "n": n}}
		if progress {
			params.SetProgressToken(fmt.Sprintf("%s-%d", name, n))
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := cs.CallTool(callCtx, params)
		cancel()
		if ctx.Err() != nil {
			return // stopped: the call's end is the test's doing
		}
		l.calls.Add(1)
		want := fmt.Sprintf(`"n":%d}`, n) // the last key: {"caller":…,"n":N}
		switch {
		case err != nil:
			l.failures.Add(1)
			l.fail("%s call %d: %v", name, n, err)
		case res.IsError || !strings.Contains(textContent(res), want):
			l.failures.Add(1)
			l.fail("%s call %d: %s", name, n, textContent(res))
		}
		l.tick()
	}
}

// list lists tools until ctx is done and counts the lists that lack tool.
func (l *reloadLoad) list(ctx context.Context, cs *mcp.ClientSession, tool string) {
	for ctx.Err() == nil {
		res, err := cs.ListTools(ctx, nil)
		if ctx.Err() != nil {
			return
		}
		l.lists.Add(1)
		if err != nil {
			l.lacks.Add(1)
			l.fail("tools/list: %v", err)
			continue
		}
		if !slices.ContainsFunc(res.Tools, func(x *mcp.Tool) bool { return x.Name == tool }) {
			l.lacks.Add(1)
			l.fail("tools/list without %s: %d tools", tool, len(res.Tools))
		}
	}
}

// waitListed waits until tools/list lists tool; the upstream connects in
// the background (the first tools/list waits for it, within the startup
// budget, so this normally lists once).
func waitListed(t *testing.T, cs *mcp.ClientSession, tool string) {
	t.Helper()
	waitFor(t, tool+" to be listed", 30*time.Second, func() bool { return slices.Contains(toolNames(t, cs), tool) })
}

// connectHTTPVersion connects a go-sdk client to a Streamable HTTP
// endpoint (no token) asking for protocol version (go-sdk's latest if
// empty); the session is closed at cleanup.
func connectHTTPVersion(t *testing.T, url, version string) *mcp.ClientSession {
	t.Helper()
	hc := httpClient("")
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		hc.CloseIdleConnections()
		t.Fatalf("connecting over HTTP to %s (protocol %q): %v", url, version, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; version != "" && got != version {
		t.Fatalf("connected with protocol %s, want %s", got, version)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Logf("closing HTTP session: %v", err)
		}
		hc.CloseIdleConnections()
	})
	return cs
}

// connectedPID returns the pid /status shows for the connected upstream
// name; the source must be connected.
func connectedPID(t *testing.T, url, name string) int {
	t.Helper()
	state, pid := getStatus(t, url, "").source(name)
	if state != "connected" || pid == 0 {
		t.Fatalf("/status: %s is %q with pid %d, want connected", name, state, pid)
	}
	return pid
}

// reloadServer is "junction serve -http" whose stderr is watched for the
// reload lines.
type reloadServer struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // cmd.Wait's result, once exited is closed

	mu      sync.Mutex // guards the fields below
	stderr  bytes.Buffer
	partial []byte        // the last line, until its newline comes
	lines   []string      // complete lines
	changed chan struct{} // closed and replaced on every complete line
}

func (s *reloadServer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stderr.Write(b)
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.lines = append(s.lines, string(s.partial[:i]))
		s.partial = s.partial[i+1:]
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return len(b), nil
}

// reloadLine matches the daemon's line for an applied reload, and
// refusedLine its line for a refused one.
var (
	reloadLine  = regexp.MustCompile(`msg="config reloaded" (added=\d+ restarted=\d+ updated=\d+ removed=\d+)`)
	refusedLine = regexp.MustCompile(`msg="config reload (refused|incomplete)`)
)

// reloads returns how many lines junction has written so far: a mark for
// waitReload and waitLine.
func (s *reloadServer) reloads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lines)
}

// waitReload waits, for at most 30 s, for a "config reloaded" line with the
// counts want after line mark. A write of the file and its SIGHUP may
// reload twice (the file watcher, then the signal), and the second reload
// changes nothing, so the line looked for is the one with the counts of
// the change; a refused reload fails at once.
func (s *reloadServer) waitReload(t *testing.T, mark int, want string) {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		s.mu.Lock()
		var got []string
		for _, line := range s.lines[mark:] {
			if refusedLine.MatchString(line) {
				s.mu.Unlock()
				t.Fatalf("the reload was refused: %s", line)
			}
			if m := reloadLine.FindStringSubmatch(line); m != nil {
				if m[1] == want {
					s.mu.Unlock()
					return
				}
				got = append(got, m[1])
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-s.exited:
			t.Fatalf("junction exited while reloading: %v", s.err)
		case <-timer.C:
			t.Fatalf("no \"config reloaded\" line with %s within 30s (reload lines since the change: %v)", want, got)
		}
	}
}

// waitLine waits, for at most 30 s, for a line matching re after line
// mark.
func (s *reloadServer) waitLine(t *testing.T, mark int, re *regexp.Regexp) {
	t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		s.mu.Lock()
		found := slices.ContainsFunc(s.lines[mark:], re.MatchString)
		ch := s.changed
		s.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-s.exited:
			t.Fatalf("junction exited while waiting for %q: %v", re, s.err)
		case <-timer.C:
			t.Fatalf("no line matching %q within 30s", re)
		}
	}
}

// startReloadServer runs "junction serve -http 127.0.0.1:0 ARGS" and waits
// until it listens. At cleanup it is stopped with SIGTERM (SIGKILL after
// stopTimeout, which fails the test); its stderr is logged if the test
// failed.
func startReloadServer(t *testing.T, args ...string) *reloadServer {
	t.Helper()
	full := append([]string{"serve", "-http", "127.0.0.1:0"}, args...)
	cmd := exec.Command(junctionBin(t), full...)
	cmd.Env = childEnv(t.TempDir())
	s := &reloadServer{cmd: cmd, exited: make(chan struct{}), changed: make(chan struct{})}
	cmd.Stderr = s
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("SIGTERM to junction serve: %v", err)
		}
		timer := time.NewTimer(stopTimeout)
		defer timer.Stop()
		select {
		case <-s.exited:
			if s.err != nil {
				t.Errorf("junction serve after SIGTERM: %v", s.err)
			}
		case <-timer.C:
			t.Errorf("junction serve still running %v after SIGTERM; killing it", stopTimeout)
			cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			s.mu.Lock()
			t.Logf("junction serve stderr:\n%s", s.stderr.String())
			s.mu.Unlock()
		}
	})
	const prefix = "junction: listening on "
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	for seen := 0; ; {
		s.mu.Lock()
		lines, ch := s.lines[seen:], s.changed
		seen = len(s.lines)
		s.mu.Unlock()
		for _, line := range lines {
			if u, ok := strings.CutPrefix(line, prefix); ok {
				s.url = strings.TrimSpace(u)
				return s
			}
		}
		select {
		case <-ch:
		case <-s.exited:
			t.Fatalf("junction %s exited before listening: %v", strings.Join(full, " "), s.err)
		case <-timer.C:
			t.Fatalf("junction %s did not listen within %v", strings.Join(full, " "), startTimeout)
		}
	}
}

// TestReloadRefusedAsAWhole: a reload that cannot set up all of a
// config (an unknown pack beside a known one) applies none of it, and
// says so, naming what failed; the same file, mended, applies on the
// next write.
func TestReloadRefusedAsAWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(path, []byte("packs: [core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startReloadServer(t, "-insecure-no-auth", "-config", path)
	mark := s.reloads()
	if err := os.WriteFile(path, []byte("packs: [core, conformance, nosuchpack]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	s.waitLine(t, mark, regexp.MustCompile(`msg="config reload refused; the running config is unchanged".*nosuchpack`))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	conformance := func() bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return strings.HasPrefix(tool.Name, "test_") })
	}
	if conformance() {
		t.Error("the refused reload added the conformance pack")
	}
	mark = s.reloads()
	if err := os.WriteFile(path, []byte("packs: [core, conformance]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.waitLine(t, mark, regexp.MustCompile(`msg="config reloaded"`))
	if !conformance() {
		t.Error("the mended file's conformance pack is not served")
	}
}
