package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newRegistry returns a registry that logs into the returned buffer and is
// closed when the test ends.
func newRegistry(t *testing.T, opts *Options) (*Registry, *syncBuffer) {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	logs := &syncBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := NewRegistry(&o)
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		if t.Failed() || os.Getenv("UPSTREAM_TEST_LOGS") != "" {
			t.Logf("registry logs:\n%s", logs)
		}
	})
	return r, logs
}

// ctxTimeout returns a context that ends the test's wait after d.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func addReady(t *testing.T, r *Registry, name string, cfg Config) *Server {
	t.Helper()
	s, err := r.Add(name, cfg)
	if err != nil {
		t.Fatalf("Add(%q) = %v", name, err)
	}
	if err := s.WaitReady(ctxTimeout(t, 20*time.Second)); err != nil {
		t.Fatalf("WaitReady(%q) = %v", name, err)
	}
	return s
}

// waitFor polls cond until it holds or 20s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

func TestEchoCatalogAndForwarding(t *testing.T) {
	t.Parallel()
	r, logs := newRegistry(t, nil)
	s := addReady(t, r, "fake", fakeConfig(t, "server", map[string]string{"FAKE_MANY": "25"}))

	cat, err := s.Catalog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The named tools plus 25 extra, over pages of 10.
	if got := len(cat.Tools); got != 40 {
		t.Errorf("len(Catalog.Tools) = %d, want 40 (all pages)", got)
	}
	if len(cat.Resources) != 1 || len(cat.ResourceTemplates) != 1 || len(cat.Prompts) != 2 {
		t.Errorf("catalog has %d resources, %d templates, %d prompts; want 1, 1 and 2", len(cat.Resources), len(cat.ResourceTemplates), len(cat.Prompts))
	}
	// The schema comes through as the upstream wrote it.
	var echo *mcp.Tool
	for _, tool := range cat.Tools {
		if tool.Name == "echo" {
			echo = tool
		}
	}
	wantSchema := `{"$defs":{"msg":{"type":"string"}},"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"text":{"$ref":"#/$defs/msg"}},"type":"object","x-vendor":"kept"}`
	if got, _ := junction.CanonicalJSON(echo.InputSchema); string(got) != wantSchema {
		t.Errorf("echo schema = %s, want %s", got, wantSchema)
	}

	// Raw arguments and _meta pass through unchanged.
	args := json.RawMessage(`{"text":"hi","extra":[1,2.5,{"z":null}]}`)
	res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Name: "echo", Arguments: args, Meta: mcp.Meta{"trace": "abc"},
	}})
	if err != nil {
		t.Fatalf("CallTool(echo) = %v", err)
	}
	if got := resultText(t, res); got != string(args) {
		t.Errorf("echo text = %s, want %s", got, args)
	}
	meta, _ := res.Meta["echoedMeta"].(map[string]any)
	if meta["trace"] != "abc" {
		t.Errorf("upstream saw _meta %v, want trace=abc", meta)
	}

	// A tool error stays a tool error.
	res, err = s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fail"}})
	if err != nil || !res.IsError || resultText(t, res) != "it failed" {
		t.Errorf("CallTool(fail) = %+v, %v; want an isError result", res, err)
	}
	// A protocol error stays a *jsonrpc.Error with its code.
	_, err = s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "nope"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Errorf("CallTool(nope) = %v, want a *jsonrpc.Error", err)
	}

	// Registry view: bridged names and calls by full name.
	tools := r.Tools()
	if len(tools) != 40 || tools[0].Name != "fake__die" {
		t.Errorf("Registry.Tools() = %d tools starting %q, want 40 starting fake__die", len(tools), tools[0].Name)
	}
	res, err = r.CallTool(t.Context(), "fake__echo", json.RawMessage(`{"text":"x"}`))
	if err != nil || resultText(t, res) != `{"text":"x"}` {
		t.Errorf("Registry.CallTool(fake__echo) = %v, %v", res, err)
	}
	if _, err := r.CallTool(t.Context(), "nosuch__echo", nil); err == nil {
		t.Error("Registry.CallTool(nosuch__echo) succeeded, want error")
	}

	// Resources and prompts.
	rr, err := s.ReadResource(t.Context(), &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: "fake://items/7"}})
	if err != nil || rr.Contents[0].Text != "item" {
		t.Errorf("ReadResource = %v, %v", rr, err)
	}
	pr, err := s.GetPrompt(t.Context(), &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "bob"}}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello bob" {
		t.Errorf("GetPrompt = %v, %v", pr, err)
	}

	cr, err := s.Complete(t.Context(), &mcp.CompleteRequest{Params: &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: mcp.CompleteParamsArgument{Name: "who", Value: "b"},
	}})
	if err != nil || len(cr.Completion.Values) != 1 || cr.Completion.Values[0] != "bob" {
		t.Errorf("Complete = %v, %v; want bob", cr, err)
	}

	snaps := r.Snapshots()
	if len(snaps) != 1 {
		t.Fatalf("Snapshots() = %d entries, want 1", len(snaps))
	}
	snap := snaps[0]
	if snap.State != StateConnected || len(snap.Tools) != 40 || snap.Connects != 1 || snap.ServerInfo.Name != "fake" {
		t.Errorf("Snapshot = %+v", snap)
	}
	if !strings.Contains(logs.String(), `msg=stderr source=fake pid=`) || !strings.Contains(logs.String(), `line="fake: starting"`) {
		t.Errorf("server stderr not logged line by line; logs:\n%s", logs)
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	cfg := fakeConfig(t, "server", nil)
	cfg.Allow = []string{"echo", "slow"}
	s := addReady(t, r, "f", cfg)
	var names []string
	for _, tool := range s.Tools() {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"echo", "slow"}, names); diff != "" {
		t.Errorf("tools with Allow (-want +got):\n%s", diff)
	}
	_, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "fail"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("CallTool(filtered tool) = %v, want invalid params", err)
	}

	cfg = fakeConfig(t, "server", nil)
	cfg.Deny = []string{"die", "hang"}
	s = addReady(t, r, "g", cfg)
	for _, tool := range s.Tools() {
		if tool.Name == "die" || tool.Name == "hang" {
			t.Errorf("denied tool %q served", tool.Name)
		}
	}
}

