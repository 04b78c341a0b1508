package daemon

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
)

// testUpstreamEnv makes the test binary an upstream MCP server over
// stdio instead of running the tests (see init). The switch is in init,
// not a TestMain, so that it does not depend on which file holds the
// package's TestMain, if any.
const testUpstreamEnv = "JUNCTION_DAEMON_TEST_UPSTREAM"

func init() {
	if os.Getenv(testUpstreamEnv) == "" {
		return
	}
	runTestUpstream()
	os.Exit(0)
}

// runTestUpstream serves one tool, echo, on stdin and stdout until stdin
// closes: it returns its arguments' "text" after "delay_ms" milliseconds.
func runTestUpstream() {
	server := mcp.NewServer(&mcp.Implementation{Name: "daemon-test-upstream", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Text    string `json:"text"`
				DelayMS int    `json:"delay_ms"`
			}
			json.Unmarshal(req.Params.Arguments, &args)
			select {
			case <-time.After(time.Duration(args.DelayMS) * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
		})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test upstream:", err)
	}
}

func parseConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(yaml), "yaml", func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// TestReloadProfilesAndPresets reloads a config: an unchanged profile keeps
// its view (and so its host sessions), a changed one gets a new view, a
// removed one is gone, and presets follow the file.
func TestReloadProfilesAndPresets(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	d, err := Build(t.Context(), Spec{Config: parseConfig(t, `
presets:
  versions: [junction_version]
profiles:
  same: {tools: [junction_version]}
  changes: {tools: [junction_version]}
  goes: {tools: [junction_version]}
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	same, changes := d.Profile("same"), d.Profile("changes")
	if same == nil || changes == nil || d.Profile("goes") == nil {
		t.Fatal("profiles missing after Build")
	}
	if err := d.Hub.CheckSelection(junction.Selection{Presets: []string{"versions"}}); err != nil {
		t.Errorf("config preset: %v", err)
	}

	err = d.Reload(t.Context(), parseConfig(t, `
packs:
  core: {}
profiles:
  same: {tools: [junction_version]}
  changes: {presets: [], deny: [], tools: [junction_version], servers: [core]}
  new: {servers: [core]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Profile("same") != same {
		t.Error("an unchanged profile got a new view on reload")
	}
	if d.Profile("changes") == changes || d.Profile("changes") == nil {
		t.Error("a changed profile kept its old view")
	}
	if d.Profile("goes") != nil || d.Profile("new") == nil {
		t.Error("removed or added profile not applied")
	}
	if err := d.Hub.CheckSelection(junction.Selection{Presets: []string{"versions"}}); err == nil {
		t.Error("a preset removed from the file is still known after reload")
	}
}

// TestDriftPolicyFromConfig pins junction_version with another
// description in a lock file: with drift: block the tool is withheld, and
// the drift shows in Status and in the metrics.
func TestDriftPolicyFromConfig(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	dir := t.TempDir()
	lock := filepath.Join(dir, "junction.lock.json")
	m := junction.NewManifest([]junction.ToolInfo{{
		Tool:   &mcp.Tool{Name: "junction_version", Description: "an older description", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Source: "core",
	}})
	if err := config.WriteLockFile(lock, m); err != nil {
		t.Fatal(err)
	}
	d, err := Build(t.Context(), Spec{Config: parseConfig(t, `
lock: `+lock+`
packs:
  core: {drift: block}
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := len(d.View.ToolNames()); n != 0 {
		t.Errorf("drift: block still serves %v", d.View.ToolNames())
	}
	st := d.Status()
	if len(st.Sources) != 1 || st.Sources[0].Drift == nil || len(st.Sources[0].Drift.Changed) != 1 {
		t.Fatalf("Status() = %+v, want core with a changed tool", st)
	}
	rec := httptest.NewRecorder()
	d.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `junction_source_drift{source="core"} 1`) {
		t.Errorf("/metrics lacks the drift gauge:\n%.1500s", rec.Body.String())
	}
}

// upstreamYAML is a servers entry that runs the test binary as the test
// upstream, with extra YAML lines (indented by four spaces) added.
func upstreamYAML(name string, extra ...string) string {
	var b strings.Builder
	// A binary built with -race sleeps a second on exit unless told not
	// to, which would make every stop of the upstream take that long.
	fmt.Fprintf(&b, "  %s:\n    command: %q\n    env: {%s: \"1\", GORACE: \"atexit_sleep_ms=0\"}\n", name, os.Args[0], testUpstreamEnv)
	// Below 2026-07-28, so that the hub's raw path serves it too.
	b.WriteString("    protocol_version: \"2025-11-25\"\n")
	for _, e := range extra {
		b.WriteString("    " + e + "\n")
	}
	return b.String()
}

// lockedBuffer is a log destination shared by many goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// load calls one tool of the daemon's default view from several
// goroutines until stopped, half of them through the hub's raw path (as
// the data plane's fast path does) and half through the typed path, and
// counts the calls and the failures.
type load struct {
	d        *Daemon
	tool     string
	calls    atomic.Int64
	failed   atomic.Int64
	progress chan struct{} // capacity 1; signalled after each call
	stop     chan struct{}
	wg       sync.WaitGroup

	mu       sync.Mutex
	failures []string // the first few
}

func startLoad(t *testing.T, d *Daemon, tool string, workers int) *load {
	l := &load{d: d, tool: tool, progress: make(chan struct{}, 1), stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go l.work(t.Context(), w, w%2 == 0)
	}
	return l
}

func (l *load) work(ctx context.Context, w int, raw bool) {
	defer l.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		text := fmt.Sprintf("w%d-%d", w, i)
		args := fmt.Sprintf(`{"text":%q,"delay_ms":%d}`, text, 2+i%8)
		got, err := l.call(ctx, raw, args)
		if err == nil && got != text {
			err = fmt.Errorf("answer %q, want %q", got, text)
		}
		l.calls.Add(1)
		if err != nil {
			l.failed.Add(1)
			l.mu.Lock()
			if len(l.failures) < 5 {
				l.failures = append(l.failures, err.Error())
			}
			l.mu.Unlock()
		}
		select {
		case l.progress <- struct{}{}:
		default:
		}
	}
}

// call makes one call and returns the result's text, or an error for a
// failed call (a protocol error or a tool-error result).
func (l *load) call(ctx context.Context, raw bool, args string) (string, error) {
	if raw {
		if c, rc := l.d.View.BeginRaw(ctx, l.tool); c != nil {
			params := fmt.Sprintf(`{"name":%q,"arguments":%s}`, c.Local(), args)
			out, werr := c.CallToolRaw(rc, json.RawMessage(params))
			if werr != nil {
				return "", werr
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(out, &res); err != nil {
				return "", fmt.Errorf("raw result %s: %v", out, err)
			}
			return resultText(&res)
		}
	}
	res, err := l.d.View.Call(ctx, l.tool, json.RawMessage(args))
	if err != nil {
		return "", err
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) (string, error) {
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return "", fmt.Errorf("tool error: %s", text)
	}
	return text, nil
}

// awaitCalls waits (at most 20s) until n more calls have been made.
func (l *load) awaitCalls(t *testing.T, n int64) {
	t.Helper()
	want := l.calls.Load() + n
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for l.calls.Load() < want {
		select {
		case <-l.progress:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %d calls (%d made)", n, l.calls.Load()-want+n)
		}
	}
}

func (l *load) end(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if n := l.failed.Load(); n > 0 {
		t.Errorf("%d of %d calls to %s failed during reloads; first: %q", n, l.calls.Load(), l.tool, l.failures)
	}
}

// TestReloadUnderLoad reloads the config ten times while calls run, and
// requires that no call fails: a change of timeout alone keeps the
// upstream process (same PID) and its session; a change of arguments
// restarts it, and the calls already routed to the old process finish
// there before it is stopped; adding and removing another server does
// not disturb the calls either; nor does a tool that moves from one
// server to another, and the hub never holds both (no collision).
func TestReloadUnderLoad(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	const reloads = 10
	for _, tc := range []struct {
		name    string
		config  func(round int) string
		tool    string // the tool called; "a__echo" if empty
		samePID bool
	}{
		{"timeout-only", func(round int) string {
			return "servers:\n" + upstreamYAML("a", fmt.Sprintf("timeout: %ds", 30+round%2),
				fmt.Sprintf("tool_timeouts: {echo: %ds}", 20+round%3), fmt.Sprintf("connect_timeout: %ds", 10+round%2))
		}, "", true},
		{"args-changed", func(round int) string {
			return "servers:\n" + upstreamYAML("a", fmt.Sprintf("args: [round-%d]", round))
		}, "", false},
		{"other-removed", func(round int) string {
			cfg := "servers:\n" + upstreamYAML("a")
			if round%2 == 0 {
				cfg += upstreamYAML("b")
			}
			return cfg
		}, "", true},
		// echo moves from a to b and back, unprefixed: each reload
		// removes the one and adds the other in one step.
		{"tool-moves", func(round int) string {
			if round%2 == 0 {
				return "servers:\n" + upstreamYAML("a", "prefix: never")
			}
			return "servers:\n" + upstreamYAML("b", "prefix: never")
		}, "echo", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			d, err := Build(ctx, Spec{
				Config:         parseConfig(t, tc.config(0)),
				NoDefaultPacks: true,
				Logger:         slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := d.Close(); err != nil {
					t.Errorf("Close = %v", err)
				}
				if t.Failed() {
					t.Logf("daemon logs:\n%s", logs)
				}
			})
			d.WaitUpstreams(ctx, 20*time.Second)
			pid := sourcePID(t, d, "a")

			l := startLoad(t, d, cmp.Or(tc.tool, "a__echo"), 8)
			l.awaitCalls(t, 20)
			for round := 1; round <= reloads; round++ {
				if err := d.Reload(ctx, parseConfig(t, tc.config(round))); err != nil {
					t.Errorf("Reload %d = %v", round, err)
				}
				if !slices.ContainsFunc(d.Hub.Tools(), func(ti junction.ToolInfo) bool { return ti.Tool.Name == l.tool }) {
					t.Errorf("after reload %d the hub does not serve %s", round, l.tool)
				}
				l.awaitCalls(t, 30)
			}
			l.end(t)
			if strings.Contains(logs.String(), "name collision") {
				t.Error("a reload logged a name collision: the hub held the old and the new sources at once")
			}
			if n := l.calls.Load(); n < 300 {
				t.Errorf("only %d calls made during %d reloads", n, reloads)
			}
			switch after := sourcePID(t, d, "a"); {
			case tc.samePID && after != pid:
				t.Errorf("upstream PID %d after the reloads, want %d: the process was restarted", after, pid)
			case !tc.samePID && after == pid:
				t.Errorf("upstream PID still %d after its arguments changed: not restarted", pid)
			}
		})
	}
}

// sourcePID returns the PID of the upstream source name, failing the
// test if it is not connected.
func sourcePID(t *testing.T, d *Daemon, name string) int {
	t.Helper()
	for _, s := range d.Status().Sources {
		if s.Name == name {
			if s.PID == 0 {
				t.Fatalf("source %s has no process: %+v", name, s)
			}
			return s.PID
		}
	}
	t.Fatalf("no source %s in Status()", name)
	return 0
}

// withdraw_after reaches the upstream: a duration as it is, "never" as a
// negative duration (the upstream package's "never withdraw").
func TestUpstreamConfigWithdrawAfter(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want func(time.Duration) bool
	}{
		{0, func(d time.Duration) bool { return d == 0 }},
		{5 * time.Minute, func(d time.Duration) bool { return d == 5*time.Minute }},
		{config.NoTimeout, func(d time.Duration) bool { return d < 0 }},
	} {
		c, err := upstreamConfig(&config.Server{Command: "x", WithdrawAfter: tc.in})
		if err != nil || !tc.want(c.WithdrawAfter) {
			t.Errorf("withdraw_after %v: upstream WithdrawAfter %v, %v", tc.in, c.WithdrawAfter, err)
		}
	}
}

// TestReloadRefusedAsAWhole: a reload with one source that cannot be
// set up changes nothing, not even the sources it would have added
// beside it; the running config stays in force, and the same file, once
// mended, is applied by the next reload.
func TestReloadRefusedAsAWhole(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	dir := t.TempDir()
	d, err := Build(t.Context(), Spec{Config: parseConfig(t, "packs: [core]\n")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	envFile := filepath.Join(dir, "server.env")
	next := fmt.Sprintf(`
packs: [core]
servers:
  good:
    command: sh
    args: [-c, "exec cat"]
  bad:
    command: sh
    args: [-c, "exec cat"]
    env_file: %q
`, envFile)
	err = d.Reload(t.Context(), parseConfig(t, next))
	if err == nil || !strings.Contains(err.Error(), "server.env") {
		t.Fatalf("reload with an env_file that does not exist = %v", err)
	}
	if names := d.Hub.SourceNames(); slices.Contains(names, "good") || slices.Contains(names, "bad") {
		t.Errorf("a refused reload added sources: %v", names)
	}
	if st := d.Status(); len(st.Reloads) == 0 || !strings.Contains(st.Reloads[len(st.Reloads)-1].Error, "refused; the running config is unchanged") {
		t.Errorf("the refused reload is not recorded: %+v", st.Reloads)
	}
	if err := os.WriteFile(envFile, []byte("A=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(t.Context(), parseConfig(t, next)); err != nil {
		t.Fatalf("the same file, mended: %v", err)
	}
	if names := d.Hub.SourceNames(); !slices.Contains(names, "good") || !slices.Contains(names, "bad") {
		t.Errorf("after the mended reload the sources are %v", names)
	}
}

// TestWithReverted: after a reload in which a source's change failed,
// the config in force keeps that source's old entry (or none), so that
// the next reload sees the change again.
func TestWithReverted(t *testing.T) {
	old := parseConfig(t, "servers:\n  a: {command: sh}\n  b: {command: sh}\n")
	cfg := parseConfig(t, "servers:\n  a: {command: bash}\n  b: {command: bash}\n  c: {command: sh}\n")
	got := withReverted(cfg, old, map[string]bool{"a": true, "c": true})
	if got.Servers["a"] != old.Servers["a"] || got.Servers["b"] != cfg.Servers["b"] || got.Servers["c"] != nil {
		t.Errorf("servers after revert: a %v, b %v, c %v", got.Servers["a"], got.Servers["b"], got.Servers["c"])
	}
	if cfg.Servers["a"].Command != "bash" || cfg.Servers["c"] == nil {
		t.Error("withReverted changed the config it was given")
	}
	if withReverted(cfg, old, nil) != cfg {
		t.Error("with nothing failed, the config is not the one given")
	}
}
