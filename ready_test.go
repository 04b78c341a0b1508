package junction_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lateSource is a source that connects in the background (a Readier):
// its catalog is empty until ready is closed, then it is the pack's.
type lateSource struct {
	*junction.Pack
	ready chan struct{}
}

func newLateSource(name string, tools ...string) *lateSource {
	return &lateSource{Pack: newPack(name, tools...), ready: make(chan struct{})}
}

func (s *lateSource) Ready() <-chan struct{} { return s.ready }

func (s *lateSource) Catalog(ctx context.Context) (*junction.Catalog, error) {
	select {
	case <-s.ready:
		return s.Pack.Catalog(ctx)
	default:
		return &junction.Catalog{}, nil
	}
}

var _ junction.Readier = (*lateSource)(nil)

// connectIn is connect for a synctest bubble, of a host at 2025-11-25
// (one that initializes, and sets its log level on its session): it
// returns a func that closes the session, which the test must call
// before the bubble ends.
func connectIn(t *testing.T, v *junction.View) (*mcp.ClientSession, func()) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), dataplane.New(v, nil).Transport(), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	return cs, func() { cs.Close() }
}

func toolNames(res *mcp.ListToolsResult) []string {
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestFirstListWaitsForSourcesStillConnecting: a host that lists tools
// right after initialize sees the tools of a source that was still
// connecting, not a hub with half its tools; a call sent at once waits
// for the source too.
func TestFirstListWaitsForSourcesStillConnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := junction.New(nil)
		defer h.Close()
		add(t, h, "core", newPack("core", "version"), junction.PrefixNever)
		late := newLateSource("late", "echo")
		add(t, h, "late", late, junction.PrefixAlways)
		v, err := h.NewLenientView("", junction.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		cs, stop := connectIn(t, v)
		defer stop()
		if h.Started() {
			t.Error("Started() = true while a source is connecting")
		}

		listed := make(chan *mcp.ListToolsResult, 1)
		go func() {
			res, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Errorf("ListTools: %v", err)
			}
			listed <- res
		}()
		called := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late__echo", Arguments: map[string]any{"text": "hi"}})
			if err != nil {
				t.Errorf("CallTool: %v", err)
			}
			called <- res
		}()
		synctest.Wait()
		select {
		case res := <-listed:
			t.Fatalf("tools/list answered before the source was ready: %v", toolNames(res))
		case res := <-called:
			t.Fatalf("tools/call answered before the source was ready: %v", res)
		default:
		}

		time.Sleep(2 * time.Second) // fake time: well inside the budget
		close(late.ready)
		if got, want := toolNames(<-listed), []string{"late__echo", "version"}; !slices.Equal(got, want) {
			t.Errorf("first tools/list = %v, want %v", got, want)
		}
		if res := <-called; res == nil || res.IsError {
			t.Errorf("first tools/call = %v, want the tool's result", res)
		}
		if !h.Started() {
			t.Error("Started() = false once every source is ready")
		}
	})
}

// TestMetaToolsWaitForSourcesStillConnecting: a search sent right after
// the host starts the hub finds the tools of a source still connecting,
// as the first list would list them, rather than a catalog without them.
func TestMetaToolsWaitForSourcesStillConnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := junction.New(nil)
		defer h.Close()
		late := newLateSource("late", "echo")
		add(t, h, "late", late, junction.PrefixAlways)
		v, err := h.NewLenientView("", junction.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
			t.Fatal(err)
		}
		found := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := v.CallOwnTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
				Name: "search_tools", Arguments: json.RawMessage(`{"query":"echo"}`)}})
			if err != nil {
				t.Errorf("search_tools: %v", err)
			}
			found <- res
		}()
		synctest.Wait()
		select {
		case res := <-found:
			t.Fatalf("search_tools answered before the source was ready: %v", text(res))
		default:
		}
		close(late.ready)
		if res := <-found; res == nil || !strings.Contains(text(res), "late__echo") {
			t.Errorf("the first search = %v, want late__echo", res)
		}
	})
}

// TestStartupBudgetRunsOut: a source that never gets ready holds a host's
// lists only for the startup budget; then the hub serves what it has,
// says so in the log, and a call to the missing source's tool names the
// reason.
func TestStartupBudgetRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		h := junction.New(&junction.Options{StartupBudget: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		defer h.Close()
		add(t, h, "core", newPack("core", "version"), junction.PrefixNever)
		late := newLateSource("late", "echo")
		defer close(late.ready) // lets the hub's watcher end
		add(t, h, "late", late, junction.PrefixAlways)
		v, err := h.NewLenientView("", junction.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		cs, stop := connectIn(t, v)
		defer stop()

		start := time.Now()
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 2*time.Second || waited > 3*time.Second {
			t.Errorf("tools/list waited %v, want the rest of the 3s budget", waited)
		}
		if got := toolNames(res); !slices.Equal(got, []string{"version"}) {
			t.Errorf("tools/list after the budget = %v, want the ready sources' tools", got)
		}
		if !h.Started() {
			t.Error("Started() = false after the budget ran out")
		}
		if !strings.Contains(logs.String(), "startup budget ran out") || !strings.Contains(logs.String(), "late") {
			t.Errorf("log does not say the budget ran out with source late still connecting:\n%s", logs.String())
		}
		if got := h.Connecting(); !slices.Equal(got, []string{"late"}) {
			t.Errorf("Connecting() = %v, want [late]", got)
		}

		// A call to a tool of the source still connecting waits up to the
		// budget, then says why the tool is unknown.
		start = time.Now()
		_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late__echo"})
		if err == nil || !strings.Contains(err.Error(), `unknown tool "late__echo" (1 source(s) still connecting)`) {
			t.Errorf("call to a tool of a source still connecting: %v", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("the call waited %v, want the 3s budget", waited)
		}
	})
}

// TestNoSourcesConnectingNoWait: without Readier sources, or with a
// negative budget, nothing waits.
func TestNoSourcesConnectingNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := junction.New(&junction.Options{StartupBudget: -1})
		defer h.Close()
		late := newLateSource("late", "echo")
		defer close(late.ready)
		add(t, h, "late", late, junction.PrefixAlways)
		v, err := h.NewLenientView("", junction.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		cs, stop := connectIn(t, v)
		defer stop()
		start := time.Now()
		if _, err := cs.ListTools(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "late__echo"}); err == nil {
			t.Error("call of a tool not known yet succeeded")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("waited %v with a negative budget", d)
		}
	})
}

