package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostEvents records what the host (a go-sdk client talking to the hub)
// receives.
type hostEvents struct {
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	logs     []*mcp.LoggingMessageParams
	updated  []string
}

// TestThroughHub puts an upstream behind a real hub and drives it from a
// go-sdk client, at the newest protocol and at 2025-11-25 (where the
// upstream asks for sampling and elicitation by server-to-client
// requests, which junction routes back to the host that made the call).
func TestThroughHub(t *testing.T) {
	t.Parallel()
	for _, transport := range []Transport{TransportStdio, TransportStreamableHTTP} {
		for _, version := range []string{"", "2025-11-25"} {
			name := version
			if name == "" {
				name = "latest"
			}
			t.Run(string(transport)+"/"+name, func(t *testing.T) {
				t.Parallel()
				testThroughHub(t, transport, version, version)
			})
		}
	}
	// A 2025-11-25 upstream asks a 2026-07-28 host, through the bridge.
	t.Run("stdio/upstream-2025-11-25/host-latest", func(t *testing.T) {
		t.Parallel()
		testThroughHub(t, TransportStdio, "2025-11-25", "")
	})
}

func testThroughHub(t *testing.T, transport Transport, version, hostVersion string) {
	marks := t.TempDir()
	env := map[string]string{"FAKE_MARK_DIR": marks}
	cfg := fakeConfig(t, "server", env)
	if transport == TransportStreamableHTTP {
		if version == "" {
			env["FAKE_HTTP_STATELESS"] = "1"
		}
		cfg = Config{URL: startHTTPFake(t, env)}
	}
	cfg.ProtocolVersion = version
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)

	ctx := ctxTimeout(t, 60*time.Second)

	ev := &hostEvents{}
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			ev.mu.Lock()
			ev.progress = append(ev.progress, req.Params)
			ev.mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			ev.mu.Lock()
			ev.logs = append(ev.logs, req.Params)
			ev.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			ev.mu.Lock()
			ev.updated = append(ev.updated, req.Params.URI)
			ev.mu.Unlock()
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "pong"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
		},
	})
	// Under 2026-07-28, go-sdk's Subscribe returns before the server has
	// registered the subscription; the host waits for the acknowledgement.
	acked := make(chan struct{}, 1)
	client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && len(p.Notifications.ResourceSubscriptions) > 0 {
				acked <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	cs := hostThroughHub(t, ctx, "up", up, client, hostVersion)

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	for _, want := range []string{"up__echo", "up__slow", "up__hang", "up__sample"} {
		if !slices.Contains(names, want) {
			t.Errorf("host tools %v lack %q", names, want)
		}
	}

	callText := func(name string, args any, meta mcp.Meta) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
		if err != nil {
			t.Fatalf("CallTool(%s) = %v", name, err)
		}
		return resultText(t, res)
	}

	// Progress reaches the host with the host's own token.
	if got := callText("up__slow", map[string]any{"steps": 3, "delay_ms": 10}, mcp.Meta{"progressToken": "host-tok"}); got != "done" {
		t.Errorf("slow = %q", got)
	}
	waitFor(t, "3 progress notifications", func() bool {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		return len(ev.progress) == 3
	})
	ev.mu.Lock()
	for _, p := range ev.progress {
		if p.ProgressToken != "host-tok" {
			t.Errorf("progress token = %v, want host-tok", p.ProgressToken)
		}
	}
	ev.mu.Unlock()

	// Sampling and elicitation go back to this host.
	if got := callText("up__sample", nil, nil); got != "sampled: pong" {
		t.Errorf("sample = %q, want sampled: pong", got)
	}
	if got := callText("up__elicit", nil, nil); got != "elicited: accept ann" {
		t.Errorf("elicit = %q, want elicited: accept ann", got)
	}

	// Logging: the host asks for info and up, the upstream logs one. A
	// host before 2026-07-28 sets its session's level; under 2026-07-28,
	// which has no logging/setLevel, the level travels in each request's
	// _meta.
	if hostVersion != "" {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
			t.Fatal(err)
		}
	}
	callText("up__log", nil, mcp.Meta{mcp.MetaKeyLogLevel: "info"})
	waitFor(t, "forwarded log message", func() bool {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		return len(ev.logs) > 0 && ev.logs[0].Data == "hello from upstream"
	})

	// Resource subscriptions and updates.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fake://r"}); err != nil {
		t.Fatal(err)
	}
	if hostVersion == "" {
		select {
		case <-acked:
		case <-ctx.Done():
			t.Fatal("subscription never acknowledged")
		}
	}
	callText("up__touch", nil, nil)
	waitFor(t, "resource update", func() bool {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		return slices.Contains(ev.updated, "fake://r")
	})
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fake://r"})
	if err != nil || rr.Contents[0].Text != "resource body" {
		t.Errorf("ReadResource = %v, %v", rr, err)
	}

	// Cancelling the host's call cancels the upstream's.
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "up__hang"})
		done <- err
	}()
	waitFor(t, "hang call in flight upstream", func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		return up.calls.len() == 1
	})
	// Wait until the upstream itself runs the call: a cancellation that
	// arrives before the upstream has seen the request may be ignored (the
	// MCP spec allows it), which is not what this checks.
	waitFor(t, "upstream started the hang call", func() bool {
		_, err := os.Stat(filepath.Join(marks, "started"))
		return err == nil
	})
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled call returned no error")
	}
	waitFor(t, "upstream saw the cancellation", func() bool {
		_, err := os.Stat(filepath.Join(marks, "cancelled"))
		return err == nil
	})
	// And the session is fine for the next call.
	if got := callText("up__echo", json.RawMessage(`{"text":"after"}`), nil); !strings.Contains(got, "after") {
		t.Errorf("echo after cancel = %q", got)
	}
}