func TestKilledMidCall(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	s := addReady(t, r, "k", fakeConfig(t, "server", nil))

	_, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "die"}})
	if !errors.Is(err, junction.ErrSourceDown) {
		t.Fatalf("CallTool(die) = %v, want an error wrapping ErrSourceDown", err)
	}
	waitFor(t, "reconnect", func() bool {
		snap := s.Snapshot()
		return snap.State == StateConnected && snap.Connects == 2
	})
	if snap := s.Snapshot(); snap.LastError == "" {
		t.Errorf("LastError is empty after the session died")
	}
	res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)}})
	if err != nil || resultText(t, res) != "{}" {
		t.Errorf("CallTool(echo) after reconnect = %v, %v", res, err)
	}
}

func TestHangTimesOutOthersUnaffected(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_MARK_DIR": marks})
	cfg.ToolTimeouts = map[string]time.Duration{"hang": 300 * time.Millisecond}
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "h", cfg)

	hangErr := make(chan error, 1)
	go func() {
		_, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "hang"}})
		hangErr <- err
	}()
	// Other calls go on while one hangs.
	for i := range 5 {
		res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(fmt.Sprint(i))}})
		if err != nil || resultText(t, res) != fmt.Sprint(i) {
			t.Errorf("CallTool(echo %d) during a hang = %v, %v", i, res, err)
		}
	}
	select {
	case err := <-hangErr:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("CallTool(hang) = %v, want an error wrapping DeadlineExceeded", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hang call did not time out")
	}
	// The upstream was told to cancel, and the session survived.
	waitFor(t, "upstream cancellation", func() bool {
		_, err := os.Stat(filepath.Join(marks, "cancelled"))
		return err == nil
	})
	if snap := s.Snapshot(); snap.State != StateConnected || snap.Connects != 1 {
		t.Errorf("after a timeout: state %v, connects %d; want connected, 1", snap.State, snap.Connects)
	}
}

func TestProgressRestartsTimeout(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.CallTimeout = 400 * time.Millisecond
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "p", cfg)
	// 8 steps of 100ms: 800ms in all, but never 400ms without progress.
	res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Name: "slow", Arguments: json.RawMessage(`{"steps":8,"delay_ms":100}`)}})
	if err != nil || resultText(t, res) != "done" {
		t.Errorf("CallTool(slow) = %v, %v; want done", res, err)
	}
	// Without progress (no steps reported before the timeout) it fails.
	_, err = s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Name: "slow", Arguments: json.RawMessage(`{"steps":1,"delay_ms":1500}`)}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool(slow, no progress) = %v, want DeadlineExceeded", err)
	}
}