// blockingSource is a pack whose tool "wait" blocks until release is
// closed, counting the calls it has started.
type blockingSource struct {
	*junction.Pack
	started chan string
	release chan struct{}
}

func newBlockingSource(name string) *blockingSource {
	b := &blockingSource{Pack: junction.NewPack(name), started: make(chan string, 16), release: make(chan struct{})}
	junction.AddTool(b.Pack, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		b.started <- name
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil, nil
	})
	return b
}

// TestDrainWaitsForCallsOnReplacedSource: a call routed to a source
// before it was replaced finishes there, and Drain returns only then;
// calls after the swap go to the new source.
func TestDrainWaitsForCallsOnReplacedSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := junction.New(nil)
		defer h.Close()
		old := newBlockingSource("old")
		add(t, h, "s", old, junction.PrefixNever)

		first := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := h.Call(t.Context(), "wait", nil)
			if err != nil {
				t.Errorf("call on the old source: %v", err)
			}
			first <- res
		}()
		<-old.started
		if err := h.Drain(t.Context(), old); err == nil {
			t.Error("Drain of a source the hub still serves succeeded")
		}

		repl := newBlockingSource("new")
		close(repl.release)
		if err := h.Replace(t.Context(), "s", repl, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
			t.Fatal(err)
		}
		drained := make(chan error, 1)
		go func() { drained <- h.Drain(t.Context(), old) }()
		synctest.Wait()
		select {
		case err := <-drained:
			t.Fatalf("Drain returned %v with a call in flight on the old source", err)
		default:
		}
		if res, err := h.Call(t.Context(), "wait", nil); err != nil || text(res) != "new" {
			t.Errorf("call after the swap = %v, %v; want the new source's answer", res, err)
		}
		close(old.release)
		if res := <-first; text(res) != "old" {
			t.Errorf("the call in flight at the swap = %v, want the old source's answer", res)
		}
		if err := <-drained; err != nil {
			t.Errorf("Drain = %v", err)
		}
		if err := h.Drain(t.Context(), old); err != nil {
			t.Errorf("second Drain = %v, want nil at once", err)
		}
	})
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// levelSource records the levels the hub gives it.
type levelSource struct {
	*junction.Pack
	mu     sync.Mutex
	levels []mcp.LoggingLevel
}

func (s *levelSource) SetLogLevel(l mcp.LoggingLevel) {
	s.mu.Lock()
	s.levels = append(s.levels, l)
	s.mu.Unlock()
}

func (s *levelSource) got() []mcp.LoggingLevel {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.levels)
}

// TestLogLevelReachesSources: the most verbose level any host session
// asked for reaches LevelSetter sources, and goes back when that host
// leaves.
func TestLogLevelReachesSources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := junction.New(nil)
		defer h.Close()
		src := &levelSource{Pack: newPack("up", "x")}
		add(t, h, "up", src, junction.PrefixAlways)
		v, err := h.NewView("", junction.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		quiet, stopQuiet := connectIn(t, v)
		defer stopQuiet()
		loud, stopLoud := connectIn(t, v)
		if err := quiet.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
			t.Fatal(err)
		}
		if err := loud.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		if got := h.LogLevel(); got != "debug" {
			t.Errorf("LogLevel() = %q, want debug", got)
		}
		stopLoud()
		synctest.Wait()
		if got, want := src.got(), []mcp.LoggingLevel{"error", "debug", "error"}; !slices.Equal(got, want) {
			t.Errorf("levels given to the source = %v, want %v", got, want)
		}
		// A source added later learns the level at once.
		later := &levelSource{Pack: newPack("later", "y")}
		add(t, h, "later", later, junction.PrefixAlways)
		if got := later.got(); !slices.Equal(got, []mcp.LoggingLevel{"error"}) {
			t.Errorf("levels given to a source added later = %v, want [error]", got)
		}
	})
}

// panicSource panics in CallTool.
type panicSource struct{ *junction.Pack }

func (panicSource) CallTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	panic("boom")
}

// TestPanicBecomesInternalErrorWithStack: a panicking source gives the
// host an INTERNAL tool error and the log the panic's stack.
func TestPanicBecomesInternalErrorWithStack(t *testing.T) {
	var logs bytes.Buffer
	h := junction.New(&junction.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	t.Cleanup(func() { h.Close() })
	add(t, h, "p", panicSource{newPack("p", "x")}, junction.PrefixNever)
	res, err := h.Call(t.Context(), "x", json.RawMessage(`{}`))
	if err != nil || !res.IsError || !strings.Contains(text(res), `"code":"INTERNAL"`) || !strings.Contains(text(res), "source panicked: boom") {
		t.Fatalf("call of a panicking source = %v, %v", res, err)
	}
	var rec struct {
		Msg   string `json:"msg"`
		Stack string `json:"stack"`
	}
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if rec.Msg != "tool call failed" || !strings.Contains(rec.Stack, "panicSource.CallTool") {
		t.Errorf("log record = %+v, want the panic's stack", rec)
	}
}