// TestBridgeByHand plays a 2026-07-28 host by hand against a 2025-11-25
// upstream that asks for elicitation: the host gets the question in the
// result, answers on a retry, and gets the tool's result; a question left
// unanswered does not keep Close from finishing.
func TestBridgeByHand(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	ctx := ctxTimeout(t, 60*time.Second)
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
	})
	cs := hostThroughHub(t, ctx, "up", up, client, "")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__elicit"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first result = %+v; want one input request and a request state", res)
	}
	var id string
	for k, v := range res.InputRequests {
		id = k
		if p, ok := v.(*mcp.ElicitParams); !ok || p.Message != "name?" {
			t.Errorf("input request = %#v, want the upstream's elicitation", v)
		}
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name:           "up__elicit",
		InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "zoe"}}},
		RequestState:   res.RequestState,
	})
	if err != nil || resultText(t, res) != "elicited: accept zoe" {
		t.Errorf("retried call = %v, %v; want elicited: accept zoe", res, err)
	}

	// A question nobody answers: the upstream call stays parked until Close.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__elicit"})
	if err != nil || len(res.InputRequests) != 1 {
		t.Fatalf("second call = %v, %v; want a question", res, err)
	}
	if err := r.Remove("up"); err != nil {
		t.Errorf("Remove with a parked call = %v", err)
	}
}

// bridgeHost is a 2026-07-28 host (go-sdk's client, answering nothing on
// its own) through a hub in front of the fake upstream at 2025-11-25,
// whose marks go to a directory of the test's; it records the progress
// it gets.
type bridgeHost struct {
	up    *Server
	cs    *mcp.ClientSession
	ctx   context.Context
	marks string

	mu  sync.Mutex
	got []float64
}

func newBridgeHost(t *testing.T) *bridgeHost {
	t.Helper()
	h := &bridgeHost{marks: t.TempDir()}
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_MARK_DIR": h.marks})
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	h.up = addReady(t, r, "up", cfg)
	h.ctx = ctxTimeout(t, 60*time.Second)
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.got = append(h.got, req.Params.Progress)
			h.mu.Unlock()
		},
	})
	h.cs = hostThroughHub(t, h.ctx, "up", h.up, client, "")
	return h
}

