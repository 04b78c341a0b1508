//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fault suite runs junction against upstreams that misbehave, each
// case through the real binary, and prints what it measured (time to
// detect, time to recover, processes left) with t.Logf; run it with -v to
// see them. It is for Linux, where junction promises that nothing it
// started outlives it, and where /proc shows what is left of a process
// group. Cases already covered elsewhere through the binary are not
// repeated here: the exact messages of a crash during a call
// (testdata/conversations/crash-mid-call.txtar) and of junk lines
// (junk.txtar) are in the conversation tests.
//
// The misbehaving upstream is this test binary run again by junction, as
// the echo upstream is (echo_upstream_test.go), with envFaultUpstream set
// to its mode:
//
//   - serve: a stdio MCP server (2025-11-25) with the tools echo, crash
//     (exits without answering), hang (never answers), flood (writes
//     faultJunkLines junk lines and one line longer than junction's limit
//     on stdout, then answers) and grow (adds the tool extra and sends
//     notifications/tools/list_changed);
//   - crashloop: prints an error on stderr and exits at once;
//   - mute: reads stdin and never answers, not even initialize;
//   - stubborn: starts two grandchildren that ignore SIGTERM (like a
//     wrapper's children), waits until both do, writes "leader child
//     child" to the file in envFaultPidfile, then serves as serve does;
//   - sleeper: the grandchild: ignores SIGTERM, says so on its file 3,
//     sleeps faultSleeperLife.
const (
	envFaultUpstream = "JUNCTION_E2E_FAULT_UPSTREAM"
	envFaultPidfile  = "JUNCTION_E2E_FAULT_PIDFILE"
)

const (
	faultJunkLines   = 5000
	faultHugeLine    = 17 << 20 // over junction's 16 MiB line limit
	faultSleeperLife = 2 * time.Minute
)

func init() {
	switch mode := os.Getenv(envFaultUpstream); mode {
	case "":
		return
	case "sleeper":
		signal.Ignore(syscall.SIGTERM)
		if ready := os.NewFile(3, "ready"); ready != nil { // startSleepers waits for this byte
			ready.Write([]byte{1})
			ready.Close()
		}
		time.Sleep(faultSleeperLife)
		os.Exit(0)
	default:
		os.Exit(runFaultUpstream(mode))
	}
}

// runFaultUpstream is the fault upstream's main.
func runFaultUpstream(mode string) int {
	switch mode {
	case "crashloop":
		fmt.Fprintln(os.Stderr, "fault upstream: cannot start: FAULT_API_KEY is not set")
		return 1
	case "mute":
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "stubborn":
		if err := startSleepers(os.Getenv(envFaultPidfile)); err != nil {
			fmt.Fprintln(os.Stderr, "fault upstream:", err)
			return 1
		}
	case "serve":
	default:
		fmt.Fprintf(os.Stderr, "fault upstream: unknown mode %q\n", mode)
		return 2
	}
	if err := serveFault(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fault upstream:", err)
		return 1
	}
	return 0
}

// startSleepers starts two sleeper grandchildren sharing stdout and
// stderr, as a wrapper's children do, waits until each ignores SIGTERM
// (a byte on a pipe: a SIGTERM before that would end it, and the test
// would find nothing left to kill), and writes the pids to pidfile.
func startSleepers(pidfile string) error {
	pids := []int{os.Getpid()}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		c := exec.Command(os.Args[0])
		c.Env = append(os.Environ(), envFaultUpstream+"=sleeper")
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.ExtraFiles = []*os.File{w}
		err = c.Start()
		w.Close()
		if err != nil {
			r.Close()
			return err
		}
		_, err = r.Read(make([]byte, 1))
		r.Close()
		if err != nil {
			return fmt.Errorf("sleeper %d did not say it ignores SIGTERM: %w", c.Process.Pid, err)
		}
		pids = append(pids, c.Process.Pid)
	}
	b := fmt.Appendf(nil, "%d %d %d", pids[0], pids[1], pids[2])
	if err := os.WriteFile(pidfile+".tmp", b, 0o644); err != nil {
		return err
	}
	return os.Rename(pidfile+".tmp", pidfile)
}