func TestExitAtStartRecovers(t *testing.T) {
	t.Parallel()
	fix := filepath.Join(t.TempDir(), "fixed")
	var events []Event
	var mu sync.Mutex
	r, logs := newRegistry(t, &Options{
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		OnEvent: func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() },
	})
	s, err := r.Add("x", fakeConfig(t, "server", map[string]string{"FAKE_FIX_FILE": fix}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil {
		t.Fatal("WaitReady succeeded for a server that exits at start")
	}
	snap := s.Snapshot()
	if snap.State != StateFailed || snap.LastError == "" || snap.BackoffUntil.IsZero() {
		t.Errorf("Snapshot = %+v; want failed with an error and a backoff time", snap)
	}
	// A call fails fast with ErrSourceDown rather than hanging.
	_, err = s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo"}})
	if !errors.Is(err, junction.ErrSourceDown) {
		t.Errorf("CallTool while failed = %v, want ErrSourceDown", err)
	}
	// It keeps retrying.
	waitFor(t, "several attempts", func() bool { return strings.Count(logs.String(), "upstream connection failed") >= 3 })
	if err := os.WriteFile(fix, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "recovery", func() bool { return s.Snapshot().State == StateConnected })
	mu.Lock()
	defer mu.Unlock()
	var states []State
	for _, e := range events {
		if e.Kind == EventState {
			states = append(states, e.State)
		}
	}
	if len(states) < 2 || states[0] != StateFailed || states[len(states)-1] != StateConnected {
		t.Errorf("state events = %v; want failed ... connected", states)
	}
}

func TestJunkOnStdout(t *testing.T) {
	t.Parallel()
	r, logs := newRegistry(t, nil)
	s := addReady(t, r, "j", fakeConfig(t, "server", map[string]string{"FAKE_JUNK": "1"}))
	for i := range 20 {
		res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(fmt.Sprint(i))}})
		if err != nil || resultText(t, res) != fmt.Sprint(i) {
			t.Fatalf("CallTool(echo) with junk on stdout = %v, %v", res, err)
		}
	}
	if !strings.Contains(logs.String(), "skipped non-JSON-RPC line") {
		t.Errorf("junk lines were not logged")
	}
	if snap := s.Snapshot(); snap.Connects != 1 {
		t.Errorf("Connects = %d, want 1 (junk must not end the session)", snap.Connects)
	}
}

type recListener struct {
	mu      sync.Mutex
	changes int
	updated []string
}

func (l *recListener) CatalogChanged() { l.mu.Lock(); l.changes++; l.mu.Unlock() }
func (l *recListener) ResourceUpdated(uri string) {
	l.mu.Lock()
	l.updated = append(l.updated, uri)
	l.mu.Unlock()
}

func TestToolListChangeReportsDrift(t *testing.T) {
	t.Parallel()
	drifts := make(chan *junction.Drift, 4)
	r, _ := newRegistry(t, &Options{OnEvent: func(e Event) {
		if e.Kind == EventDrift {
			drifts <- e.Drift
		}
	}})
	s := addReady(t, r, "d", fakeConfig(t, "server", nil))
	l := &recListener{}
	s.SetListener(l)
	if _, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "grow"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-drifts:
		want := &junction.Drift{Added: []string{"extra"}}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("drift (-want +got):\n%s", diff)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no drift event after the tool list changed")
	}
	waitFor(t, "listener notified", func() bool { l.mu.Lock(); defer l.mu.Unlock(); return l.changes > 0 })
	snap := s.Snapshot()
	if !strings.Contains(snap.Drift.String(), "extra") || !containsString(snap.Tools, "extra") {
		t.Errorf("Snapshot = %+v; want the new tool and its drift", snap)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestResourceSubscription(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "res", fakeConfig(t, "server", nil))
	l := &recListener{}
	s.SetListener(l)
	if err := s.Subscribe(t.Context(), "fake://r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "touch"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "resource update", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.updated) == 1 && l.updated[0] == "fake://r"
	})
}

