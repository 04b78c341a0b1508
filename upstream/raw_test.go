package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawConfig is a fake go-sdk server at a protocol version that takes raw
// calls (before 2026-07-28).
func rawConfig(t *testing.T, env map[string]string) Config {
	cfg := fakeConfig(t, "server", env)
	cfg.ProtocolVersion = "2025-11-25"
	return cfg
}

// decodeResult decodes a raw result as go-sdk would.
func decodeResult(t *testing.T, raw json.RawMessage) *mcp.CallToolResult {
	t.Helper()
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return &res
}

func TestCallToolRaw(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "fake", rawConfig(t, nil))
	if !s.CanCallRaw("echo") {
		t.Fatal("CanCallRaw(echo) = false on a stdio upstream at 2025-11-25")
	}
	ctx := ctxTimeout(t, 30*time.Second)

	raw, err := s.CallToolRaw(ctx, "echo", json.RawMessage(`{"name":"echo","arguments":{"text":"hi"}}`))
	if err != nil {
		t.Fatalf("CallToolRaw(echo) = %v", err)
	}
	res := decodeResult(t, raw)
	if got := resultText(t, res); got != `{"text":"hi"}` || res.IsError {
		t.Errorf("echo: text %q, isError %v; want {\"text\":\"hi\"}, false", got, res.IsError)
	}
	// The upstream saw junction's progress token and nothing else in _meta.
	meta, _ := res.Meta["echoedMeta"].(map[string]any)
	if tok, _ := meta["progressToken"].(string); len(meta) != 1 || tok == "" {
		t.Errorf("upstream saw _meta %v, want only a progress token", meta)
	}

	// No arguments at all.
	raw, err = s.CallToolRaw(ctx, "echo", json.RawMessage(`{"name":"echo"}`))
	if err != nil {
		t.Fatalf("CallToolRaw(echo, no arguments) = %v", err)
	}
	if got := resultText(t, decodeResult(t, raw)); got != "" && got != "null" && got != "{}" {
		t.Errorf("echo without arguments: %q", got)
	}

	raw, err = s.CallToolRaw(ctx, "fail", json.RawMessage(`{"name":"fail"}`))
	if err != nil {
		t.Fatalf("CallToolRaw(fail) = %v", err)
	}
	if res := decodeResult(t, raw); !res.IsError || resultText(t, res) != "it failed" {
		t.Errorf("fail: %s; want a tool error saying it failed", raw)
	}

	// A filtered-out tool is refused without asking the upstream.
	_, err = s.CallToolRaw(ctx, "nope", json.RawMessage(`{"name":"nope"}`))
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("CallToolRaw(unknown tool) = %v, want an invalid-params error", err)
	}
	_, err = s.CallToolRaw(ctx, "echo", json.RawMessage(`[1]`))
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("CallToolRaw(params not an object) = %v, want an invalid-params error", err)
	}
}

func TestCallToolRawProtocolErrorAndUnknownContent(t *testing.T) {
	t.Parallel()
	r, logs := newRegistry(t, nil)
	s := addReady(t, r, "raw", fakeConfig(t, "raw", nil))
	ctx := ctxTimeout(t, 30*time.Second)

	_, err := s.CallToolRaw(ctx, "widget", json.RawMessage(`{"name":"widget","arguments":{"x":"boom"}}`))
	want := &jsonrpc.Error{Code: -32042, Message: "boom", Data: json.RawMessage(`{"why":"testing"}`)}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("CallToolRaw(boom) = %v, want a *jsonrpc.Error", err)
	}
	if diff := cmp.Diff(want, werr); diff != "" {
		t.Errorf("JSON-RPC error (-want +got):\n%s", diff)
	}

	raw, err := s.CallToolRaw(ctx, "widget", json.RawMessage(`{"name":"widget"}`))
	if err != nil {
		t.Fatalf("CallToolRaw(widget) = %v", err)
	}
	if got := resultText(t, decodeResult(t, raw)); got != `before[unsupported content type "widget"]` {
		t.Errorf("widget result text = %q, want the unknown block replaced", got)
	}
	waitFor(t, "the replacement logged", func() bool { return strings.Contains(logs.String(), "replaced content blocks of unknown type") })
}