// serveFault answers the requests read from r on w until r ends.
func serveFault(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	grown := false
	for {
		line, rerr := br.ReadBytes('\n')
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		var out []byte
		if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 && req.Method != "" {
			result := func(res string) []byte {
				return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, res)
			}
			text := func(s string) []byte {
				return result(fmt.Sprintf(`{"content":[{"type":"text","text":%s}]}`, jsonString(s)))
			}
			switch req.Method {
			case "initialize":
				out = result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fault-upstream","version":"1"}}`)
			case "ping":
				out = result(`{}`)
			case "tools/list":
				tools := `{"name":"echo","inputSchema":{"type":"object"}},{"name":"crash","inputSchema":{"type":"object"}},` +
					`{"name":"hang","inputSchema":{"type":"object"}},{"name":"flood","inputSchema":{"type":"object"}},` +
					`{"name":"grow","inputSchema":{"type":"object"}}`
				if grown {
					tools += `,{"name":"extra","inputSchema":{"type":"object"}}`
				}
				out = result(`{"tools":[` + tools + `]}`)
			case "tools/call":
				switch req.Params.Name {
				case "echo", "extra":
					out = text(string(req.Params.Arguments))
				case "crash":
					fmt.Fprintln(os.Stderr, "fault upstream: crashing in the middle of a call")
					os.Exit(3)
				case "hang":
					// Never answered.
				case "flood":
					if err := flood(w); err != nil {
						return err
					}
					out = text("flooded")
				case "grow":
					grown = true
					out = append([]byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n"), text("grown")...)
				default:
					out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`+"\n", req.ID)
				}
			default:
				out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			}
		}
		if out != nil {
			if _, err := w.Write(out); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// flood writes faultJunkLines lines that are not JSON-RPC and one line of
// faultHugeLine bytes.
func flood(w io.Writer) error {
	var junk bytes.Buffer
	for i := range faultJunkLines {
		fmt.Fprintf(&junk, "junk line %d: not JSON-RPC\n", i)
	}
	if _, err := w.Write(junk.Bytes()); err != nil {
		return err
	}
	huge := bytes.Repeat([]byte("x"), faultHugeLine)
	_, err := w.Write(append(huge, '\n'))
	return err
}

// faultServer returns a config entry for a fault upstream named name in
// mode, with extra YAML lines (indented by four spaces) added.
func faultServer(t *testing.T, name, mode string, extra ...string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("  %s:\n    command: %q\n    env: {%s: %q, GORACE: \"atexit_sleep_ms=0\"}\n", name, self, envFaultUpstream, mode)
	for _, e := range extra {
		s += "    " + e + "\n"
	}
	return s
}

// faultHub serves the servers (faultServer entries) over HTTP and
// connects client (nil: a default one) to it once every tool in ready is
// listed.
func faultHub(t *testing.T, client *mcp.Client, servers string, ready ...string) (*serveProc, *mcp.ClientSession) {
	t.Helper()
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), "servers:\n"+servers)
	p := startServer(t, "-insecure-no-auth", "-no-default-packs", "-config", cfg)
	if client == nil {
		client = newClient(nil)
	}
	cs := connectHTTPClient(t, client, p.URL, "")
	waitFor(t, fmt.Sprint("tools ", ready), 20*time.Second, func() bool {
		names := toolNames(t, cs)
		for _, r := range ready {
			if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+r+" ") {
				return false
			}
		}
		return true
	})
	return p, cs
}

// callFault calls a tool with the argument text and returns its text,
// and whether it failed (see callText).
func callFault(ctx context.Context, cs *mcp.ClientSession, name, text string) (string, bool) {
	return callText(ctx, cs, name, map[string]any{"text": text})
}

// callText calls a tool and returns the text of its content, and whether
// it failed (a tool error, or a protocol error, whose text is then the
// error's).
func callText(ctx context.Context, cs *mcp.ClientSession, name string, args any) (string, bool) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error(), true
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// mustEcho calls an echo tool and fails the test unless it answers.
func mustEcho(t *testing.T, cs *mcp.ClientSession, name, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if got, failed := callFault(ctx, cs, name, text); failed || !strings.Contains(got, text) {
		t.Errorf("%s(%q) = %q (failed %v), want its text back", name, text, got, failed)
	}
}

// liveGroup returns the live (not zombie) processes whose process group
// is pgid, read from /proc.
func liveGroup(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ...": comm may hold anything, so
		// count from the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g == pgid && f[0][0] != 'Z' && f[0][0] != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestFaultUpstream runs junction against each misbehaving upstream.
func TestFaultUpstream(t *testing.T) {
	t.Run("crash mid-call", func(t *testing.T) {
		t.Parallel()
		p, cs := faultHub(t, nil, faultServer(t, "crashy", "serve")+faultServer(t, "ok", "serve"), "crashy__crash", "ok__echo")
		_, pid := getStatus(t, p.URL, "").source("crashy")
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		// Another upstream's call runs through the crash.
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			mustEcho(t, cs, "ok__echo", "beside the crash")
		}()
		start := time.Now()
		got, failed := callFault(ctx, cs, "crashy__crash", "")
		detect := time.Since(start)
		if !failed || !strings.Contains(got, "SOURCE_UNAVAILABLE") {
			t.Errorf("call to an upstream that crashed during it = %q (failed %v), want a SOURCE_UNAVAILABLE error", got, failed)
		}
		wg.Wait()
		// The next call waits for the new process and is answered by it.
		mustEcho(t, cs, "crashy__echo", "after the crash")
		recovered := time.Since(start)
		state, newPID := getStatus(t, p.URL, "").source("crashy")
		if state != "connected" || newPID == pid || newPID == 0 {
			t.Errorf("crashy after the crash: state %q, pid %d (was %d); want connected with a new process", state, newPID, pid)
		}
		left := liveGroup(pid)
		if len(left) != 0 {
			t.Errorf("processes %v of the crashed upstream's group still alive", left)
		}
		t.Logf("crash mid-call: error to the host after %v, next call answered by a new process %v after the crash, processes left: %d",
			detect.Round(time.Millisecond), recovered.Round(time.Millisecond), len(left))
	})

	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		p, cs := faultHub(t, nil, faultServer(t, "slow", "serve", "tool_timeouts: {hang: 1s}")+faultServer(t, "ok", "serve"), "slow__hang", "ok__echo")
		_, pid := getStatus(t, p.URL, "").source("slow")
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		type outcome struct {
			text   string
			failed bool
			took   time.Duration
		}
		hung := make(chan outcome, 1)
		start := time.Now()
		go func() {
			got, failed := callFault(ctx, cs, "slow__hang", "")
			hung <- outcome{got, failed, time.Since(start)}
		}()
		// Other calls, to the same upstream and another, are served
		// while the call hangs.
		var slowest time.Duration
		for i := range 5 {
			for _, tool := range []string{"slow__echo", "ok__echo"} {
				t0 := time.Now()
				mustEcho(t, cs, tool, fmt.Sprint("during the hang ", i))
				slowest = max(slowest, time.Since(t0))
			}
		}
		var o outcome
		select {
		case o = <-hung:
		case <-ctx.Done():
			t.Fatal("the hanging call did not end within 20s (its timeout is 1s)")
		}
		if !o.failed || !strings.Contains(o.text, `"code":"TIMEOUT"`) || !strings.Contains(o.text, "no progress for 1s") {
			t.Errorf("hanging call = %q (failed %v), want a TIMEOUT tool error naming its 1s", o.text, o.failed)
		}
		if o.took < time.Second {
			t.Errorf("hanging call ended after %v, before its 1s timeout", o.took)
		}
		// A call that timed out does not cost the upstream its session.
		if state, now := getStatus(t, p.URL, "").source("slow"); state != "connected" || now != pid {
			t.Errorf("slow after the timeout: state %q, pid %d; want connected, pid %d", state, now, pid)
		}
		mustEcho(t, cs, "slow__echo", "after the hang")
		t.Logf("hang: timeout error after %v (timeout 1s); slowest of 10 calls made meanwhile: %v; upstream kept its session",
			o.took.Round(time.Millisecond), slowest.Round(time.Millisecond))
	})

	t.Run("crash loop at start", func(t *testing.T) {
		t.Parallel()
		p, cs := faultHub(t, nil, faultServer(t, "loop", "crashloop")+faultServer(t, "ok", "serve"), "ok__echo")
		const msg = "FAULT_API_KEY is not set"
		// Each attempt: the line the upstream wrote on its stderr, which
		// junction logs with the time it read it.
		attempts := func() []time.Time {
			var at []time.Time
			for _, line := range strings.Split(p.Stderr(), "\n") {
				ts, ok := strings.CutPrefix(line, "time=")
				if !ok || !strings.Contains(line, "msg=stderr") || !strings.Contains(line, msg) {
					continue
				}
				ts, _, _ = strings.Cut(ts, " ")
				if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
					at = append(at, t)
				}
			}
			return at
		}
		var seen []time.Time
		waitFor(t, "three start attempts", 15*time.Second, func() bool { seen = attempts(); return len(seen) >= 3 })
		var gaps []string
		for i := 1; i < len(seen); i++ {
			gaps = append(gaps, seen[i].Sub(seen[i-1]).Round(10*time.Millisecond).String())
		}
		if len(seen) > 6 {
			t.Errorf("%d start attempts (gaps %v): no backoff", len(seen), gaps)
		}
		var st struct {
			state, err string
		}
		for _, s := range getStatus(t, p.URL, "").Sources {
			if s.Name == "loop" {
				st.state, st.err = s.State, s.Error
			}
		}
		if st.state != "failed" || !strings.Contains(st.err, "exit status 1") || !strings.Contains(st.err, msg) {
			t.Errorf("loop: state %q, error %q; want failed, with the exit status and the server's last stderr line", st.state, st.err)
		}
		mustEcho(t, cs, "ok__echo", "while another crash-loops")
		if names := toolNames(t, cs); strings.Contains(strings.Join(names, " "), "loop__") {
			t.Errorf("tools of a server that never started are listed: %v", names)
		}
		t.Logf("crash loop: %d attempts, gaps between them %v (backoff); status %s, error %q; the other upstream served",
			len(seen), gaps, st.state, st.err)
	})

	t.Run("junk and a huge line", func(t *testing.T) {
		t.Parallel()
		p, cs := faultHub(t, nil, faultServer(t, "noisy", "serve"), "noisy__flood")
		_, pid := getStatus(t, p.URL, "").source("noisy")
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		start := time.Now()
		got, failed := callFault(ctx, cs, "noisy__flood", "")
		took := time.Since(start)
		if failed || got != "flooded" {
			t.Errorf("noisy__flood = %q (failed %v), want flooded", got, failed)
		}
		mustEcho(t, cs, "noisy__echo", "after the flood")
		logs := p.Stderr()
		for _, want := range []string{"skipped over-long line on stdout", fmt.Sprintf("skipped_so_far=%d", faultJunkLines)} {
			if !strings.Contains(logs, want) {
				t.Errorf("hub log lacks %q", want)
			}
		}
		logged := strings.Count(logs, "skipped non-JSON-RPC line")
		if logged > 20 {
			t.Errorf("%d log lines for %d junk lines: the log is flooded too", logged, faultJunkLines)
		}
		if _, now := getStatus(t, p.URL, "").source("noisy"); now != pid {
			t.Errorf("noisy has pid %d after the flood, was %d: the session ended", now, pid)
		}
		t.Logf("junk: %d junk lines and a %d MiB line skipped; the call was answered after %v; %d log lines about them; same session",
			faultJunkLines, faultHugeLine>>20, took.Round(time.Millisecond), logged+strings.Count(logs, "skipped over-long line"))
	})

	t.Run("tool list changes", func(t *testing.T) {
		t.Parallel()
		changed := make(chan struct{}, 1)
		client := newClient(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
		_, cs := faultHub(t, client, faultServer(t, "grow", "serve"), "grow__grow")
		select { // a list_changed from start-up, if any
		case <-changed:
		default:
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		start := time.Now()
		if got, failed := callFault(ctx, cs, "grow__grow", ""); failed {
			t.Fatalf("grow__grow = %q", got)
		}
		var notified time.Duration
		for notified == 0 {
			select {
			case <-changed:
				if strings.Contains(strings.Join(toolNames(t, cs), " "), "grow__extra") {
					notified = time.Since(start)
				}
			case <-ctx.Done():
				t.Fatalf("no list_changed listing grow__extra within 20s; tools: %v", toolNames(t, cs))
			}
		}
		mustEcho(t, cs, "grow__extra", "new tool")
		t.Logf("list_changed: the host was told, and lists the new tool, %v after the call that added it", notified.Round(time.Millisecond))
	})

	t.Run("never answers initialize", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		p, cs := faultHub(t, nil, faultServer(t, "mute", "mute", "connect_timeout: 1s")+faultServer(t, "ok", "serve"), "ok__echo")
		var errText string
		waitFor(t, "mute to fail", 15*time.Second, func() bool {
			for _, s := range getStatus(t, p.URL, "").Sources {
				if s.Name == "mute" && s.State == "failed" {
					errText = s.Error
					return true
				}
			}
			return false
		})
		failedAfter := time.Since(start)
		if !strings.Contains(errText, "timed out after 1s waiting for the server to answer initialize") {
			t.Errorf("mute's error = %q, want it to say it timed out after 1s waiting for initialize", errText)
		}
		mustEcho(t, cs, "ok__echo", "beside a mute upstream")
		t.Logf("never answers initialize: failed %v after the hub started (connect timeout 1s), error %q; other upstream served",
			failedAfter.Round(time.Millisecond), errText)
	})

	t.Run("grandchildren ignore SIGTERM", func(t *testing.T) {
		t.Parallel()
		h := startStubbornHub(t)
		start := time.Now()
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		err := h.wait(t)
		took := time.Since(start)
		if err != nil {
			t.Errorf("junction after SIGTERM: %v", err)
		}
		left := liveGroup(h.pgid)
		if len(left) != 0 {
			t.Errorf("processes %v of the upstream's group alive after junction stopped", left)
		}
		if !strings.Contains(h.stderr.String(), "killing its process group") {
			t.Errorf("junction did not report killing the group; stderr:\n%s", h.stderr.String())
		}
		t.Logf("grandchildren ignoring SIGTERM: junction stopped %v after SIGTERM (stop timeout 300ms per stage) with %d of %d processes left",
			took.Round(time.Millisecond), len(left), len(h.members))
	})

	t.Run("SIGKILLed hub", func(t *testing.T) {
		t.Parallel()
		h := startStubbornHub(t)
		start := time.Now()
		if err := h.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		h.wait(t)
		var left []int
		deadline := time.Now().Add(10 * time.Second)
		for left = liveGroup(h.pgid); len(left) > 0 && time.Now().Before(deadline); left = liveGroup(h.pgid) {
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(start)
		if len(left) != 0 {
			t.Errorf("processes %v of the upstream's group (%v before) alive 10s after junction was killed", left, h.members)
		}
		t.Logf("SIGKILLed hub: the upstream's group (%d processes: leader, two children, reaper) was gone %v after the kill (stop timeout 300ms per stage); processes left: %d",
			len(h.members), took.Round(time.Millisecond), len(left))
	})
}

// stubbornHub is "junction serve" over stdio with one upstream in mode
// stubborn.
type stubbornHub struct {
	cmd     *exec.Cmd
	stderr  *lineWatcher
	exited  chan struct{}
	err     error // cmd.Wait's; read after exited is closed
	pgid    int   // the upstream's process group
	members []int // its live processes once started
}

// startStubbornHub starts junction over stdio (its stdin held open) with
// an upstream whose grandchildren ignore SIGTERM, and waits until they
// run. At cleanup, junction and the upstream's group are killed if still
// there.
func startStubbornHub(t *testing.T) *stubbornHub {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pids")
	servers := faultServer(t, "stubborn", "stubborn", "stop_timeout: 300ms")
	servers = strings.Replace(servers, "env: {", fmt.Sprintf("env: {%s: %q, ", envFaultPidfile, pidfile), 1)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), "servers:\n"+servers)
	cmd := exec.Command(junctionBin(t), "serve", "-no-default-packs", "-config", cfg)
	cmd.Env = childEnv(t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &stubbornHub{cmd: cmd, stderr: newLineWatcher("\x00"), exited: make(chan struct{})}
	cmd.Stderr = h.stderr
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.err = cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-h.exited
		stdin.Close()
		if h.pgid > 0 {
			syscall.Kill(-h.pgid, syscall.SIGKILL)
		}
		if t.Failed() {
			t.Logf("junction stderr:\n%s", h.stderr.String())
		}
	})
	var pids [3]int
	waitFor(t, "the upstream's grandchildren", 20*time.Second, func() bool {
		b, err := os.ReadFile(pidfile)
		return err == nil && func() bool {
			_, err := fmt.Sscanf(string(b), "%d %d %d", &pids[0], &pids[1], &pids[2])
			return err == nil
		}()
	})
	h.pgid = pids[0]
	waitFor(t, "the upstream's processes", 20*time.Second, func() bool {
		h.members = liveGroup(h.pgid)
		return len(h.members) >= 3 // the leader and its two children (and the reaper)
	})
	return h
}

// wait waits up to 20s for junction to exit and returns cmd.Wait's error.
func (h *stubbornHub) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-h.exited:
		return h.err
	case <-time.After(20 * time.Second):
		t.Fatalf("junction did not exit within 20s")
		return nil
	}
}