func TestOddSchemasAndUnknownContent(t *testing.T) {
	t.Parallel()
	r, logs := newRegistry(t, nil)
	s := addReady(t, r, "raw", fakeConfig(t, "raw", nil))
	var names []string
	for _, tool := range s.Tools() {
		names = append(names, tool.Name)
		if _, err := servable(tool); err != nil {
			t.Errorf("served tool %q is not servable: %v", tool.Name, err)
		}
	}
	// notype gets "type":"object"; noschema gets {"type":"object"};
	// array and nullable are skipped; the nameless tool and the duplicate
	// are skipped; widget loses its non-object output schema.
	if diff := cmp.Diff([]string{"notype", "noschema", "widget"}, names); diff != "" {
		t.Errorf("served tools (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs.String(), "tool skipped") {
		t.Error("skipped tools were not logged")
	}
	// Serving them through a real go-sdk server must not panic.
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	for _, tool := range s.Tools() {
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	}
	// Content of an unknown type does not fail the call.
	res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "widget"}})
	if err != nil {
		t.Fatalf("CallTool(widget) = %v", err)
	}
	if got := resultText(t, res); got != `before[unsupported content type "widget"]` {
		t.Errorf("widget result text = %q", got)
	}
	// A JSON-RPC error keeps its code and data.
	_, err = s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "boom"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32042 || werr.Message != "boom" || string(werr.Data) != `{"why":"testing"}` {
		t.Errorf("CallTool(boom) = %#v, want JSON-RPC error -32042 with its data", err)
	}
}

func TestRegistryAddReplaceRemove(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	cfg := fakeConfig(t, "server", nil)
	a := addReady(t, r, "a", cfg)
	if _, err := r.Add("a", cfg); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Add(duplicate) = %v, want ErrDuplicate", err)
	}
	if _, err := r.Add("a__b", cfg); err == nil {
		t.Error("Add(name with __) succeeded")
	}
	if _, err := r.Add("bad", Config{}); err == nil || !strings.Contains(err.Error(), "command: must not be empty") {
		t.Errorf("Add(empty config) = %v, want a command error", err)
	}
	b := addReady(t, r, "b", cfg)

	// Same config: kept, session and all.
	same, replaced, err := r.Replace("a", fakeConfig(t, "server", nil))
	if err != nil || replaced || same != a {
		t.Errorf("Replace(a, same) = %p, %v, %v; want the same server, not replaced", same, replaced, err)
	}
	// A bad config changes nothing.
	if _, _, err := r.Replace("a", Config{Transport: "carrier-pigeon"}); err == nil {
		t.Error("Replace(bad config) succeeded")
	}
	if r.Server("a") != a {
		t.Error("a bad Replace changed the registered server")
	}
	// A new filter is applied in place: same server, same session, the
	// tool gone.
	cfg2 := fakeConfig(t, "server", nil)
	cfg2.Deny = []string{"die"}
	cfg2.CallTimeout = time.Minute
	same, replaced, err = r.Replace("a", cfg2)
	if err != nil || replaced || same != a {
		t.Fatalf("Replace(a, new filter) = %p, %v, %v; want the same server, updated in place", same, replaced, err)
	}
	if snap := a.Snapshot(); containsString(snap.Tools, "die") || !containsString(snap.Tools, "echo") || snap.Connects != 1 {
		t.Errorf("after an in-place update: %+v; want echo but not die, one session", snap)
	}
	if got := a.Config(); got.CallTimeout != time.Minute {
		t.Errorf("Config().CallTimeout = %v after the update, want 1m", got.CallTimeout)
	}
	// A new command line needs a new process: the new server is
	// started, the old one stopped; b keeps running undisturbed.
	cfg3 := cfg2
	cfg3.Args = []string{"restarted"}
	a2, replaced, err := r.Replace("a", cfg3)
	if err != nil || !replaced || a2 == a {
		t.Fatalf("Replace(a, new args) = %v, %v", replaced, err)
	}
	if a.Snapshot().State != StateStopped {
		t.Errorf("old server state = %v, want stopped", a.Snapshot().State)
	}
	if err := a2.WaitReady(ctxTimeout(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove(twice) = %v, want ErrNotFound", err)
	}
	if diff := cmp.Diff([]string{"b"}, r.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	if snap := b.Snapshot(); snap.State != StateConnected || snap.Connects != 1 {
		t.Errorf("b after a's changes: %+v", snap)
	}
}

// Closing a server with a call hanging in it ends the call and returns.
func TestCloseDuringHangingCall(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.CallTimeout = -1 // no timeout: only Close can end it
	r, _ := newRegistry(t, nil)
	s := addReady(t, r, "c", cfg)
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "hang"}})
		done <- err
	}()
	waitFor(t, "call in flight", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.calls.len() == 1 })
	closed := make(chan error, 1)
	go func() { closed <- r.Remove("c") }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Remove = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Remove did not return while a call was hanging")
	}
	select {
	case err := <-done:
		if !errors.Is(err, junction.ErrSourceDown) {
			t.Errorf("hanging call after Close = %v, want ErrSourceDown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("hanging call did not end after Close")
	}
}

// Adding, replacing and removing servers does not disturb calls to a
// server whose configuration is unchanged.
func TestReloadUnderLoad(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, nil)
	stable := addReady(t, r, "stable", fakeConfig(t, "server", nil))
	stop := make(chan struct{})
	errs := make(chan error, 1)
	var calls sync.WaitGroup
	for w := range 4 {
		calls.Add(1)
		go func() {
			defer calls.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				arg := fmt.Sprintf(`"%d-%d"`, w, i)
				s := r.Server("stable")
				res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(arg)}})
				if err == nil && resultText(t, res) != arg {
					err = fmt.Errorf("echo %s = %q", arg, resultText(t, res))
				}
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}()
	}
	for round := range 3 {
		cfg := fakeConfig(t, "server", nil)
		cfg.Args = []string{fmt.Sprint(round)} // a restart each round
		if _, _, err := r.Replace("churn", cfg); err != nil {
			t.Fatal(err)
		}
		// The unchanged server is kept as it is.
		if s, replaced, err := r.Replace("stable", fakeConfig(t, "server", nil)); err != nil || replaced || s != stable {
			t.Fatalf("Replace(stable, same config) = %v, %v", replaced, err)
		}
		if err := r.Server("churn").WaitReady(ctxTimeout(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Remove("churn"); err != nil {
		t.Fatal(err)
	}
	close(stop)
	calls.Wait()
	select {
	case err := <-errs:
		t.Errorf("a call to the unchanged server failed during reloads: %v", err)
	default:
	}
	if snap := stable.Snapshot(); snap.Connects != 1 {
		t.Errorf("unchanged server reconnected %d times, want 1 session", snap.Connects)
	}
}

// A server that dies soon after each start is retried with backoff, not
// respawned in a tight loop.
func TestShortSessionsBackOff(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: 200 * time.Millisecond, MaxBackoff: time.Second})
	s, err := r.Add("flap", fakeConfig(t, "server", map[string]string{"FAKE_EXIT_AFTER_MS": "1000"}))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a backoff after a short session", func() bool {
		snap := s.Snapshot()
		return snap.State == StateDegraded && !snap.BackoffUntil.IsZero() && snap.Connects >= 1
	})
}

