package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// startHTTPFast serves src (prefix "s__") over Streamable HTTP by the
// plane (its default Options).
func startHTTPFast(t testing.TB, src junction.Source, opts HTTPOptions) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(viewOf(t, src), nil).HTTPHandler(&opts))
	t.Cleanup(srv.Close)
	return srv
}

// viewOf is the default view of a hub serving src (prefix "s__"),
// closed at cleanup.
func viewOf(t testing.TB, src junction.Source) *junction.View {
	t.Helper()
	return viewWith(t, nil, src)
}

// viewWith is viewOf with the hub made with opts.
func viewWith(t testing.TB, opts *junction.Options, src junction.Source) *junction.View {
	t.Helper()
	_, v := hubWith(t, opts, src)
	return v
}

// hubWith is viewWith returning the hub too.
func hubWith(t testing.TB, opts *junction.Options, src junction.Source) (*junction.Hub, *junction.View) {
	t.Helper()
	hub := junction.New(opts)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "s", src, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return hub, v
}

// echoRaw answers a raw call with the text of its "msg" argument.
func echoRaw(_ context.Context, _ string, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Arguments struct {
			Msg string `json:"msg"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, err
	}
	return json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: p.Arguments.Msg}}})
}

func connectSDK(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name, msg string) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"msg": msg}})
	if err != nil {
		t.Fatalf("CallTool(%s) = %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("CallTool(%s) content = %v", name, res.Content)
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		t.Fatalf("CallTool(%s) content = %#v", name, res.Content[0])
	}
	return tc.Text
}

// TestHTTPFastPath: a go-sdk client on a stateful session gets plain
// calls answered by the raw path, calls with _meta by the ordinary one,
// and lists as before.
func TestHTTPFastPath(t *testing.T) {
	var raw atomic.Int32
	f := &rawFake{tools: []string{"echo"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		raw.Add(1)
		if junction.HostSession(ctx) == nil {
			return nil, fmt.Errorf("no host session in the call's context")
		}
		return echoRaw(ctx, name, params)
	}}
	srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateful})
	cs := connectSDK(t, srv.URL, nil)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "s__echo" {
		t.Fatalf("ListTools = %v, %v", tools, err)
	}
	for i := range 10 {
		msg := fmt.Sprintf("hello %d", i)
		if got := callText(t, cs, "s__echo", msg); got != msg {
			t.Errorf("call %d = %q, want %q", i, got, msg)
		}
	}
	if raw.Load() != 10 || f.slow.Load() != 0 {
		t.Errorf("raw calls %d, ordinary calls %d; want 10 and 0", raw.Load(), f.slow.Load())
	}
	p := &mcp.CallToolParams{Name: "s__echo", Arguments: map[string]any{"msg": "x"}}
	p.SetProgressToken("tok")
	if _, err := cs.CallTool(t.Context(), p); err != nil || f.slow.Load() != 0 || raw.Load() != 11 {
		t.Errorf("a call with a progress token: err %v, ordinary calls %d; want the raw path", err, f.slow.Load())
	}
	// An unknown tool is the ordinary path's to refuse.
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "nope"}); err == nil && !res.IsError {
		t.Errorf("unknown tool: %v", res)
	}
}

// TestHTTPFastPathLogs: log messages sent during a fast call reach the
// host, before the result, on the call's response (an SSE stream), and
// only at the level the host asked for; with JSONResponse they go where
// go-sdk sends them (the go-sdk client's GET stream).
func TestHTTPFastPathLogs(t *testing.T) {
	f := &rawFake{tools: []string{"chatty"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		ss := junction.HostSession(ctx)
		for _, lvl := range []mcp.LoggingLevel{"debug", "info", "warning"} {
			if err := junction.Log(ctx, ss, &mcp.LoggingMessageParams{Level: lvl, Data: "log " + string(lvl)}); err != nil {
				return nil, err
			}
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	}}
	for _, jsonOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonOnly), func(t *testing.T) {
			srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateful, JSONResponse: jsonOnly})
			logs := make(chan string, 10)
			cs := connectSDK(t, srv.URL, &mcp.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				logs <- fmt.Sprint(r.Params.Data)
			}})
			if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			if got := callText(t, cs, "s__chatty", ""); got != "done" {
				t.Fatalf("result %q", got)
			}
			var got []string
			deadline := time.After(2 * time.Second)
		collect:
			for len(got) < 2 {
				select {
				case l := <-logs:
					got = append(got, l)
				case <-deadline:
					break collect
				}
			}
			want := "log info,log warning"
			if strings.Join(got, ",") != want {
				t.Errorf("logs = %q, want %q", got, want)
			}
		})
	}
}

// rawPost POSTs body on session sid and returns the response.
func rawPost(t *testing.T, url, sid, body string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(rawRequest(t, url, sid, body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// rawRequest is rawPost's request, with t's context.
func rawRequest(t *testing.T, url, sid, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return req
}

// rawSession initializes a session by hand and returns its id.
func rawSession(t *testing.T, url string) string {
	t.Helper()
	resp := rawPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, sid)
	}
	resp = rawPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	io.Copy(io.Discard, resp.Body)
	return sid
}

// TestHTTPFastPathRaw checks the wire: a JSON answer with the session id,
// a session go-sdk does not know, and a cancelled call.
func TestHTTPFastPathRaw(t *testing.T) {
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{})
	f := &rawFake{tools: []string{"echo", "wait"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		if name == "echo" {
			return echoRaw(ctx, name, params)
		}
		started <- struct{}{}
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	srv := startHTTPFast(t, f, HTTPOptions{})
	sid := rawSession(t, srv.URL)

	resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}`)
	body, _ := io.ReadAll(resp.Body)
	want := `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi"}]}}` + "\n"
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
		resp.Header.Get("Mcp-Session-Id") != sid || string(body) != want {
		t.Errorf("fast call: %s %q session %q\n%s\nwant %s", resp.Status, resp.Header.Get("Content-Type"), resp.Header.Get("Mcp-Session-Id"), body, want)
	}

	// A session go-sdk does not know is go-sdk's to refuse.
	resp = rawPost(t, srv.URL, "no-such-session", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %s, want 404", resp.Status)
	}

	// Cancelling a fast call: the source's context ends, the cancel POST
	// is accepted, and the call's response ends without an answer.
	done := make(chan string, 1)
	go func() {
		resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__wait"}}`)
		b, _ := io.ReadAll(resp.Body)
		done <- string(b)
	}()
	<-started
	resp = rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"bored"}}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("cancel: %s, want 202", resp.Status)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the source's context was not cancelled")
	}
	select {
	case b := <-done:
		if strings.Contains(b, `"id":3`) {
			t.Errorf("a cancelled call was answered: %s", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call's response did not end")
	}
}

// TestHTTPFastPathSessionEnds: a session the host deleted is not served
// raw any more: the raw path forgets it as go-sdk closes it (told by the
// event store, before the DELETE is answered), and go-sdk refuses the
// session.
func TestHTTPFastPathSessionEnds(t *testing.T) {
	var raw atomic.Int32
	f := &rawFake{tools: []string{"echo"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		raw.Add(1)
		return echoRaw(ctx, name, params)
	}}
	srv := startHTTPFast(t, f, HTTPOptions{})
	for i := range 3 {
		sid := rawSession(t, srv.URL)
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}`
		resp := rawPost(t, srv.URL, sid, call)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || raw.Load() != int32(i+1) {
			t.Fatalf("session %d: call %s, %d raw calls; want 200 and %d", i, resp.Status, raw.Load(), i+1)
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, srv.URL, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		dresp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		dresp.Body.Close()
		if dresp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %s, want 204", dresp.Status)
		}
		resp = rawPost(t, srv.URL, sid, call)
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusNotFound || raw.Load() != int32(i+1) || f.slow.Load() != 0 {
			t.Errorf("session %d after DELETE: %s, %d raw calls, %d through go-sdk; want 404 and none", i, resp.Status, raw.Load()-int32(i+1), f.slow.Load())
		}
	}
}

// TestDeleteEndsSessionCalls: a host's DELETE of its session cancels the
// session's calls in flight, on go-sdk's path (a pack's tool; the id a
// fraction, which go-sdk gets as one of the plane's) and on the raw path,
// and is answered without waiting for them to end on their own. go-sdk
// alone would wait for its handlers, and the calls would go on.
func TestDeleteEndsSessionCalls(t *testing.T) {
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	started, cancelled := make(chan string, 2), make(chan string, 2)
	release := make(chan struct{}) // the test is over: end the calls
	wait := func(ctx context.Context, which string) error {
		started <- which
		select {
		case <-ctx.Done():
			cancelled <- which
			return ctx.Err()
		case <-release:
			return errors.New("not cancelled")
		}
	}
	p := junction.NewPack("p")
	junction.AddTool(p, &mcp.Tool{Name: "typed"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, wait(ctx, "typed")
	})
	f := &rawFake{tools: []string{"raw"}, raw: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		return nil, wait(ctx, "raw")
	}}
	for name, src := range map[string]junction.Source{"p": p, "f": f} {
		if err := hub.Add(t.Context(), name, src, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(v, nil).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	var posts sync.WaitGroup
	t.Cleanup(func() { // before srv.Close, which waits for the calls
		close(release)
		cancel()
		posts.Wait()
	})
	sid := rawSession(t, srv.URL)
	for _, call := range []string{
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"typed","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"raw","arguments":{}}}`,
	} {
		req := rawRequest(t, srv.URL, sid, call)
		posts.Go(func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for range 2 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the two calls did not start")
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, srv.URL, nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE with two calls in flight: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s, want 204", resp.Status)
	}
	got := map[string]bool{}
	for range 2 {
		select {
		case which := <-cancelled:
			got[which] = true
		case <-ctx.Done():
			t.Fatalf("calls cancelled by the DELETE: %v; want typed and raw", got)
		}
	}
}

// TestHTTPFastPathKeepsSessionAlive: a session busy only with raw calls
// (which go-sdk never sees) is not ended as idle; quiet for longer than
// the timeout, it is.
func TestHTTPFastPathKeepsSessionAlive(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	const timeout = time.Second
	h := New(viewOf(t, f), nil).HTTPHandler(&HTTPOptions{Mode: HTTPStateful, SessionTimeout: timeout})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	sid := rawSession(t, srv.URL)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i, start := 0, time.Now(); time.Since(start) < 2*timeout; i++ {
		resp := rawPost(t, srv.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`, i+10))
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"result"`)) {
			t.Fatalf("call %d: %s %s", i, resp.Status, b)
		}
		<-tick.C
	}
	if f.slow.Load() != 0 {
		t.Errorf("%d calls went to go-sdk", f.slow.Load())
	}
	// Quiet for longer than the timeout, the session ends.
	front := h.(*sessionFront)
	waitFor(t, "the session to end", func() bool { return front.count() == 0 })
	resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"x"}}}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("after idling past the timeout: %s, want 404", resp.Status)
	}
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestHTTPFastPathSSEOrder: with log messages, the answer is an SSE
// stream whose last event is the result.
func TestHTTPFastPathSSEOrder(t *testing.T) {
	f := &rawFake{tools: []string{"chatty"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		junction.Log(ctx, junction.HostSession(ctx), &mcp.LoggingMessageParams{Level: "error", Data: "first"})
		return json.RawMessage(`{"content":[]}`), nil
	}}
	srv := startHTTPFast(t, f, HTTPOptions{})
	sid := rawSession(t, srv.URL)
	io.Copy(io.Discard, rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`).Body)
	resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__chatty"}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var data []string
	for _, e := range readEvents(t, resp.Body) {
		if e.data == "" {
			if e.name != "prime" || e.id == "" {
				t.Errorf("event %+v: an event without data should be the priming event, with an id", e)
			}
			continue
		}
		if e.id == "" {
			t.Errorf("event %+v has no id: the stream cannot be resumed", e)
		}
		data = append(data, e.data)
	}
	if len(data) != 2 || !strings.Contains(data[0], `"notifications/message"`) || !strings.Contains(data[0], `"first"`) ||
		data[1] != `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` {
		t.Errorf("events: %q", data)
	}
}

// TestHTTPModernLogLevel: a 2026-07-28 request, which has no session,
// that asks for log messages (logLevel) and progress takes the raw path,
// and gets the source's progress and its log messages at that level or
// above on its response, an SSE stream, before the answer.
func TestHTTPModernLogLevel(t *testing.T) {
	f := &rawFake{tools: []string{"chatty"}, raw: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		ss := junction.HostSession(ctx) // nil: the request has no session
		for _, level := range []mcp.LoggingLevel{"info", "error"} {
			if err := junction.Log(ctx, ss, &mcp.LoggingMessageParams{Level: level, Data: string(level)}); err != nil {
				return nil, err
			}
		}
		if err := junction.NotifyProgress(ctx, ss, &mcp.ProgressNotificationParams{ProgressToken: "p", Progress: 1}); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[]}`), nil
	}}
	srv := startHTTPFast(t, f, HTTPOptions{})
	post := func(meta string) *http.Response {
		resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, "tools/call", "s__chatty", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__chatty","_meta":{`+
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`+meta+`}}}`))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post(`,"io.modelcontextprotocol/logLevel":"warning","progressToken":"p"`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var data []string
	for _, e := range readEvents(t, resp.Body) {
		data = append(data, e.data)
	}
	if len(data) != 3 || !strings.Contains(data[0], `"notifications/message"`) || !strings.Contains(data[0], `"error"`) ||
		!strings.Contains(data[1], `"notifications/progress"`) || !strings.Contains(data[2], `"id":1,"result"`) {
		t.Errorf("events: %q; want the error message, the progress, then the answer", data)
	}
	// Neither asked for: the answer alone, as JSON.
	resp = post("")
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("a request asking for nothing: Content-Type %q, want application/json", ct)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("%d calls through go-sdk; want none", n)
	}
}

// TestHTTPStatelessProgress: in stateless mode, an older client's call
// that asks for progress takes the raw path, and the source's progress
// goes on its response, before the answer, as go-sdk's stateless handler
// sends it; with JSON answers only, the call is answered without it.
func TestHTTPStatelessProgress(t *testing.T) {
	f := &rawFake{tools: []string{"steps"}, raw: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		if err := junction.NotifyProgress(ctx, junction.HostSession(ctx), &mcp.ProgressNotificationParams{ProgressToken: "p", Progress: 1}); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[]}`), nil
	}}
	const call = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__steps","_meta":{"progressToken":"p"}}}`
	srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateless})
	var data []string
	for _, e := range readEvents(t, rawPost(t, srv.URL, "", call).Body) {
		data = append(data, e.data)
	}
	if len(data) != 2 || !strings.Contains(data[0], `"notifications/progress"`) || !strings.Contains(data[1], `"id":1,"result"`) {
		t.Errorf("events: %q; want the progress, then the answer", data)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("%d calls through go-sdk; want none", n)
	}
	// With JSON answers only, there is no stream for the progress: the
	// call is answered, and the progress goes nowhere.
	srv = startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateless, JSONResponse: true})
	resp := rawPost(t, srv.URL, "", call)
	if m := jsonAnswer(t, resp); m["result"] == nil {
		t.Errorf("with JSON answers only: %v; want the result", m)
	}
	// The same for a 2026-07-28 request that asks for progress and log
	// messages (go-sdk's handler fails it: docs/deviations.md).
	resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, "tools/call", "s__steps", "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__steps","_meta":{`+
		`"progressToken":"p","io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if m := jsonAnswer(t, resp); m["result"] == nil {
		t.Errorf("a 2026-07-28 request with JSON answers only: %v; want the result", m)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("with JSON answers only, %d calls through go-sdk; want none", n)
	}
}