func TestCallToolRawCancelReachesUpstream(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "c", rawConfig(t, map[string]string{"FAKE_MARK_DIR": marks}))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.CallToolRaw(ctx, "hang", json.RawMessage(`{"name":"hang"}`))
		errc <- err
	}()
	waitFor(t, "the upstream to start the call", func() bool {
		_, err := os.Stat(filepath.Join(marks, "started"))
		return err == nil
	})
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("CallToolRaw(hang), cancelled = %v, want an error wrapping context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	waitFor(t, "upstream cancellation", func() bool {
		_, err := os.Stat(filepath.Join(marks, "cancelled"))
		return err == nil
	})
	// The session is still good.
	if _, err := s.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo","arguments":{}}`)); err != nil {
		t.Errorf("CallToolRaw(echo) after a cancel = %v", err)
	}
}

func TestCallToolRawTimeout(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	cfg := rawConfig(t, map[string]string{"FAKE_MARK_DIR": marks})
	cfg.ToolTimeouts = map[string]time.Duration{"hang": 300 * time.Millisecond}
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "h", cfg)

	_, err := s.CallToolRaw(ctxTimeout(t, 30*time.Second), "hang", json.RawMessage(`{"name":"hang"}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallToolRaw(hang) = %v, want an error wrapping DeadlineExceeded", err)
	}
	waitFor(t, "upstream cancellation", func() bool {
		_, err := os.Stat(filepath.Join(marks, "cancelled"))
		return err == nil
	})
	if snap := s.Snapshot(); snap.State != StateConnected || snap.Connects != 1 {
		t.Errorf("after a timeout: state %v, connects %d; want connected, 1", snap.State, snap.Connects)
	}
}

func TestCallToolRawProgressRestartsTimeout(t *testing.T) {
	t.Parallel()
	cfg := rawConfig(t, nil)
	cfg.CallTimeout = time.Second
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "p", cfg)
	// 6 steps of 250ms: 1.5s in all, but never a second without progress.
	raw, err := s.CallToolRaw(ctxTimeout(t, 30*time.Second), "slow", json.RawMessage(`{"name":"slow","arguments":{"steps":6,"delay_ms":250}}`))
	if err != nil {
		t.Fatalf("CallToolRaw(slow) = %v", err)
	}
	if got := resultText(t, decodeResult(t, raw)); got != "done" {
		t.Errorf("slow = %q, want done", got)
	}
}

func TestCallToolRawKilledMidCall(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	s := addReady(t, r, "k", rawConfig(t, nil))

	_, err := s.CallToolRaw(ctxTimeout(t, 30*time.Second), "die", json.RawMessage(`{"name":"die"}`))
	if !errors.Is(err, junction.ErrSourceDown) {
		t.Fatalf("CallToolRaw(die) = %v, want an error wrapping ErrSourceDown", err)
	}
	waitFor(t, "reconnect", func() bool {
		snap := s.Snapshot()
		return snap.State == StateConnected && snap.Connects == 2
	})
	raw, err := s.CallToolRaw(ctxTimeout(t, 30*time.Second), "echo", json.RawMessage(`{"name":"echo","arguments":{}}`))
	if err != nil || resultText(t, decodeResult(t, raw)) != "{}" {
		t.Errorf("CallToolRaw(echo) after reconnect = %s, %v", raw, err)
	}
}

func TestCallToolRawClosedServer(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "x", rawConfig(t, nil))
	if err := r.Remove("x"); err != nil {
		t.Fatal(err)
	}
	_, err := s.CallToolRaw(ctxTimeout(t, 30*time.Second), "echo", json.RawMessage(`{"name":"echo"}`))
	if !errors.Is(err, junction.ErrSourceDown) {
		t.Errorf("CallToolRaw on a closed server = %v, want an error wrapping ErrSourceDown", err)
	}
}

// TestCallToolRawBesideSDKCalls runs raw calls and go-sdk calls on one
// session at the same time: every answer must be its own call's.
func TestCallToolRawBesideSDKCalls(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "mix", rawConfig(t, nil))
	ctx := ctxTimeout(t, 60*time.Second)

	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			args := fmt.Sprintf(`{"raw":%d}`, i)
			raw, err := s.CallToolRaw(ctx, "echo", json.RawMessage(`{"name":"echo","arguments":`+args+`}`))
			if err != nil {
				errs <- fmt.Errorf("raw %d: %v", i, err)
				return
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(raw, &res); err != nil {
				errs <- fmt.Errorf("raw %d: %v", i, err)
				return
			}
			if got := textOf(&res); got != args {
				errs <- fmt.Errorf("raw %d: got %q, want %q", i, got, args)
			}
		}()
		go func() {
			defer wg.Done()
			args := fmt.Sprintf(`{"sdk":%d}`, i)
			res, err := s.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(args)}})
			if err != nil {
				errs <- fmt.Errorf("sdk %d: %v", i, err)
				return
			}
			if got := textOf(res); got != args {
				errs <- fmt.Errorf("sdk %d: got %q, want %q", i, got, args)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func textOf(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}

// TestCallToolRawLogsFirst checks that a log message the upstream sent
// before its result reaches the host named by junction.WithHostSession before the raw
// call returns.
func TestCallToolRawLogsFirst(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "l", rawConfig(t, nil))
	ctx := ctxTimeout(t, 30*time.Second)

	// A host: a go-sdk server session (what the hub would hold) and the
	// client on its other end, recording log messages in order.
	hostServer := mcp.NewServer(&mcp.Implementation{Name: "hub"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := hostServer.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	var mu sync.Mutex
	var got []any
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			got = append(got, req.Params.Data)
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}

	raw, err := s.CallToolRaw(junction.WithHostSession(ctx, junction.SessionHost(ss)), "log", json.RawMessage(`{"name":"log"}`))
	if err != nil || resultText(t, decodeResult(t, raw)) != "logged" {
		t.Fatalf("CallToolRaw(log) = %s, %v", raw, err)
	}
	// Anything the hub sends after the result comes after the upstream's
	// log message.
	if err := ss.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "after the result"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two log messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]any{"hello from upstream", "after the result"}, got); diff != "" {
		t.Errorf("log messages at the host (-want +got):\n%s", diff)
	}
}

// recordLink is a junction.HostLink that records what it is sent, until
// it is closed (its request answered).
type recordLink struct {
	level  mcp.LoggingLevel
	mu     sync.Mutex
	got    []string
	closed bool
}

func (l *recordLink) Notify(method string, params mcp.Params) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("the request has been answered")
	}
	switch p := params.(type) {
	case *mcp.LoggingMessageParams:
		l.got = append(l.got, fmt.Sprintf("%s %s %v", method, p.Level, p.Data))
	case *mcp.ProgressNotificationParams:
		l.got = append(l.got, fmt.Sprintf("%s %v %v", method, p.ProgressToken, p.Progress))
	}
	return nil
}

func (l *recordLink) LogLevel() (mcp.LoggingLevel, bool) { return l.level, l.level != "" }

func (l *recordLink) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

func (l *recordLink) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got
}

// TestCallToolRawHostLink: a raw call without a host session (a
// 2026-07-28 request over HTTP) whose context carries a host link gets
// the upstream's log messages at the link's level or above, and its
// progress under the host's token, through the link, before the call
// returns.
func TestCallToolRawHostLink(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "l", rawConfig(t, nil))
	ctx := ctxTimeout(t, 30*time.Second)
	for _, tc := range []struct {
		level mcp.LoggingLevel
		want  []string
	}{
		{"info", []string{"notifications/message warning hello from upstream"}},
		{"error", nil}, // the upstream's message is a warning
		{"", nil},      // the request named no level: no log messages
	} {
		link := &recordLink{level: tc.level}
		raw, err := s.CallToolRaw(junction.WithHostLink(ctx, link), "log", json.RawMessage(`{"name":"log"}`))
		if err != nil || resultText(t, decodeResult(t, raw)) != "logged" {
			t.Fatalf("CallToolRaw(log) = %s, %v", raw, err)
		}
		if diff := cmp.Diff(tc.want, link.take()); diff != "" {
			t.Errorf("level %q: sent through the link (-want +got):\n%s", tc.level, diff)
		}
	}
	link := &recordLink{}
	raw, err := s.CallToolRaw(junction.WithHostLink(ctx, link), "slow", json.RawMessage(`{"name":"slow","arguments":{"steps":2,"delay_ms":0},"_meta":{"progressToken":"h1"}}`))
	if err != nil || resultText(t, decodeResult(t, raw)) != "done" {
		t.Fatalf("CallToolRaw(slow) = %s, %v", raw, err)
	}
	if diff := cmp.Diff([]string{"notifications/progress h1 1", "notifications/progress h1 2"}, link.take()); diff != "" {
		t.Errorf("progress sent through the link (-want +got):\n%s", diff)
	}
}

func TestCanCallRawOtherTransports(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	url := startHTTPFake(t, nil)
	s := addReady(t, r, "web", Config{URL: url, ProtocolVersion: "2025-11-25"})
	if s.CanCallRaw("echo") {
		t.Error("CanCallRaw on a Streamable HTTP upstream = true")
	}
	if _, err := s.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, ErrRawUnsupported) {
		t.Errorf("CallToolRaw on HTTP = %v, want ErrRawUnsupported", err)
	}
}

// TestCallToolRawModernUpstream: a stdio upstream at 2026-07-28 takes raw
// calls too. The request carries the per-request protocol fields go-sdk
// would send, the log level and junction's progress token, and the host's
// own _meta members (but not the host's protocol fields); the result
// comes back without the upstream's serverInfo and "resultType":
// "complete", which the hub's front puts back in its own name for hosts
// that know them.
func TestCallToolRawModernUpstream(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	m := addReady(t, r, "modern", fakeConfig(t, "server", nil))
	if !m.CanCallRaw("echo") {
		t.Error("CanCallRaw on a 2026-07-28 stdio upstream = false")
	}
	// Until a level is set, the hub asks for info and above.
	first, err := m.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo","arguments":{}}`))
	if err != nil || !strings.Contains(string(first), `"io.modelcontextprotocol/logLevel":"info"`) {
		t.Errorf("CallToolRaw before SetLogLevel = %s, %v; want the upstream asked for info", first, err)
	}
	m.SetLogLevel("debug")
	raw, err := m.CallToolRaw(t.Context(), "echo", json.RawMessage(`{"name":"echo","arguments":{"a":1},"_meta":{"com.example/trace":"t1","io.modelcontextprotocol/clientInfo":{"name":"host","version":"9"}}}`))
	if err != nil {
		t.Fatalf("CallToolRaw on a 2026-07-28 upstream: %v", err)
	}
	if res := decodeResult(t, raw); resultText(t, res) != `{"a":1}` {
		t.Errorf("CallToolRaw on a 2026-07-28 upstream = %s", raw)
	}
	if strings.Contains(string(raw), "resultType") || strings.Contains(string(raw), "serverInfo") {
		t.Errorf("result keeps the upstream's own fields: %s", raw)
	}
	var res struct {
		Meta struct {
			Echoed map[string]any `json:"echoedMeta"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	got := res.Meta.Echoed
	info, _ := got["io.modelcontextprotocol/clientInfo"].(map[string]any)
	if got["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" || got["io.modelcontextprotocol/clientCapabilities"] == nil ||
		info["name"] == "host" || got["io.modelcontextprotocol/logLevel"] != "debug" || got["com.example/trace"] != "t1" ||
		!strings.HasPrefix(fmt.Sprint(got["progressToken"]), "junction-") {
		t.Errorf("the upstream got _meta %v", got)
	}
}

// TestCallToolRawModernUpstreamHostCapabilities: a raw call to a
// 2026-07-28 upstream carries the capabilities of its own host's
// initialize, whichever host called last.
func TestCallToolRawModernUpstreamHostCapabilities(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	m := addReady(t, r, "modern", fakeConfig(t, "server", nil))
	ctx := ctxTimeout(t, 30*time.Second)
	host := func(opts *mcp.ClientOptions) *mcp.ServerSession {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := mcp.NewServer(&mcp.Implementation{Name: "hub"}, nil).Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return ss
	}
	sampling := host(&mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return nil, errors.New("no")
	}})
	elicitation := host(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errors.New("no")
	}})
	for i, ss := range []*mcp.ServerSession{sampling, elicitation, sampling, elicitation} {
		raw, err := m.CallToolRaw(junction.WithHostSession(ctx, junction.SessionHost(ss)), "echo", json.RawMessage(`{"name":"echo","arguments":{}}`))
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		var res struct {
			Meta struct {
				Echoed map[string]json.RawMessage `json:"echoedMeta"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		var caps map[string]any
		json.Unmarshal(res.Meta.Echoed["io.modelcontextprotocol/clientCapabilities"], &caps)
		_, hasSampling := caps["sampling"]
		_, hasElicitation := caps["elicitation"]
		if want := ss == sampling; hasSampling != want || hasElicitation == want {
			t.Errorf("call %d (sampling host: %v): the upstream got capabilities %v", i, want, caps)
		}
	}
}