// TestStrictServerWithoutDiscover: a server that exits on a method it does
// not know (so on go-sdk's server/discover probe) still connects: junction
// tries again at once with initialize alone, says so in its log, and
// does not probe it again.
func TestStrictServerWithoutDiscover(t *testing.T) {
	t.Parallel()
	r, logs := newRegistry(t, nil)
	s := addReady(t, r, "strict", fakeConfig(t, "raw", map[string]string{"FAKE_STRICT": "1"}))
	if snap := s.Snapshot(); snap.State != StateConnected || len(snap.Tools) == 0 || snap.Connects != 1 {
		t.Fatalf("strict server: state %v, %d tools, %d connects; want connected once, with its tools (last error %q)", snap.State, len(snap.Tools), snap.Connects, snap.LastError)
	}
	if !strings.Contains(logs.String(), "failed the server/discover probe") {
		t.Errorf("no log line about the probe:\n%s", logs.String())
	}
	if !s.noDiscover.Load() {
		t.Error("the server is still to be probed on its next connection")
	}
}

// hostThroughHub puts up, as the source name, in a new hub and connects
// client to the hub's view as a host over an in-memory transport,
// offering version ("" for go-sdk's newest). The hub and both sessions
// are closed when the test ends.
func hostThroughHub(t *testing.T, ctx context.Context, name string, up *Server, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	return hostThroughHubOver(t, ctx, name, up, client, version, nil)
}

// hostThroughHubOver is hostThroughHub with the host's transport wrapped
// by wrap (if not nil).
func hostThroughHubOver(t *testing.T, ctx context.Context, name string, up *Server, client *mcp.Client, version string, wrap func(mcp.Transport) mcp.Transport) *mcp.ClientSession {
	t.Helper()
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(ctx, name, up, nil); err != nil {
		t.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	var host mcp.Transport = dataplane.New(view, nil).Transport()
	if wrap != nil {
		host = wrap(host)
	}
	cs, err := client.Connect(ctx, host, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
