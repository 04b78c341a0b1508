package dataplane

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// TestSSEHandler: a legacy HTTP+SSE host (go-sdk's client) is served as
// a stdio host is: its tools/call goes the raw path, with the source's
// log messages and its questions to the host on the stream; a call the
// host cancels ends; and bad POSTs are refused without reaching the
// session, which goes on.
func TestSSEHandler(t *testing.T) {
	waiting, cancelled := make(chan struct{}), make(chan struct{})
	f := &rawFake{tools: []string{"echo", "chatty", "ask", "wait"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		ss := junction.HostSession(ctx)
		switch name {
		case "chatty":
			junction.Log(ctx, ss, &mcp.LoggingMessageParams{Level: "warning", Data: "careful"})
			return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
		case "ask":
			res, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
			if err != nil {
				return nil, err
			}
			return json.RawMessage(`{"content":[{"type":"text","text":"` + res.Action + `"}]}`), nil
		case "wait":
			close(waiting)
			<-ctx.Done()
			close(cancelled)
			return nil, ctx.Err()
		}
		return echoRaw(ctx, name, params)
	}}
	srv := httptest.NewServer(New(viewOf(t, f), nil).SSEHandler(1 << 10))
	t.Cleanup(srv.Close)

	logs := make(chan string, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params.Data.(string) },
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	}).Connect(t.Context(), &mcp.SSEClientTransport{Endpoint: srv.URL + "/sse"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if got := callText(t, cs, "s__echo", "hi"); got != "hi" {
		t.Errorf("echo: %q", got)
	}
	if got := callText(t, cs, "s__chatty", ""); got != "done" || <-logs != "careful" {
		t.Errorf("chatty: %q", got)
	}
	if got := callText(t, cs, "s__ask", ""); got != "decline" {
		t.Errorf("ask: %q, want the host's answer", got)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__wait"})
		done <- err
	}()
	<-waiting
	cancel() // go-sdk's client sends notifications/cancelled
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the host's cancellation did not reach the call")
	}
	<-done
	if f.slow.Load() != 0 {
		t.Errorf("%d calls went through go-sdk's server; want all on the raw path", f.slow.Load())
	}

	// Bad POSTs, to a session that exists: open one by hand.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/sse", nil)
	endpoint, events, resp := openLegacy(t, req)
	post := func(url, ctype, body string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, url, ctype, body string
		want                   int
	}{
		{"not JSON", srv.URL + endpoint, "application/json", "{nope", http.StatusBadRequest},
		{"a batch", srv.URL + endpoint, "application/json", `[{"jsonrpc":"2.0","method":"ping","id":1}]`, http.StatusBadRequest},
		{"too big", srv.URL + endpoint, "application/json", `{"x":"` + strings.Repeat("a", 2<<10) + `"}`, http.StatusRequestEntityTooLarge},
		{"not application/json", srv.URL + endpoint, "text/plain", `{}`, http.StatusUnsupportedMediaType},
		{"no session", srv.URL + "/sse", "application/json", `{}`, http.StatusBadRequest},
		{"unknown session", srv.URL + "/sse?sessionid=nope", "application/json", `{}`, http.StatusNotFound},
	} {
		if got := post(c.url, c.ctype, c.body); got != c.want {
			t.Errorf("%s: HTTP %d, want %d", c.name, got, c.want)
		}
	}
	// A message spread over lines is one message; its answer comes next.
	if got := post(srv.URL+endpoint, "application/json", "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 5,\n  \"method\": \"ping\"\n}"); got != http.StatusAccepted {
		t.Fatalf("a pretty-printed ping: HTTP %d, want 202", got)
	}
	for {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			if data != `{"jsonrpc":"2.0","id":5,"result":{}}` {
				t.Errorf("the stream's next message: %s, want the answer to the ping", data)
			}
			break
		}
	}
	resp.Body.Close()
	// Its stream gone, the session is too.
	waitFor(t, "the session to end with its stream", func() bool {
		return post(srv.URL+endpoint, "application/json", `{"jsonrpc":"2.0","method":"ping","id":6}`) == http.StatusNotFound
	})
}

// openLegacy opens a legacy SSE stream with req, and returns the URL
// path its endpoint event names, the stream after that event, and the
// response, whose body the test's cleanup closes.
func openLegacy(t *testing.T, req *http.Request) (endpoint string, events *bufio.Reader, resp *http.Response) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events = bufio.NewReader(resp.Body)
	for endpoint == "" {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the endpoint event: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = data
		}
	}
	return endpoint, events, resp
}

// TestSSEModernRequests: on a legacy HTTP+SSE session (initialized at
// 2025-11-25) requests of 2026-07-28 are served by the plane as go-sdk's
// server served them (its answers kept, byte for byte, in
// testdata/TestSSEModernRequests.txtar: goldenWant): a list,
// server/discover (listing only the revisions the transport carries), a
// prompt, a call, a listen's acknowledgement; go-sdk's session is handed
// nothing but the initialize the plane hands it.
func TestSSEModernRequests(t *testing.T) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`
	lines := []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"x",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + meta + `}}`,
		`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"},` + meta + `}}`,
	}
	run := func() (answers []string) {
		srv := httptest.NewServer(New(viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil).SSEHandler(1 << 20))
		t.Cleanup(srv.Close)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/sse", nil)
		endpoint, events, _ := openLegacy(t, req)
		for _, line := range lines {
			resp, err := http.Post(srv.URL+endpoint, "application/json", strings.NewReader(line))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			var want struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(line), &want)
			if want.ID == nil {
				continue
			}
			for {
				l, err := events.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				data, ok := strings.CutPrefix(strings.TrimSpace(l), "data: ")
				var m struct {
					ID     json.RawMessage `json:"id"`
					Params struct {
						Meta map[string]json.RawMessage `json:"_meta"`
					} `json:"params"`
				}
				if !ok || json.Unmarshal([]byte(data), &m) != nil {
					continue
				}
				if string(m.ID) == string(want.ID) || string(m.Params.Meta[mcp.MetaKeySubscriptionID]) == string(want.ID) {
					answers = append(answers, data)
					break
				}
			}
		}
		return answers
	}
	check := watchUntaken(t)
	got := run()
	check()
	want := strings.Split(goldenWant(t, "answers", strings.Join(got, "\n")), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the plane's answers differ from those expected (-want +plane):\n%s", diff)
	}
	if !strings.Contains(got[3], `"supportedVersions":["2025-11-25"`) || strings.Contains(got[3], "2026-07-28") {
		t.Errorf("server/discover on a legacy session: %s; want only the revisions the transport carries", got[3])
	}
}