// progress returns the progress values the host got so far.
func (h *bridgeHost) progress() []float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

// askThenGo calls tool (with progress token "p"), requires one question
// back, then creates the mark "go" the fake's tool waits for, and returns
// the question's id and the request state.
func (h *bridgeHost) askThenGo(t *testing.T, tool string) (id, state string) {
	t.Helper()
	res, err := h.cs.CallTool(h.ctx, &mcp.CallToolParams{Name: tool, Meta: mcp.Meta{"progressToken": "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first result = %+v; want one input request and a request state", res)
	}
	for k := range res.InputRequests {
		id = k
	}
	if err := os.WriteFile(filepath.Join(h.marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return id, res.RequestState
}

// retry calls tool again, with progress token "p", answering the
// question id with accept and the name "zoe", under state.
func (h *bridgeHost) retry(tool, id, state string) (*mcp.CallToolResult, error) {
	return h.cs.CallTool(h.ctx, &mcp.CallToolParams{
		Name:           tool,
		Meta:           mcp.Meta{"progressToken": "p"},
		InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "zoe"}}},
		RequestState:   state,
	})
}

// TestBridgeKeepsProgress: progress that a bridged upstream call reports
// while it waits for the host's answer, when no request of the host's is
// open, is not lost: the host's retry gets it, ahead of what follows.
func TestBridgeKeepsProgress(t *testing.T) {
	t.Parallel()
	h := newBridgeHost(t)
	marks := h.marks
	// Once the host's request is over, the upstream reports progress.
	id, state := h.askThenGo(t, "up__elicit_progress")
	waitFor(t, "the upstream's progress 2", func() bool {
		_, err := os.Stat(filepath.Join(marks, "sent2"))
		return err == nil
	})
	res, err := h.retry("up__elicit_progress", id, state)
	if err != nil || resultText(t, res) != "elicited: accept zoe" {
		t.Fatalf("retried call = %v, %v; want elicited: accept zoe", res, err)
	}
	// go-sdk's client queues notifications for their handler, which may
	// run after the result is back.
	waitFor(t, "progress 1, 2, 3", func() bool {
		return slices.Equal(h.progress(), []float64{1, 2, 3})
	})
}