// TestHTTPFastPathElicit: sampling, roots and elicitation requests the
// source sends during a fast call reach the host on the call's own stream (the client here opens no
// GET stream), and the host's answer gets back to the source.
func TestHTTPFastPathElicit(t *testing.T) {
	f := &rawFake{tools: []string{"ask"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		ss := junction.HostSession(ctx)
		msg, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, err
		}
		if tc, _ := msg.Content.(*mcp.TextContent); tc == nil || tc.Text != "sampled" {
			return nil, fmt.Errorf("sampling result %#v", msg.Content)
		}
		roots, err := ss.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		if len(roots.Roots) != 1 || roots.Roots[0].URI != "file:///work" {
			return nil, fmt.Errorf("roots %v", roots.Roots)
		}
		res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
		}})
		if err != nil {
			return nil, err
		}
		return json.Marshal(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + ":" + fmt.Sprint(res.Content["name"])}}})
	}}
	srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateful})
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///work"})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 3 {
		if got := callText(t, cs, "s__ask", ""); got != "accept:Ada" {
			t.Errorf("call %d = %q, want accept:Ada", i, got)
		}
	}
	if f.slow.Load() != 0 {
		t.Errorf("%d calls took the ordinary path", f.slow.Load())
	}
}

func TestHTTPFastAcceptable(t *testing.T) {
	for _, tc := range []struct {
		ct, accept string
		jsonOnly   bool
		want       bool
	}{
		{"application/json", "application/json, text/event-stream", false, true},
		{"Application/JSON; charset=utf-8", "text/event-stream;q=0.9, application/json", false, true},
		{"application/json", "*/*", false, true},
		{"application/json", "application/json", false, false}, // go-sdk refuses it; let it say so
		{"application/json", "application/json", true, true},
		{"text/plain", "application/json, text/event-stream", false, false},
		{"application/json", "", false, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Content-Type", tc.ct)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		f := &httpRaw{jsonOnly: tc.jsonOnly}
		if got := f.acceptable(r); got != tc.want {
			t.Errorf("Content-Type %q, Accept %q, jsonOnly %v: acceptable = %v, want %v", tc.ct, tc.accept, tc.jsonOnly, got, tc.want)
		}
	}
}

// TestHTTPFastPathStateless: without sessions (HTTPStateless), a plain
// call from a client before 2026-07-28 is answered raw, as JSON, and so
// is one with a progress token that gets no progress (see
// TestHTTPStatelessProgress for one that does).
func TestHTTPFastPathStateless(t *testing.T) {
	var raw atomic.Int32
	f := &rawFake{tools: []string{"echo"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		raw.Add(1)
		return echoRaw(ctx, name, params)
	}}
	srv := startHTTPFast(t, f, HTTPOptions{Mode: HTTPStateless})
	resp := rawPost(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"no session"}}}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
		string(body) != `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"no session"}]}}`+"\n" {
		t.Errorf("stateless fast call: %s %q\n%s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	resp = rawPost(t, srv.URL, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","_meta":{"progressToken":"p"}}}`)
	body, _ = io.ReadAll(resp.Body)
	if string(body) != `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""}]}}`+"\n" {
		t.Errorf("a call with a progress token: %s\n%s; want the raw path's answer, as JSON", resp.Status, body)
	}
	if raw.Load() != 2 || f.slow.Load() != 0 {
		t.Errorf("raw calls %d, ordinary calls %d; want 2 and 0", raw.Load(), f.slow.Load())
	}
}

// A client before 2026-07-28 gets list results without that revision's
// members (ttlMs, cacheScope), which go-sdk writes to every client; a
// 2026-07-28 client keeps them. Over HTTP, as JSON and as SSE, and over
// stdio.
func TestOlderClientsGetOlderResults(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	for _, json := range []bool{false, true} {
		srv := startHTTPFast(t, f, HTTPOptions{JSONResponse: json})
		sid := rawSession(t, srv.URL)
		resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		body, _ := io.ReadAll(resp.Body)
		if !bytes.Contains(body, []byte(`"s__echo"`)) || bytes.Contains(body, []byte("ttlMs")) || bytes.Contains(body, []byte("cacheScope")) {
			t.Errorf("tools/list for a 2025-11-25 session (JSON answers %v): %s", json, body)
		}
	}
	srv := startHTTPFast(t, f, HTTPOptions{})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(body, []byte(`"ttlMs"`)) || !bytes.Contains(body, []byte(`"cacheScope"`)) {
		t.Errorf("tools/list for a 2026-07-28 client lost its cache fields: %s", body)
	}
}

// TestOlderMembers: a result for a client before 2026-07-28 loses the
// members that revision added, at its top level only, whatever the
// method; one without them is given back as it is.
func TestOlderMembers(t *testing.T) {
	for in, want := range map[string]string{
		`{"ttlMs":0,"cacheScope":"public","tools":[{"name":"ttlMs"}]}`: `{"tools":[{"name":"ttlMs"}]}`,
		`{"tools":[],"ttlMs":5}`:                                            `{"tools":[]}`,
		`{"content":[{"type":"text","text":"\"ttlMs\""}]}`:                  `{"content":[{"type":"text","text":"\"ttlMs\""}]}`,
		`{"content":[{"type":"text","text":"x","ttlMs":1}],"isError":true}`: `{"content":[{"type":"text","text":"x","ttlMs":1}],"isError":true}`,
		// prompts/get, resources/read, completion/complete: no resultType,
		// no server's serverInfo (an _meta left empty goes).
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"messages":[],"resultType":"complete"}`:   `{"messages":[]}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"k":1},"contents":[],"resultType":"complete","ttlMs":0}`: `{"_meta":{"k":1},"contents":[]}`,
		`{"resultType":"complete","completion":{"values":[]}}`:                                                                 `{"completion":{"values":[]}}`,
	} {
		if got := string(olderMembers([]byte(in))); got != want {
			t.Errorf("olderMembers(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestHTTPBodies: a body over MaxRequestBytes gets 413 and a JSON-RPC
// error, whether it says its length or comes chunked; one shorter than
// its Content-Length gets 400; and the session goes on.
func TestHTTPBodies(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	srv := startHTTPFast(t, f, HTTPOptions{MaxRequestBytes: 256})
	sid := rawSession(t, srv.URL)
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"` + strings.Repeat("x", 300) + `"}}}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(call)
		if chunked {
			body = io.MultiReader(body) // no length: sent chunked
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"code":-32600`) || !strings.Contains(string(b), "request body exceeds 256 bytes") {
			t.Errorf("a body over the limit (chunked %v): %s %s", chunked, resp.Status, b)
		}
	}

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"", sid)
	conn.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a body shorter than its Content-Length: %s, want 400", resp.Status)
	}

	resp = rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}`)
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"text":"hi"`) {
		t.Errorf("a call after them: %s %s", resp.Status, b)
	}
}

// TestHTTPRefusesOnSession: over HTTP, on a session, a request whose
// params go-sdk's server would not take gets go-sdk's error from the
// plane as JSON (200), and a request of a known method sent without an
// id, or with a null one, is accepted (202) and dropped; go-sdk's handler
// is never asked. A session the front does not know stays go-sdk's.
func TestHTTPRefusesOnSession(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	v := viewOf(t, f)
	srv := httptest.NewServer(New(v, nil).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(srv.Close)
	sid := rawSession(t, srv.URL)
	for _, tc := range []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: missing required \"params\""}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":null}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"handling 'prompts/get': invalid request: missing required \"params\""}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":1}}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"handling 'tools/list': invalid params: unmarshaling \"{\\\"cursor\\\":1}\" into a *mcp.ListToolsParams: json: cannot unmarshal \"1}\" into Go struct field mcp.ListToolsParams.cursor of type string"}}`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"s__echo"}}`, ``},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, ``},
	} {
		resp := rawPost(t, srv.URL, sid, tc.body)
		body, _ := io.ReadAll(resp.Body)
		if tc.want == "" {
			if resp.StatusCode != http.StatusAccepted || len(body) != 0 {
				t.Errorf("%s: %s %q; want 202 and no body", tc.body, resp.Status, body)
			}
			continue
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || strings.TrimSpace(string(body)) != tc.want {
			t.Errorf("%s: %s %q\n%s\nwant %s", tc.body, resp.Status, resp.Header.Get("Content-Type"), body, tc.want)
		}
	}
	resp := rawPost(t, srv.URL, "no-such-session", `{"jsonrpc":"2.0","id":4,"method":"tools/call"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a session the front does not know: %s; want go-sdk's 404", resp.Status)
	}
}

// TestHTTPSessionMetaVersion: on a session, a request whose _meta names a
// protocol version is served by the plane at the session's revision
// (go-sdk's stateful handler refused it with -32022, naming the
// session's own version as the one it did not support:
// docs/deviations.md).
func TestHTTPSessionMetaVersion(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	srv := httptest.NewServer(New(viewOf(t, f), nil).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(srv.Close)
	sid := rawSession(t, srv.URL)
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
	} {
		resp := rawPost(t, srv.URL, sid, body)
		b, _ := io.ReadAll(resp.Body)
		got := fmt.Sprintf("%d %s", resp.StatusCode, bytes.TrimSpace(b))
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"result"`) {
			t.Errorf("request %d: %s; want a result", i+1, got)
		}
	}
}