// TestBridgeRawKeepsProgress is TestBridgeKeepsProgress for a 2026-07-28
// host without a session, on the raw path: its requests carry host links
// (junction.HostLink), whose contexts may outlive their requests (a stdio
// connection's do); the progress that comes once the first is answered
// is held, and goes through the retry's link, ahead of what follows.
func TestBridgeRawKeepsProgress(t *testing.T) {
	t.Parallel()
	marks := t.TempDir()
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_MARK_DIR": marks})
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	ctx := ctxTimeout(t, 60*time.Second)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p"}`
	first := &recordLink{}
	raw, err := up.CallToolRaw(junction.WithHostLink(ctx, first), "elicit_progress", json.RawMessage(`{"name":"elicit_progress","arguments":{},`+meta+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var q struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &q); err != nil || len(q.InputRequests) != 1 || q.RequestState == "" {
		t.Fatalf("first call = %s (%v); want one question", raw, err)
	}
	first.close() // answered, as the front's link is once it has written the answer
	var id string
	for k := range q.InputRequests {
		id = k
	}
	// Once the host's request is over, the upstream reports progress.
	if err := os.WriteFile(filepath.Join(marks, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the upstream's progress 2", func() bool {
		_, err := os.Stat(filepath.Join(marks, "sent2"))
		return err == nil
	})
	retry := &recordLink{}
	raw, err = up.CallToolRaw(junction.WithHostLink(ctx, retry), "elicit_progress", json.RawMessage(fmt.Sprintf(
		`{"name":"elicit_progress","arguments":{},"inputResponses":{%q:{"action":"accept","content":{"name":"zoe"}}},"requestState":%q,%s}`, id, q.RequestState, meta)))
	if err != nil || resultText(t, decodeResult(t, raw)) != "elicited: accept zoe" {
		t.Fatalf("retried call = %s, %v; want elicited: accept zoe", raw, err)
	}
	if diff := cmp.Diff([]string{"notifications/progress p 1"}, first.take()); diff != "" {
		t.Errorf("the first request's link (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"notifications/progress p 2", "notifications/progress p 3"}, retry.take()); diff != "" {
		t.Errorf("the retry's link (-want +got):\n%s", diff)
	}
}

// TestBridgeOutcomeWaitsForRetry: when a bridged call ends while its
// host holds a question and has not come back, the host's retry gets the
// call's result, and the progress it reported before it ended; the call
// does not run again.
func TestBridgeOutcomeWaitsForRetry(t *testing.T) {
	t.Parallel()
	h := newBridgeHost(t)
	up := h.up
	// The upstream call ends while the host holds the question.
	id, state := h.askThenGo(t, "up__elicit_then_done")
	waitFor(t, "the upstream call to end", func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		return up.calls.len() == 0
	})
	res, err := h.retry("up__elicit_then_done", id, state)
	if err != nil || len(res.InputRequests) != 0 || resultText(t, res) != "run 1" {
		t.Fatalf("retried call = %+v, %v; want the first run's result, run 1", res, err)
	}
	waitFor(t, "the call's progress", func() bool {
		return slices.Equal(h.progress(), []float64{1})
	})
	// Collected, the outcome is gone: nothing of the call stays parked.
	if !up.idle() {
		t.Error("a bridge is still parked after its outcome was collected")
	}
}

// TestBridgeRaw plays a 2026-07-28 host without a session (a stateless
// request) through the raw path, against a 2025-11-25 upstream that asks
// twice: each question comes back as an input-required result under the
// same request state, each retry carries the answer, and the last one
// gets the result. The calls are plain raw calls until the upstream asks;
// one through StartToolRaw takes the same way.
func TestBridgeRaw(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	type question struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
		ResultType    string                     `json:"resultType"`
	}
	ask := func(raw json.RawMessage) (string, string) {
		t.Helper()
		var q question
		if err := json.Unmarshal(raw, &q); err != nil || q.ResultType != "input_required" || len(q.InputRequests) != 1 || q.RequestState == "" {
			t.Fatalf("want one question, got %s (%v)", raw, err)
		}
		for id := range q.InputRequests {
			return id, q.RequestState
		}
		return "", ""
	}
	retry := func(id, state, name string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"name":"elicit2","arguments":{},"inputResponses":{%q:{"action":"accept","content":{"name":%q}}},"requestState":%q,%s}`, id, name, state, meta))
	}
	calls := map[string]func(json.RawMessage) (json.RawMessage, error){
		"CallToolRaw": func(p json.RawMessage) (json.RawMessage, error) { return up.CallToolRaw(t.Context(), "elicit2", p) },
		"StartToolRaw": func(p json.RawMessage) (json.RawMessage, error) {
			type result struct {
				raw json.RawMessage
				err error
			}
			ch := make(chan result, 1)
			up.StartToolRaw(t.Context(), "elicit2", p, junction.RawDoneFunc(func(raw json.RawMessage, _ junction.ResultFacts, err error) { ch <- result{raw, err} }))
			res := <-ch
			return res.raw, res.err
		},
	}
	for _, how := range []string{"CallToolRaw", "StartToolRaw"} { // in this order: see the end
		call := calls[how]
		raw, err := call(json.RawMessage(`{"name":"elicit2","arguments":{},` + meta + `}`))
		if err != nil {
			t.Fatalf("%s: first call: %v", how, err)
		}
		id1, state := ask(raw)
		if raw, err = call(retry(id1, state, "ann")); err != nil {
			t.Fatalf("%s: first retry: %v", how, err)
		}
		id2, state2 := ask(raw)
		if id2 == id1 || state2 == state {
			t.Errorf("%s: second question %q under state %q; want a new id under a new state (first: %q, %q)", how, id2, state2, id1, state)
		}
		if raw, err = call(retry(id2, state2, "bob")); err != nil {
			t.Fatalf("%s: second retry: %v", how, err)
		}
		if got := resultText(t, decodeResult(t, raw)); got != "elicited: ann, bob" {
			t.Errorf("%s: result %q, want elicited: ann, bob", how, got)
		}
		if how == "StartToolRaw" {
			// The bridge is gone: its state starts the call again. (Last:
			// the call stays parked, and a legacy upstream's question names
			// no call, so a second call asking at once could not be told
			// from it.)
			if raw, err = call(retry(id2, state2, "bob")); err != nil {
				t.Fatalf("%s: retry of a finished bridge: %v", how, err)
			}
			if _, st := ask(raw); st == state || st == state2 {
				t.Errorf("a finished bridge's state %q was used again", st)
			}
		}
	}
}

// TestBridgeStateChecked: a retry whose request state this process did
// not give out (altered by a character, made up), or gave to another
// user, is refused with
// -32602 and resumes nothing; the call's own state still resumes it.
func TestBridgeStateChecked(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	raw, err := up.CallToolRaw(t.Context(), "elicit2", json.RawMessage(`{"name":"elicit2","arguments":{},`+meta+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var q struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(raw, &q); err != nil || len(q.InputRequests) != 1 {
		t.Fatalf("want one question, got %s (%v)", raw, err)
	}
	var id string
	for id = range q.InputRequests {
	}
	retry := func(state string) (json.RawMessage, error) {
		return up.CallToolRaw(t.Context(), "elicit2", json.RawMessage(fmt.Sprintf(
			`{"name":"elicit2","arguments":{},"inputResponses":{%q:{"action":"accept","content":{"name":"ann"}}},"requestState":%q,%s}`, id, state, meta)))
	}
	flip := []byte(q.RequestState)
	if flip[len(flip)-1] == '0' {
		flip[len(flip)-1] = '1'
	} else {
		flip[len(flip)-1] = '0'
	}
	for _, bad := range []string{string(flip), "junction-bridge-00", "someone-elses-state"} {
		_, err := retry(bad)
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "requestState") {
			t.Errorf("retry with state %q: error %v; want -32602 naming requestState", bad, err)
		}
	}
	// The call's own state, with another user's credential: refused.
	_, err = up.CallToolRaw(junction.WithUser(t.Context(), "mallory"), "elicit2", json.RawMessage(fmt.Sprintf(
		`{"name":"elicit2","arguments":{},"inputResponses":{%q:{"action":"accept","content":{"name":"eve"}}},"requestState":%q,%s}`, id, q.RequestState, meta)))
	if werr := (*jsonrpc.Error)(nil); !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "requestState") {
		t.Errorf("retry with the call's state by another user: error %v; want -32602 naming requestState", err)
	}
	raw, err = retry(q.RequestState)
	if err != nil {
		t.Fatalf("retry with the call's own state: %v", err)
	}
	q.InputRequests = nil
	if err := json.Unmarshal(raw, &q); err != nil || len(q.InputRequests) != 1 {
		t.Fatalf("the call's own state did not resume it to its second question: %s (%v)", raw, err)
	}
}

// TestBridgePrompt: a legacy upstream that elicits while building a
// prompt for a 2026-07-28 host asks it through an input-required
// GetPromptResult, and the retry with the answer gets the prompt.
func TestBridgePrompt(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "server", nil)
	cfg.ProtocolVersion = "2025-11-25"
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", cfg)
	meta := mcp.Meta{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{}}}
	res, err := up.GetPrompt(t.Context(), &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "ask", Meta: meta}})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("prompts/get: %+v; want one question and a request state", res)
	}
	var id string
	for id = range res.InputRequests {
	}
	res, err = up.GetPrompt(t.Context(), &mcp.GetPromptRequest{Params: &mcp.GetPromptParams{Name: "ask", Meta: meta,
		InputResponses: mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}},
		RequestState:   res.RequestState}})
	if err != nil {
		t.Fatalf("prompts/get retry: %v", err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Content.(*mcp.TextContent).Text != "hello ann" {
		t.Errorf("prompts/get retry: %+v; want the prompt built with the answer", res)
	}
}
