package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// rawFake is a RawCaller source; CallTool (the ordinary path) answers
// "slow" so tests can tell which path a call took.
type rawFake struct {
	raw   func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error)
	slow  atomic.Int32
	tools []string
	uris  []string // resources
}

func (f *rawFake) Catalog(context.Context) (*junction.Catalog, error) {
	c := &junction.Catalog{}
	for _, n := range f.tools {
		c.Tools = append(c.Tools, &mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	for _, u := range f.uris {
		c.Resources = append(c.Resources, &mcp.Resource{URI: u, Name: u})
	}
	return c, nil
}

func (f *rawFake) CallTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	f.slow.Add(1)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "slow"}}}, nil
}

func (f *rawFake) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	return f.raw(ctx, name, params)
}

func (f *rawFake) ReadResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, errors.New("none")
}

func (f *rawFake) GetPrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, errors.New("none")
}

func (f *rawFake) Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{}, nil
}

// fastHost is a host talking raw lines to Plane.ServeStdio.
type fastHost struct {
	w    *io.PipeWriter
	r    *bufio.Reader
	done chan error
	p    *Plane // the plane that serves it
}

func startFast(t *testing.T, src junction.Source, sel junction.Selection) *fastHost {
	t.Helper()
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "s", src, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", sel)
	if err != nil {
		t.Fatal(err)
	}
	return startStdio(t, v, nil)
}

// startStdio serves v to a fastHost over stdio pipes with opts, until the
// test ends.
func startStdio(t *testing.T, v *junction.View, opts *Options) *fastHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &fastHost{w: inW, r: bufio.NewReader(outR), done: make(chan error, 1), p: New(v, opts)}
	go func() {
		h.done <- h.p.ServeStdio(context.Background(), inR, outW, nil)
		outW.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR) // let the server finish writing
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("ServeStdio = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not return after EOF")
		}
	})
	return h
}

func (h *fastHost) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// recv reads the next message that has an id.
func (h *fastHost) recv(t *testing.T) map[string]any {
	t.Helper()
	for {
		m := h.next(t)
		if _, ok := m["id"]; ok {
			return m
		}
	}
}

// recvWithin is recv, failing the test if no answer comes within d.
func (h *fastHost) recvWithin(t *testing.T, d time.Duration) map[string]any {
	t.Helper()
	got := make(chan map[string]any, 1)
	failed := make(chan string, 1)
	go func() {
		for {
			line, err := h.r.ReadBytes('\n')
			if err != nil {
				failed <- err.Error()
				return
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				failed <- fmt.Sprintf("answer %q is not JSON: %v", line, err)
				return
			}
			if _, ok := m["id"]; ok {
				got <- m
				return
			}
		}
	}()
	select {
	case m := <-got:
		return m
	case why := <-failed:
		t.Fatalf("reading: %s", why)
	case <-time.After(d):
		t.Fatalf("no answer within %v", d)
	}
	return nil
}

// next reads the next message, whatever it is.
func (h *fastHost) next(t *testing.T) map[string]any {
	t.Helper()
	line, err := h.r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("answer %q is not JSON: %v", line, err)
	}
	return m
}

func (h *fastHost) initialize(t *testing.T) {
	t.Helper()
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := h.recv(t); m["result"] == nil {
		t.Fatalf("initialize = %v", m)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func text(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) == 0 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}

func TestServeStdioRaw(t *testing.T) {
	var gotParams atomic.Value
	f := &rawFake{tools: []string{"echo", "hidden"}, raw: func(_ context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		gotParams.Store(string(params))
		switch name {
		case "echo":
			return json.RawMessage(`{"content":[{"type":"text","text":"fast"}],"extra":{"kept":true}}`), nil
		}
		return nil, errors.New("unexpected")
	}}
	h := startFast(t, f, junction.Selection{Deny: []string{"s__hidden"}})
	h.initialize(t)

	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"a":[1,2]}}}`)
	m := h.recv(t)
	if diff := cmp.Diff(map[string]any{"jsonrpc": "2.0", "id": 1.0, "result": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "fast"}},
		"extra":   map[string]any{"kept": true},
	}}, m); diff != "" {
		t.Errorf("fast answer (-want +got):\n%s", diff)
	}
	if got, want := gotParams.Load(), `{"name":"echo","arguments":{"a":[1,2]}}`; got != want {
		t.Errorf("params forwarded = %s, want %s", got, want)
	}

	h.send(t, `{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"s__echo","arguments":null}}`)
	if m := h.recv(t); text(m) != "fast" {
		t.Errorf("call with null arguments = %v", m)
	}
	// As go-sdk's client sends them on the typed path.
	if got, want := gotParams.Load(), `{"name":"echo","arguments":{}}`; got != want {
		t.Errorf("params forwarded for null arguments = %s, want %s", got, want)
	}

	// _meta goes raw too (the source maps progress tokens), and reaches
	// the source as sent.
	h.send(t, `{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"s__echo","arguments":{},"_meta":{"progressToken":"p"}}}`)
	if m := h.recv(t); text(m) != "fast" || m["id"] != "m" {
		t.Errorf("call with _meta = %v, want the raw path's answer", m)
	}
	if got, want := gotParams.Load(), `{"name":"echo","arguments":{},"_meta":{"progressToken":"p"}}`; got != want {
		t.Errorf("params forwarded with _meta = %s, want %s", got, want)
	}
	// A task request of a revision before the tasks extension is a plain
	// call, as go-sdk's server makes it: the task member is not passed on.
	h.send(t, `{"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"s__echo","arguments":{},"task":{"ttl":1}}}`)
	if m := h.recv(t); text(m) != "fast" || m["id"] != "k" {
		t.Errorf("call with a task = %v, want the raw path's answer", m)
	}
	if got, want := gotParams.Load(), `{"name":"echo","arguments":{}}`; got != want {
		t.Errorf("params forwarded with a task = %s, want %s", got, want)
	}
	// A member the raw path does not know, a member given twice and a key
	// spelt with an escape are read as go-sdk's server reads them: the
	// unknown member left out, the last of the two, the key unescaped.
	h.send(t, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"s__echo","arguments":{"a":1},"extra":{"ttl":1},"arguments":{"b":2}},"odd":true}`)
	if m := h.recv(t); text(m) != "fast" || m["id"] != "x" {
		t.Errorf("call with an unknown member = %v, want the raw path's answer", m)
	}
	if got, want := gotParams.Load(), `{"name":"echo","arguments":{"b":2}}`; got != want {
		t.Errorf("params forwarded with an unknown member = %s, want %s", got, want)
	}
	h.send(t, `{"jsonrpc":"2.0","id":"y","method":"tools\/call","params":{"name":"s__echo"}}`)
	if m := h.recv(t); text(m) != "fast" || m["id"] != "y" {
		t.Errorf("call with escapes = %v, want the raw path's answer", m)
	}
	// A denied tool is unknown on both paths.
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__hidden"}}`)
	if m := h.recv(t); m["error"] == nil || !strings.Contains(m["error"].(map[string]any)["message"].(string), "s__hidden") {
		t.Errorf("denied tool = %v, want an unknown-tool error", m)
	}
	// The list has the tools the view serves.
	h.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := h.recv(t); !strings.Contains(mustJSON(t, m), `"s__echo"`) || strings.Contains(mustJSON(t, m), `"s__hidden"`) {
		t.Errorf("tools/list = %v", m)
	}
	// Bad frames get the transport's parse error and the connection goes on.
	h.send(t, `{not json`)
	if m := h.recv(t); m["id"] != nil || m["error"] == nil {
		t.Errorf("bad frame = %v, want a parse error with a null id", m)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("ordinary-path calls = %d, want 0", n)
	}
}

func TestServeStdioRawBeforeInitialized(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[]}`), nil
	}}
	h := startFast(t, f, junction.Selection{})
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo"}}`)
	if m := h.recv(t); errCode(m) != -32600 {
		t.Errorf("call before initialize = %v, want -32600", m)
	}
}

// TestStdioRefusesBeforeInitialize: over stdio the plane refuses an older
// host's requests sent before initialize, whatever their method, with
// -32600 saying to initialize first (go-sdk's server wrote code 0), and
// go-sdk never sees them; ping, a 2026-07-28 request that stands alone,
// and a request sent after initialize but before its answer (a host that
// does not wait) are served.
func TestStdioRefusesBeforeInitialize(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"fast"}]}`), nil
	}}
	v := viewOf(t, f)
	h := startStdio(t, v, nil)
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"s__echo","arguments":{},"odd":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"s__echo","arguments":{}}}`,
	} {
		h.send(t, line)
		m := h.recv(t)
		msg, _ := m["error"].(map[string]any)["message"].(string)
		if errCode(m) != -32600 || !strings.Contains(msg, "initialize first") {
			t.Errorf("request %d before initialize: %v; want -32600 saying to initialize first", i, m)
		}
	}
	h.send(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if m := h.recv(t); m["result"] == nil {
		t.Errorf("ping before initialize: %v", m)
	}
	h.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s__echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := h.recv(t); text(m) != "fast" {
		t.Errorf("a 2026-07-28 call that stands alone: %v; want its answer", m)
	}
	// initialize and a list at once, without waiting for the answer.
	h.send(t, `{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	for range 2 {
		if m := h.recv(t); m["result"] == nil {
			t.Errorf("initialize and a list sent at once: %v; want both answered", m)
		}
	}
}

func TestServeStdioRawErrors(t *testing.T) {
	f := &rawFake{tools: []string{"proto", "fail", "panic"}, raw: func(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
		switch name {
		case "proto":
			return nil, &jsonrpc.Error{Code: -32042, Message: "nope", Data: json.RawMessage(`{"x":1}`)}
		case "fail":
			return nil, junction.ErrSourceDown
		}
		panic("boom")
	}}
	h := startFast(t, f, junction.Selection{})
	h.initialize(t)

	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__proto"}}`)
	if diff := cmp.Diff(map[string]any{"jsonrpc": "2.0", "id": 1.0, "error": map[string]any{"code": -32042.0, "message": "nope", "data": map[string]any{"x": 1.0}}}, h.recv(t)); diff != "" {
		t.Errorf("protocol error (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ tool, code string }{{"fail", junction.CodeSourceUnavailable}, {"panic", junction.CodeInternal}} {
		h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__`+tc.tool+`"}}`)
		m := h.recv(t)
		res, _ := m["result"].(map[string]any)
		if res["isError"] != true || !strings.Contains(text(m), `"code":"`+tc.code+`"`) {
			t.Errorf("%s = %v, want a %s tool error", tc.tool, m, tc.code)
		}
	}
}

func TestServeStdioRawCancel(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	f := &rawFake{tools: []string{"slow", "quick"}, raw: func(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
		if name == "quick" {
			return json.RawMessage(`{"content":[]}`), nil
		}
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	}}
	h := startFast(t, f, junction.Selection{})
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"s__slow"}}`)
	<-started
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the source's context was not cancelled")
	}
	// No answer for 7: the next message read is the answer to 8.
	h.send(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"s__quick"}}`)
	if m := h.recv(t); m["id"] != 8.0 {
		t.Errorf("after a cancelled call got %v, want the answer to 8 only", m)
	}
}

func TestServeStdioRawDrainsAtEOF(t *testing.T) {
	release := make(chan struct{})
	f := &rawFake{tools: []string{"wait"}, raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`{"content":[{"type":"text","text":"late"}]}`), nil
	}}
	h := startFast(t, f, junction.Selection{})
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"s__wait"}}`)
	h.w.Close() // the host is done writing, but still reads
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	if m := h.recv(t); text(m) != "late" {
		t.Errorf("answer after EOF = %v, want the late result", m)
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestForwardParams: the params a call is forwarded with record where
// their _meta is, and what it says, for the server's side.
func TestForwardParams(t *testing.T) {
	for _, c := range []struct {
		line    string
		other   bool // the _meta has members wire.Meta does not name
		inPlace bool // laid out as the params made for the source are
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1},"_meta":{"progressToken":7,"k":"v"},"requestState":"s"}}`, true, true},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"a"}}`, false, false},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","arguments":{}}}`, false, true},
		// Params longer than the call's own buffer for them.
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a","arguments":{"text":"` + strings.Repeat("long ", 40) + `"}}}`, false, true},
		// Not plain: text to check on the server's side (upstream's
		// SendRequest), in the arguments or in the other members sent.
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a","arguments":{"x":"caf\u00e9"}}}`, false, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"arguments\":{\"x\":\"café\"}}}", false, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"requestState\":\"é\"}}", false, false},
		// A _meta is not sent as it is: it has no say.
		{"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"_meta\":{\"k\":\"é\"}}}", true, false},
		// A host of 2026-07-28: its _meta read once, then recognised.
		{`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"a","arguments":{"x":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"}}}}`, false, true},
		// Laid out otherwise: the params are made as ever.
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"a", "arguments":{}}}`, false, false},
		{`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"arguments":{},"name":"a"}}`, false, false},
		{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"a","arguments":null}}`, false, false},
		{`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"a","task":{"ttl":1},"arguments":{}}}`, false, false},
		{`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"a","arguments":{} }}`, false, false},
		{`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"a","arguments":{},"task":{"ttl":1}}}`, false, false},
		{`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"a","arguments":{},"requestState":"s","_meta":{}}}`, false, false},
		// White space outside the params is no matter.
		{`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"a","arguments":{}} }`, false, true},
	} {
		// The source's name for the tool longer than the host's, and
		// shorter: the params are then made over the host's, when those
		// are laid out as the params made are.
		for _, local := range []string{"local", ""} {
			line := c.line
			msg := []byte(line)
			tc, ok := parseToolCall(msg)
			if !ok {
				t.Fatalf("parseToolCall(%s) refused it", line)
			}
			hc := &hostCall{}
			readCallMeta(&tc, &hc.req)
			want := rawParams(local, tc)
			_, _, hostParams, _ := requestEnvelope(msg)
			orig := string(hostParams)
			params := forwardParams(local, tc, hc)
			if string(params) != string(want) {
				t.Errorf("%s: forwardParams %s, want rawParams' %s", line, params, want)
			}
			inMsg := &params[len(params)-1] == &hostParams[len(hostParams)-1]
			if wantIn := local == "" && c.inPlace; inMsg != wantIn {
				t.Errorf("%s: params made over the host's: %v, want %v", line, inMsg, wantIn)
			}
			if inMsg {
				// Only the head of the host's params, up to the name's end,
				// is written: the rest of the message is as it was.
				at := strings.Index(line, orig)
				if string(msg[:at]) != line[:at] || string(msg[at+len(orig):]) != line[at+len(orig):] || string(params[len(`{"name":""`):]) != orig[len(`{"name":"a"`):] {
					t.Errorf("%s: the message became %s", line, msg)
				}
			} else if inRecord := &params[0] == &hc.params[0]; inRecord != (len(params) < 100) {
				// Short params are made in the call's record, long ones not.
				t.Errorf("%s: %d bytes of params made in the call's record: %v", line, len(params), inRecord)
			}
			hr := wire.RequestOf(hc, params)
			if hr == nil {
				t.Fatalf("%s: no record for the params forwarded", line)
			}
			if got := hr.RawMeta(); string(got) != string(tc.meta) {
				t.Errorf("%s: the record's _meta %s, want %s", line, got, tc.meta)
			}
			// The record's _meta is read from the params it keeps, which
			// may be the host's message, not from what that message was.
			if p := hr.Meta.ProgressToken; p != nil && (string(p) != "7" || &p[0] != &params[hr.MetaAt[0]+bytes.Index(params[hr.MetaAt[0]:], []byte("7"))]) {
				t.Errorf("%s: the record's progress token %s is not the one in the params forwarded", line, p)
			}
			if hr.MetaAt != [2]int{} && string(params[hr.MetaAt[0]:hr.MetaAt[0]+9]) != `,"_meta":` {
				t.Errorf("%s: _meta at %v of %s", line, hr.MetaAt, params)
			}
			if want := tc.requestState != nil; hr.Retry != want || hr.OtherMeta != c.other {
				t.Errorf("%s: retry %v, other members %v", line, hr.Retry, hr.OtherMeta)
			}
			// Clean when what is sent of the params is ASCII without escapes
			// (rawjson.ValidPlainValue; clean text otherwise is checked on
			// the server's side).
			sent := append(append([]byte(nil), params[:hr.MetaAt[0]]...), params[hr.MetaAt[1]:]...)
			if want := bytes.IndexByte(sent, '\\') < 0 && bytes.IndexFunc(sent, func(r rune) bool { return r >= utf8.RuneSelf }) < 0; hr.Clean != want {
				t.Errorf("%s: the record says clean %v, want %v", line, hr.Clean, want)
			}
		}
	}
}

func TestParseToolCall(t *testing.T) {
	for _, tc := range []struct {
		msg        string
		id, name   string
		args       string
		wantAccept bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1}}}`, "1", "a", `{"x":1}`, true},
		{` { "method" : "tools/call", "params":{"arguments":[],"name":"a\u0062"},"id":"q\"","jsonrpc":"2.0"} `, `"q\""`, "ab", `[]`, true},
		{`{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"a"}}`, "-3", "a", "", true},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":1}}}`, "1", "a", "", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":7}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":1000}}}`, "1", "a", "", true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{"ttl":}}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","task":{},"task":{}}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Task":{}}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","requestState":"s","requestState":"t"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":}}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} {}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":1}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"a"}}`, "0", "a", "", true},
		{`{"jsonrpc":"2.0","id":01,"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call","params":{"name":"a"}}`, "18446744073709551617", "a", "", true},
		{`{"jsonrpc":"2.0","id":1.5e3,"method":"tools/call","params":{"name":"a"}}`, "1.5e3", "a", "", true},
		{`{"jsonrpc":"2.0","id":1.,"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":-,"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}`, "", "", "", false},
	} {
		got, ok := parseToolCall([]byte(tc.msg))
		if ok != tc.wantAccept || string(got.id) != tc.id || got.name != tc.name || string(got.args) != tc.args {
			t.Errorf("parseToolCall(%s) = %s, %q, %s, %v; want %s, %q, %s, %v", tc.msg, got.id, got.name, got.args, ok, tc.id, tc.name, tc.args, tc.wantAccept)
		}
	}
}

// checkMetaMemo reads tc's _meta (parsed from msg) twice, the second
// time from what the first stored if it did (metaMemo), and fails t
// unless both say what a fresh read says.
func checkMetaMemo(t *testing.T, msg []byte, tc toolCall) {
	t.Helper()
	want := readMeta(tc.meta)
	wantMeta := wire.ReadMeta(tc.meta, nil)
	for range 2 {
		tc, ok := parseToolCall(msg)
		if !ok {
			t.Fatalf("parseToolCall(%q) refused it the second time", msg)
		}
		var hr wire.HostRequest
		if got := readCallMeta(&tc, &hr); got != want || !reflect.DeepEqual(hr.Meta, wantMeta) {
			t.Fatalf("readCallMeta(%q) (memo %v) = %+v, %+v; want %+v, %+v", tc.meta, tc.memo != nil, got, hr.Meta, want, wantMeta)
		}
		if got, want := tc.namesTasks(), bytes.Contains(tc.meta, []byte(junction.TasksExtension)); got != want {
			t.Fatalf("%q (memo %v) names the tasks extension: %v, want %v", tc.meta, tc.memo != nil, got, want)
		}
		// The values are bytes of the request's _meta, or of the memo's
		// copy: not of another request's.
		in := tc.meta
		if tc.memo != nil {
			in = tc.memo.raw
		}
		for _, v := range [][]byte{hr.Meta.Caps, hr.Meta.Info, hr.Meta.LogLevel} {
			if v != nil && !inside(v, in) {
				t.Fatalf("readCallMeta(%q): %q is not part of the request's _meta or the memo's", tc.meta, v)
			}
		}
	}
}

// inside reports whether v is a part of b (the same bytes, not a copy).
func inside(v, b []byte) bool {
	return len(v) > 0 && len(b) > 0 && cap(v) <= cap(b) && &b[cap(b)-cap(v)] == &v[0]
}

// TestMetaMemo: the _meta a host of 2026-07-28 sends with every request
// is read once; the next request with the same bytes is taken from the
// memo, and reads the same. A _meta with a
// progress token, or one go-sdk would refuse, is not kept.
func TestMetaMemo(t *testing.T) {
	call := func(id int, meta string) []byte {
		return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"a","_meta":%s}}`, id, meta))
	}
	const kept = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, c := range []struct {
		meta string
		memo bool // the second request is read from the memo
	}{
		{kept, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`, true},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":1}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"x":1}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, false},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"x":"` + strings.Repeat("y", maxMetaMemo) + `"}}}`, false},
	} {
		lastMeta.Store(nil)
		first := call(1, c.meta)
		tc, ok := parseToolCall(first)
		if !ok {
			t.Fatalf("parseToolCall(%s) refused it", first)
		}
		checkMetaMemo(t, first, tc)
		second := call(2, c.meta)
		if tc, _ := parseToolCall(second); (tc.memo != nil) != c.memo {
			t.Errorf("%s: second request from the memo %v, want %v", c.meta, tc.memo != nil, c.memo)
		}
		checkMetaMemo(t, second, tc)
	}
	// A _meta that begins as the memo's and goes on is not taken for it.
	lastMeta.Store(nil)
	checkMetaMemo(t, call(1, kept), toolCall{meta: []byte(kept)})
	longer := []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a","_meta":` + kept[:len(kept)-1] + `,"progressToken":2}}}`)
	if tc, ok := parseToolCall(longer); !ok || tc.memo != nil || wire.ReadMeta(tc.meta, nil).ProgressToken == nil {
		t.Errorf("parseToolCall(%s) = memo %v, _meta %s", longer, tc.memo != nil, tc.meta)
	}
}

// FuzzParseToolCall: whatever parseToolCall accepts is valid JSON that
// encoding/json reads the same way, so the fast path never forwards what
// the ordinary path would have refused as malformed.
func FuzzParseToolCall(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,"}"]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"\u00e9"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":007,"method":"tools/call","params":{"name":"a"}}`))
	// After the object, white space of Unicode's that JSON's is not.
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}\f"))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\"}}\u0085"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		tc, ok := parseToolCall(msg)
		if !ok {
			return
		}
		// Read twice, the second time maybe from the memo the first
		// stored: the same as a fresh read.
		checkMetaMemo(t, msg, tc)
		id, name, args := tc.id, tc.name, tc.args
		if !json.Valid(msg) {
			t.Fatalf("accepted invalid JSON %q", msg)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", msg, err)
		}
		if m.Method != "tools/call" || m.Params.Name != name || !bytes.Equal(bytes.TrimSpace(m.ID), id) || !bytes.Equal(bytes.TrimSpace(m.Params.Arguments), bytes.TrimSpace(args)) {
			t.Fatalf("%q: got id %s name %q args %s; encoding/json: %s %q %s", msg, id, name, args, m.ID, m.Params.Name, m.Params.Arguments)
		}
		// The params forwarded, made over the host's message where they
		// can be, are those made anew, and its id stays as it was.
		for _, local := range []string{"", "b", "local name"} {
			own := bytes.Clone(msg)
			tc, _ := parseToolCall(own)
			want := rawParams(local, tc)
			hc := &hostCall{}
			readCallMeta(&tc, &hc.req)
			if got := forwardParams(local, tc, hc); !bytes.Equal(got, want) || !bytes.Equal(tc.id, id) {
				t.Fatalf("%q: forwardParams(%q) %s, id %s; want %s, %s", msg, local, got, tc.id, want, id)
			}
			if hr := &hc.req; hr.MetaAt != [2]int{} && !bytes.Equal(hr.RawMeta(), tc.meta) {
				t.Fatalf("%q: the record's _meta %s, want %s", msg, hr.RawMeta(), tc.meta)
			}
		}
	})
}

// TestServeStdioRawInFlight: a fast call counts in junction.Hub.InFlight while it
// runs, so a daemon's WaitIdle on shutdown waits for it as for ordinary
// calls.
func TestServeStdioRawInFlight(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	f := &rawFake{tools: []string{"wait"}, raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		close(started)
		<-release
		return json.RawMessage(`{"content":[]}`), nil
	}}
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "s", f, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, outR)
	done := make(chan error, 1)
	go func() { done <- New(v, nil).ServeStdio(context.Background(), inR, outW, nil) }()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__wait"}}`,
	} {
		io.WriteString(inW, line+"\n")
	}
	<-started
	if n := hub.InFlight(); n != 1 {
		t.Errorf("InFlight during a fast call = %d, want 1", n)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	if err := hub.WaitIdle(ctx); err == nil {
		t.Error("WaitIdle returned while a fast call was running")
	}
	cancel()
	close(release)
	ctx, cancel = context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := hub.WaitIdle(ctx); err != nil {
		t.Errorf("WaitIdle after the call ended = %v", err)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
	outW.Close()
}

// TestModernHostRaw: a host at 2026-07-28 sends no initialize; its
// tools/call, which carries the protocol fields in _meta, goes raw on its
// own, and the result gets the result type and the hub's serverInfo, as
// go-sdk writes them for such a host; so does one that asks for log
// messages (logLevel: see TestModernHostLogLevel). One whose protocol
// fields go-sdk would refuse takes the typed path.
func TestModernHostRaw(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"fast"}],"_meta":{"k":1}}`), nil
	}}
	h := startFast(t, f, junction.Selection{})
	const meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{`+meta+`}}}`)
	m := h.recv(t)
	if text(m) != "fast" {
		t.Fatalf("modern call = %v, want the raw path's answer", m)
	}
	res := m["result"].(map[string]any)
	info, _ := res["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any)
	if res["resultType"] != "complete" || info["name"] != "junction" || res["_meta"].(map[string]any)["k"] != 1.0 {
		t.Errorf("modern result = %v, want resultType, the hub's serverInfo and the source's _meta", res)
	}
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","_meta":{`+meta+`,"io.modelcontextprotocol/logLevel":"debug"}}}`)
	if m := h.recv(t); text(m) != "fast" {
		t.Errorf("modern call with a log level = %v, want the raw path's answer", m)
	}
	h.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if m := h.recv(t); m["error"] == nil {
		t.Errorf("modern call without client capabilities = %v, want go-sdk's error", m)
	}
}

// TestModernHostLogLevel: a 2026-07-28 request that names its own log
// level takes the raw path, and the source's log messages at that level
// or above reach the host before the answer; messages below it, and all
// of a request that names no level, do not. Progress goes on the
// connection as well.
func TestModernHostLogLevel(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		ss := junction.HostSession(ctx)
		for _, level := range []mcp.LoggingLevel{"debug", "info", "warning", "error"} {
			if err := junction.Log(ctx, ss, &mcp.LoggingMessageParams{Level: level, Data: string(level)}); err != nil {
				return nil, err
			}
		}
		if err := junction.NotifyProgress(ctx, ss, &mcp.ProgressNotificationParams{ProgressToken: "p1", Progress: 1}); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"fast"}]}`), nil
	}}
	h := startFast(t, f, junction.Selection{})
	const meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","_meta":{`+meta+`,"io.modelcontextprotocol/logLevel":"warning","progressToken":"p1"}}}`)
	// until reads up to the answer and returns what came before it.
	until := func() []string {
		var got []string
		for {
			m := h.next(t)
			if m["id"] != nil {
				if text(m) != "fast" {
					t.Fatalf("answer = %v, want the raw path's", m)
				}
				return got
			}
			p, _ := m["params"].(map[string]any)
			switch m["method"] {
			case "notifications/message":
				got = append(got, fmt.Sprint(p["level"]))
			case "notifications/progress":
				got = append(got, "progress "+fmt.Sprint(p["progressToken"]))
			default:
				t.Fatalf("unexpected message %v", m)
			}
		}
	}
	if got, want := until(), []string{"warning", "error", "progress p1"}; !slices.Equal(got, want) {
		t.Errorf("before the answer the host got %q, want %q", got, want)
	}
	// No level named: no log messages (2026-07-28 has no logging/setLevel).
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","_meta":{`+meta+`}}}`)
	if got, want := until(), []string{"progress p1"}; !slices.Equal(got, want) {
		t.Errorf("a call naming no level: before the answer the host got %q, want %q", got, want)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("%d calls took the typed path", n)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"echo", "del\x7f", "ctl\x01", `q"uote`, `back\slash`, "é", "<&>", ""} {
		b := rawjson.AppendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil || got != s {
			t.Errorf("rawjson.AppendString(%q) = %s: %q, %v", s, b, got, err)
		}
	}
}

// Over stdio, a host that negotiated 2025-11-25 gets list results without
// 2026-07-28's ttlMs and cacheScope; a 2026-07-28 host (no initialize)
// keeps them.
func TestServeStdioOlderResults(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	h := startFast(t, f, junction.Selection{})
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	res, _ := h.recv(t)["result"].(map[string]any)
	if _, ok := res["ttlMs"]; ok || res["cacheScope"] != nil || res["tools"] == nil {
		t.Errorf("tools/list for a 2025-11-25 host: %v", res)
	}
	modern := startFast(t, f, junction.Selection{})
	modern.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
	res, _ = modern.recv(t)["result"].(map[string]any)
	if _, ok := res["ttlMs"]; !ok || res["cacheScope"] == nil {
		t.Errorf("tools/list for a 2026-07-28 host lost its cache fields: %v", res)
	}
}

// lateFake is a rawFake that is not ready until ready is closed, as an
// upstream still connecting.
type lateFake struct {
	*rawFake
	ready chan struct{}
}

func (f lateFake) Ready() <-chan struct{} { return f.ready }

// Catalog lists no tools until the fake is ready.
func (f lateFake) Catalog(ctx context.Context) (*junction.Catalog, error) {
	select {
	case <-f.ready:
		return f.rawFake.Catalog(ctx)
	default:
		return &junction.Catalog{}, nil
	}
}

// TestRawCallWaitsForSources: a call of a tool the view does not serve
// yet, while a source is still connecting, waits on the raw path (as
// go-sdk's handler would) and is made once the source is ready, over
// stdio, over an HTTP session, and over HTTP without one (an older
// client in stateless mode, and a 2026-07-28 client); a tool still
// unknown then gets the unknown-tool error from the raw path; over stdio,
// a call cancelled while it waits gets no answer. Nothing goes through
// go-sdk.
func TestRawCallWaitsForSources(t *testing.T) {
	for _, front := range []string{"stdio", "http", "http-stateless", "http-modern"} {
		t.Run(front, func(t *testing.T) {
			f := lateFake{&rawFake{tools: []string{"echo"}, raw: echoRaw}, make(chan struct{})}
			v := viewOf(t, f)
			call := func(id int, tool string) string {
				return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"msg":"late"}}}`
			}
			var recv func() map[string]any
			var ask func(id int, tool string)
			switch front {
			case "stdio":
				h := startStdio(t, v, nil)
				h.initialize(t)
				recv = func() map[string]any { return h.recv(t) }
				ask = func(id int, tool string) { h.send(t, call(id, tool)) }
				h.send(t, call(1, "s__echo"))
				h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
				h.send(t, call(2, "s__echo"))
				// Lines are taken in order: once the ping is answered, both
				// calls wait.
				h.send(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
				if m := h.recv(t); m["id"] != "p" {
					t.Fatalf("got %v before the ping's answer", m)
				}
			default:
				arrived := make(chan struct{}, 4)
				opts := &HTTPOptions{}
				if front == "http-stateless" {
					opts.Mode = HTTPStateless
				}
				plane := New(v, nil).HTTPHandler(opts)
				srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodPost && (r.Header.Get("Mcp-Session-Id") != "" || front != "http") {
						arrived <- struct{}{}
					}
					plane.ServeHTTP(w, r)
				}))
				var sid string
				if front == "http" {
					sid = rawSession(t, srv.URL)
				}
				answers := make(chan map[string]any, 4)
				ask = func(id int, tool string) {
					req := rawRequest(t, srv.URL, sid, call(id, tool))
					if front == "http-modern" {
						req = rawRequest(t, srv.URL, "", `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"msg":"late"},`+
							`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`)
						req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
						req.Header.Set("Mcp-Method", "tools/call")
						req.Header.Set("Mcp-Name", tool)
					}
					go func() {
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							answers <- map[string]any{"error": err.Error()}
							return
						}
						defer resp.Body.Close()
						var m map[string]any
						json.NewDecoder(resp.Body).Decode(&m)
						answers <- m
					}()
				}
				recv = func() map[string]any { return <-answers }
				for len(arrived) > 0 {
					<-arrived // the session's own
				}
				ask(2, "s__echo")
				<-arrived
			}
			close(f.ready)
			if m := recv(); m["id"] != 2.0 || text(m) != "late" {
				t.Errorf("the call made while the source connected: %v; want its answer (and none for a cancelled one)", m)
			}
			ask(3, "s__nope")
			m := recv()
			werr, _ := m["error"].(map[string]any)
			if m["id"] != 3.0 || werr["code"] != -32602.0 || werr["message"] != `unknown tool "s__nope"` {
				t.Errorf("an unknown tool: %v; want the invalid-params error", m)
			}
			if n := f.slow.Load(); n != 0 {
				t.Errorf("%d calls through go-sdk; want none", n)
			}
		})
	}
}

// TestCallToolRaw: in search mode, a call of call_tool that stands for a
// call of one of the view's tools is made as that direct call, on the
// raw path, over stdio and HTTP; a call_tool of a meta-tool, or with
// arguments that are wrong, is the meta-tool's handler's to answer.
func TestCallToolRaw(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	v := viewOf(t, f)
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	call := func(id int, args string) string {
		return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"call_tool","arguments":` + args + `}}`
	}
	h := startStdio(t, v, nil)
	h.initialize(t)
	h.send(t, call(1, `{"name":"s__echo","arguments":{"msg":"through"}}`))
	if m := h.recv(t); m["id"] != 1.0 || text(m) != "through" {
		t.Errorf("call_tool of s__echo: %v; want the tool's own answer", m)
	}
	h.send(t, call(2, `{"name":"search_tools","arguments":{"query":"echo"}}`))
	if m := h.recv(t); m["id"] != 2.0 || !strings.Contains(text(m), "s__echo") {
		t.Errorf("call_tool of search_tools: %v; want the search's answer", m)
	}
	h.send(t, call(3, `{"name":"s__echo","arguments":[1]}`))
	if m := h.recv(t); m["id"] != 3.0 || !strings.Contains(text(m), "arguments must be an object") {
		t.Errorf("call_tool with arguments not an object: %v; want the meta-tool's error", m)
	}

	srv := httptestServer(t, New(v, nil).HTTPHandler(nil))
	sid := rawSession(t, srv.URL)
	resp := rawPost(t, srv.URL, sid, call(4, `{"name":"s__echo","arguments":{"msg":"over http"}}`))
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || text(m) != "over http" {
		t.Errorf("call_tool over HTTP: %v (%v); want the tool's own answer, as JSON from the raw path", m, err)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("%d calls of s__echo went through go-sdk; want none", n)
	}
}

// TestStdioRawOnceInitializeAnswered: the raw path takes a host's calls
// from the answer to initialize on, as go-sdk's server serves them, not
// only once notifications/initialized has come; before initialize, the
// plane refuses a call of an older host.
func TestStdioRawOnceInitializeAnswered(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"fast"}]}`), nil
	}}
	h := startFast(t, f, junction.Selection{})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{}}}`
	h.send(t, call)
	if m := h.recv(t); errCode(m) != -32600 {
		t.Errorf("a call before initialize: %v; want -32600", m)
	}
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := h.recv(t); m["result"] == nil {
		t.Fatalf("initialize = %v", m)
	}
	h.send(t, call)
	if m := h.recv(t); text(m) != "fast" {
		t.Errorf("a call after initialize, before notifications/initialized: %v; want the raw path's answer", m)
	}
	if n := f.slow.Load(); n != 0 {
		t.Errorf("%d calls through go-sdk; want none", n)
	}
}

// TestStdioSetLevelOnPlane: over stdio the plane answers
// logging/setLevel, go-sdk's server never sees it, and the session's log
// messages go out filtered by the level the hub keeps: from a pack's call
// on the raw path and from one go-sdk's server answers (a call the raw
// path does not read: it has a member it does not know), before and after
// the level changes. A level MCP does not name is refused. (That the
// sources are told the level: the log-level conversations.)
func TestStdioSetLevelOnPlane(t *testing.T) {
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "chatty", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, level := range []mcp.LoggingLevel{"info", "error"} {
			if err := junction.Log(ctx, junction.HostSession(ctx), &mcp.LoggingMessageParams{Level: level, Data: string(level)}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	v := viewOf(t, p)
	h := startStdio(t, v, nil)
	h.initialize(t)

	// logs calls s__chatty (raw: a plain call; typed: one go-sdk's server
	// answers) and returns the levels of the log messages before its answer.
	logs := func(id int, typed bool) []string {
		t.Helper()
		extra := ""
		if typed {
			extra = `,"extra":1`
		}
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"s__chatty","arguments":{}%s}}`, id, extra))
		var levels []string
		for {
			m := h.next(t)
			if m["id"] != nil {
				if text(m) != "done" {
					t.Fatalf("call %d: %v", id, m)
				}
				return levels
			}
			if m["method"] == "notifications/message" {
				levels = append(levels, fmt.Sprint(m["params"].(map[string]any)["level"]))
			}
		}
	}
	setLevel := func(id int, params string) map[string]any {
		t.Helper()
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"logging/setLevel"%s}`, id, params))
		return h.recv(t)
	}

	for _, typed := range []bool{false, true} {
		if got := logs(1, typed); len(got) != 0 {
			t.Errorf("before logging/setLevel (typed %v): log messages %v; want none", typed, got)
		}
	}
	if m := setLevel(2, `,"params":{"level":"warning"}`); fmt.Sprint(m["result"]) != "map[]" {
		t.Fatalf("logging/setLevel warning: %v", m)
	}
	for _, typed := range []bool{false, true} {
		if got := fmt.Sprint(logs(3, typed)); got != "[error]" {
			t.Errorf("at warning (typed %v): log messages %s; want [error]", typed, got)
		}
	}
	setLevel(4, `,"params":{"level":"debug"}`)
	for _, typed := range []bool{false, true} {
		if got := fmt.Sprint(logs(5, typed)); got != "[info error]" {
			t.Errorf("at debug (typed %v): log messages %s; want [info error]", typed, got)
		}
	}
	if m := setLevel(6, `,"params":{"level":"loud"}`); errCode(m) != -32602 || !strings.Contains(fmt.Sprint(m["error"]), `"loud"`) {
		t.Errorf("an unknown level: %v; want -32602 naming it", m)
	}
	// Without params go-sdk's server refuses it, as before.
	if m := setLevel(7, ""); errCode(m) != -32600 {
		t.Errorf("logging/setLevel without params: %v; want go-sdk's -32600", m)
	}
}

// TestStdioSubscribeOnPlane: over stdio the plane answers
// resources/subscribe and unsubscribe, go-sdk's server never sees them,
// and a subscribed resource's update reaches the host through the
// connection's Host until it unsubscribes. An unknown resource gets the
// hub's "Resource not found" (-32602), as through go-sdk's server.
func TestStdioSubscribeOnPlane(t *testing.T) {
	p := junction.NewPack("p")
	p.AddResource(&mcp.Resource{URI: "file:///watched", Name: "watched"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///watched", Text: "x"}}}, nil
	})
	v := viewOf(t, p)
	h := startStdio(t, v, nil)
	h.initialize(t)
	request := func(id int, method, uri string) map[string]any {
		t.Helper()
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"uri":%q}}`, id, method, uri))
		return h.recv(t)
	}
	// updated tells the hub the resource changed, then pings: the update,
	// if the host gets one, comes before the ping's answer. (The update is
	// written to the host's pipe before ResourceUpdated returns, so it is
	// told on a goroutine of its own while this one reads.)
	updated := func(id int) (got bool) {
		t.Helper()
		go func() {
			p.ResourceUpdated("file:///watched")
			io.WriteString(h.w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id))
		}()
		for {
			m := h.next(t)
			switch {
			case m["method"] == "notifications/resources/updated":
				if fmt.Sprint(m["params"].(map[string]any)["uri"]) != "file:///watched" {
					t.Errorf("update %v; want file:///watched", m)
				}
				got = true
			case m["id"] == float64(id):
				return got
			}
		}
	}

	if m := request(1, "resources/subscribe", "file:///watched"); fmt.Sprint(m["result"]) != "map[]" {
		t.Fatalf("resources/subscribe: %v", m)
	}
	if !updated(2) {
		t.Error("no notifications/resources/updated for a subscribed resource")
	}
	if m := request(3, "resources/unsubscribe", "file:///watched"); fmt.Sprint(m["result"]) != "map[]" {
		t.Fatalf("resources/unsubscribe: %v", m)
	}
	if updated(4) {
		t.Error("notifications/resources/updated after the host unsubscribed")
	}
	if m := request(5, "resources/subscribe", "file:///nope"); errCode(m) != -32602 {
		t.Errorf("subscribing to an unknown resource: %v; want -32602", m)
	}
	h.p.stdioHosts.Range(func(k, _ any) bool {
		if _, subscribed := v.HostState(k.(*stdioHost)); subscribed {
			t.Error("the hub still records a subscription after the host unsubscribed")
		}
		return true
	})
}

// TestStdioHostRequestsOnPlane checks that over stdio the plane sends
// the host a source's requests (elicitation, sampling, roots) itself,
// under ids of its own, and takes the answers: go-sdk's session sends
// none. An accepted form gets the requested schema's defaults, and one
// whose content does not match it fails the source's request; a request
// whose call the host cancels is cancelled at the host too.
func TestStdioHostRequestsOnPlane(t *testing.T) {
	p := junction.NewPack("p")
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "color": map[string]any{"type": "string", "default": "blue"}},
		"required":   []string{"name"},
	}
	p.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		host := junction.HostSession(ctx)
		er, err := host.Elicit(ctx, &mcp.ElicitParams{Message: "who?", RequestedSchema: schema})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
		}
		cr, err := host.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi?"}}}})
		if err != nil {
			return nil, err
		}
		rr, err := host.ListRoots(ctx, nil)
		if err != nil {
			return nil, err
		}
		said := fmt.Sprint(er.Content["name"], " ", er.Content["color"], " ", cr.Content.(*mcp.TextContent).Text, " ", rr.Roots[0].URI)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: said}}}, nil
	})
	v := viewOf(t, p)
	h := startStdio(t, v, nil)
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{},"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := h.recv(t); m["result"] == nil {
		t.Fatalf("initialize = %v", m)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// asked reads the host's next request, which must be of method.
	asked := func(method string) string {
		t.Helper()
		m := h.recv(t)
		id, _ := m["id"].(string)
		if m["method"] != method || !strings.HasPrefix(id, "jh-") {
			t.Fatalf("got %v; want a %s request with an id of the plane's", m, method)
		}
		return id
	}
	// Both paths: a plain call (the plane's) and one go-sdk's server
	// answers (an unknown member).
	for i, extra := range []string{"", `,"extra":1`} {
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"s__ask","arguments":{}%s}}`, 10+i, extra))
		id := asked("elicitation/create")
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"name":"ann"}}}`, id))
		id = asked("sampling/createMessage")
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"hi"}}}`, id))
		id = asked("roots/list")
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"roots":[{"uri":"file:///r"}]}}`, id))
		if m := h.recv(t); text(m) != "ann blue hi file:///r" {
			t.Errorf("call %d: %v; want the answers, the schema's default filled in", i, m)
		}
	}

	// Content that does not match the schema fails the request.
	h.send(t, `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"s__ask","arguments":{}}}`)
	id := asked("elicitation/create")
	h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"name":5}}}`, id))
	if m := h.recv(t); !strings.Contains(text(m), "does not match the requested schema") {
		t.Errorf("mismatched content: %v; want a tool error naming the schema", m)
	}

	// The host cancels the call while its request is open.
	h.send(t, `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"s__ask","arguments":{}}}`)
	id = asked("elicitation/create")
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":21}}`)
	for {
		m := h.next(t)
		if m["method"] == "notifications/cancelled" {
			if got := fmt.Sprint(m["params"].(map[string]any)["requestId"]); got != id {
				t.Errorf("cancelled %s; want the open request %s", got, id)
			}
			break
		}
		if m["id"] != nil {
			t.Fatalf("got %v before the request's cancellation", m)
		}
	}

	// The host's input ends while a request is open: the request fails
	// at once (not after the drain), and the call is answered.
	h.send(t, `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"s__ask","arguments":{}}}`)
	asked("elicitation/create")
	h.w.Close()
	if m := h.recv(t); m["id"] != float64(22) || !strings.Contains(text(m), "ended before it answered") {
		t.Errorf("a call whose host went: %v; want a tool error saying the host's connection ended", m)
	}
}

// watcher is a pack that watches hosts (junction.HostWatcher): it
// records its sole host and the hosts whose roots changed.
type watcher struct {
	*junction.Pack
	sole    chan junction.Host
	changed chan junction.Host
}

func (w *watcher) SetSoleHost(h junction.Host)      { w.sole <- h }
func (w *watcher) HostRootsChanged(h junction.Host) { w.changed <- h }

// TestStdioSessionNotificationsOnPlane checks that over stdio the plane
// takes the host's notifications/initialized and
// notifications/roots/list_changed once initialize is answered: the
// sources that watch hosts hear of them with the connection's Host, and
// go-sdk's session does not.
func TestStdioSessionNotificationsOnPlane(t *testing.T) {
	w := &watcher{Pack: junction.NewPack("w"), sole: make(chan junction.Host, 4), changed: make(chan junction.Host, 4)}
	v := viewOf(t, w)
	h := startStdio(t, v, nil)
	h.initialize(t) // initialize, its answer, then notifications/initialized
	wait := func(ch chan junction.Host, what string) junction.Host {
		t.Helper()
		select {
		case got := <-ch:
			return got
		case <-time.After(10 * time.Second):
			t.Fatalf("the source was not told of %s", what)
			return nil
		}
	}
	want := wait(w.sole, "its sole host")
	if _, ok := want.(*stdioHost); !ok {
		t.Fatalf("sole host %v; want the connection's Host", want)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	if got := wait(w.changed, "the host's roots changing"); got != want {
		t.Errorf("roots changed for %v; want the connection's Host", got)
	}
	// A ping's answer orders what go-sdk might have read before it.
	h.send(t, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	h.recv(t)
}

func TestEnvelope(t *testing.T) {
	for _, tc := range []struct {
		msg          string
		id, method   string
		notification bool
		ok           bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "1", `"ping"`, false, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", `"notifications/initialized"`, true, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, "", `"notifications/initialized"`, true, true},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "", "", false, false},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, "", "", false, false},
		{`{"jsonrpc":"2.0","method":"ping","extra":1}`, "", "", false, false},
		{`{"jsonrpc":"1.0","method":"ping"}`, "", "", false, false},
		{`{"jsonrpc":"2.0","id":1}`, "", "", false, false},
		{`{"jsonrpc":"2.0","method":"ping"} x`, "", "", false, false},
	} {
		id, method, _, ok := envelope([]byte(tc.msg))
		if ok != tc.ok || ok && (string(id) != tc.id || string(method) != tc.method || (id == nil) != tc.notification) {
			t.Errorf("envelope(%s) = %q, %q, %v; want %q, %q, %v", tc.msg, id, method, ok, tc.id, tc.method, tc.ok)
		}
		if _, _, _, rok := requestEnvelope([]byte(tc.msg)); rok != (tc.ok && !tc.notification) {
			t.Errorf("requestEnvelope(%s) ok = %v", tc.msg, rok)
		}
	}
	for _, tc := range []struct {
		params, meta string
		ok           bool
	}{
		{"", "", true},
		{`{}`, "", true},
		{`{"_meta":{"a":1},"x":2}`, `{"a":1}`, true},
		{`{"_meta":{},"_meta":{}}`, `{}`, true},
		{`{"_meta":{"a":1,"b":{"c":1}},"_m\u0065ta":{"b":{"d":2},"\u0061":3}}`, `{"a":3,"b":{"d":2}}`, true},
		{`{"_meta":{"a":1},"_meta":null}`, `null`, true},
		{`{"_meta":null,"_meta":{"a":1}}`, `{"a":1}`, true},
		{`{"_meta":{"a":1},"_meta":"x"}`, "", false},
		{`[1]`, "", false},
	} {
		var params []byte
		if tc.params != "" {
			params = []byte(tc.params)
		}
		meta, ok := paramsMeta(params)
		if ok != tc.ok || ok && string(meta) != tc.meta {
			t.Errorf("paramsMeta(%s) = %s, %v; want %s, %v", tc.params, meta, ok, tc.meta, tc.ok)
		}
	}
}

// TestStdioInitializeOnPlane: over stdio the plane answers initialize
// itself, with the answer go-sdk's server gave (kept in
// testdata/TestStdioInitializeOnPlane.txtar, compared as JSON values)
// for versions it speaks and ones it does not; a pack's tool called at
// once finds what the host sent in its Host
// (junction.RequestCapabilities too). No go-sdk session is made for the
// connection; the plane refuses a second initialize.
func TestStdioInitializeOnPlane(t *testing.T) {
	newView := func() *junction.View {
		hub := junction.New(&junction.Options{Name: "hub", Version: "1.2.3", Instructions: "ask the hub"})
		t.Cleanup(func() { hub.Close() })
		// A pack's tool, as the conformance pack's: it reads what the host
		// sent in initialize from its context's Host.
		p := junction.NewPack("s")
		p.AddTool(&mcp.Tool{Name: "who", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := "nobody"
			if p := junction.HostSession(ctx).InitializeParams(); p != nil && p.ClientInfo != nil {
				name = p.ClientInfo.Name
				if p.Capabilities == nil || p.Capabilities.RootsV2 == nil || !p.Capabilities.Roots.ListChanged {
					name += " without roots"
				}
			}
			if caps := junction.RequestCapabilities(ctx, req); caps == nil || caps.RootsV2 == nil {
				name += ", and the request's capabilities have no roots"
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
		if err := hub.Add(t.Context(), "s", p, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
			t.Fatal(err)
		}
		v, err := hub.NewView("", junction.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	initLine := func(version string) string {
		return `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"host-` + version + `","version":"1"}}}`
	}
	for _, version := range []string{"2025-11-25", "2024-11-05", "2026-07-28", "2099-01-01", ""} {
		t.Run("version "+version, func(t *testing.T) {
			v := newView()
			h := startStdio(t, v, nil)
			// The call comes with initialize, as a host that does not wait
			// sends it.
			h.send(t, initLine(version)+"\n"+`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__who","arguments":{}}}`)
			got := sortedJSON(t, h.recv(t))
			if want := goldenWant(t, fmt.Sprintf("version %q", version), got); got != want {
				t.Errorf("the plane's answer to initialize:\n got  %s\n want %s", got, want)
			}
			if m := h.recv(t); text(m) != "host-"+version {
				t.Errorf("a call right after initialize: %v; want its source to see the host's clientInfo (host-%s) and roots capability in its Host", m, version)
			}
		})
	}

	// A second initialize is refused (-32600).
	h := startStdio(t, newView(), nil)
	h.send(t, initLine("2025-11-25"))
	h.recv(t)
	h.send(t, initLine("2025-11-25"))
	if m := h.recv(t); errCode(m) != -32600 || !strings.Contains(fmt.Sprint(m), "initialized already") {
		t.Errorf("a second initialize: %v; want -32600 saying it is initialized already", m)
	}
}

// TestUnknownMethods: over stdio the plane answers a request of a method
// go-sdk's server does not know as go-sdk did (-32601, its message),
// and go-sdk never sees it; every method in sdkMethods is one the plane
// knows, as go-sdk's server does.
func TestUnknownMethods(t *testing.T) {
	const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":"two","method":"sampling/createMessage","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"x"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"Tools/List"}`,
		`{"jsonrpc":"2.0","id":5,"method":"no/such/method","params":{` + modern + `}}`,
		`{"jsonrpc":"2.0","method":"notifications/no/such"}`,
		`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
	}
	// What go-sdk's server answered to the requests of lines, as
	// sortedJSON writes it.
	want := []string{
		`{"error":{"code":-32601,"message":"method not found: \"no/such/method\""},"id":1,"jsonrpc":"2.0"}`,
		`{"error":{"code":-32601,"message":"method not found: \"sampling/createMessage\""},"id":"two","jsonrpc":"2.0"}`,
		`{"error":{"code":-32601,"message":"method not found: \"tasks/get\""},"id":3,"jsonrpc":"2.0"}`,
		`{"error":{"code":-32601,"message":"method not found: \"Tools/List\""},"id":4,"jsonrpc":"2.0"}`,
		`{"error":{"code":-32601,"message":"method not found: \"no/such/method\""},"id":5,"jsonrpc":"2.0"}`,
		`{"id":6,"jsonrpc":"2.0","result":{}}`,
	}
	for _, m := range sdkMethods {
		method := m.name
		// Known to go-sdk: whatever it answers, it is not -32601, on the
		// session or for a request that stands alone (server/discover is
		// of 2026-07-28 only, the session's own methods of the revisions
		// before it).
		lines = append(lines, `{"jsonrpc":"2.0","id":"known","method":"`+method+`","params":{}}`,
			`{"jsonrpc":"2.0","id":"known","method":"`+method+`","params":{`+modern+`}}`)
	}
	h, hold, free := sdkHeld(t)
	h.initialize(t)
	hold() // the answers can only be the plane's
	var got []map[string]any
	for _, line := range lines[:6] {
		h.send(t, line)
		if strings.Contains(line, `"id"`) {
			got = append(got, h.recvWithin(t, 10*time.Second))
		}
	}
	free()
	for _, line := range lines[6:] {
		h.send(t, line)
		got = append(got, h.recv(t))
	}
	// The known methods' answers are not compared: they may differ from
	// go-sdk's where docs/deviations.md says (a logging/setLevel without
	// a level).
	for i, w := range want {
		if g := sortedJSON(t, got[i]); g != w {
			t.Errorf("answer %d:\n got  %s\n want %s", i+1, g, w)
		}
	}
	for _, m := range got[:5] {
		if errCode(m) != -32601 {
			t.Errorf("%v: want -32601", m)
		}
	}
	for i, m := range sdkMethods {
		method := m.name
		session, alone := got[6+2*i], got[7+2*i]
		if errCode(session) == -32601 && errCode(alone) == -32601 {
			t.Errorf("%s: the plane answered %v and %v; want a method it knows", method, session, alone)
		}
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","x":1}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`},
		{`{"id":"k","params":{"arguments":{"a":1},"name":"a","arguments":{"b":2}},"method":"tools/call","jsonrpc":"2.0","extra":[]}`, `{"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"a","arguments":{"b":2}}}`},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null,"arguments":null,"_meta":null}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"","arguments":null}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"","arguments":{}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"\u007a","_meta":null}}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"z"}}`},
		{`{"jsonrpc":"2.0","id":3,"\u006dethod":"tools\/list","params":{"cursor":"c","other":true}}`, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"c"}}`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized","x":1}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"p","x":1},"y":2}`, `{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"p","x":1}}`},
		// Already in the plane's shape, or not a message go-sdk reads as a
		// request or a notification: not rewritten.
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"ping","x":1}`, ""},
		{`{"jsonrpc":"2.0","id":{},"method":"ping","x":1}`, ""},
		{`{"jsonrpc":"1.0","id":1,"method":"ping","x":1}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"","x":1}`, ""},
		{`{"jsonrpc":"2.0","id":1,"result":{},"x":1}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"ping","x":1} {}`, ""},
		{`{"JSONRPC":"2.0","id":1,"method":"ping"}`, ""},
	} {
		got, ok := canonical([]byte(tc.msg))
		if ok != (tc.want != "") || string(got) != tc.want {
			t.Errorf("canonical(%s) = %s, %v; want %s", tc.msg, got, ok, tc.want)
		}
	}
}

// FuzzCanonical checks that what canonical writes is of the plane's shape,
// is not rewritten again, and is read by go-sdk as the message it
// rewrote: the same method, id and params.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","x":1}}`,
		`{"id":"k","params":{"arguments":{"a":1},"name":"a","arguments":{"b":2}},"method":"tools/call","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":3,"\u006dethod":"tools\/list","params":{"cursor":"c","other":true}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1},"x":1}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":null,"arguments":null,"_meta":null,"task":null}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/list","params":null}`,
		`{"jsonrpc":"2.0","id":6,"method":"prompts/list","params":{"cursor":"\u007a","_meta":null}}`,
		`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"a","_meta":{"a":1},"name":"b","x":[1]}}`,
		`{"jsonrpc":"2.0","id":8,"method":"completion/complete","params":{"ref":null,"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":"p"},"_meta":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"a","task":{"ttl":5},"task":{}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"_meta":{"a":1},"_m\u0065ta":{"b":2}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		out, ok := canonical(msg)
		if !ok {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical(%s) = %s: not JSON", msg, out)
		}
		if _, _, _, eok := envelope(out); !eok {
			t.Fatalf("canonical(%s) = %s: not of the envelope's shape", msg, out)
		}
		if again, ok := canonical(out); ok {
			t.Fatalf("canonical(%s) = %s, rewritten again as %s", msg, out, again)
		}
		in, err := jsonrpc.DecodeMessage(msg)
		if err != nil {
			return // go-sdk refuses it; the plane's answer is checked elsewhere
		}
		got, err := jsonrpc.DecodeMessage(out)
		if err != nil {
			t.Fatalf("canonical(%s) = %s, which go-sdk does not read: %v", msg, out, err)
		}
		a, _ := in.(*jsonrpc.Request)
		b, _ := got.(*jsonrpc.Request)
		if a == nil || b == nil || a.Method != b.Method || a.ID != b.ID {
			t.Fatalf("canonical(%s) = %s: go-sdk reads %+v, then %+v", msg, out, in, got)
		}
		if a.Method != "tools/call" && !junction.IsListMethod(a.Method) && !isBareMethod(a.Method) && !bytes.Equal(a.Params, b.Params) {
			t.Fatalf("canonical(%s) = %s: params %s became %s", msg, out, a.Params, b.Params)
		}
		// The params rewritten are read by go-sdk's decoder as the ones
		// sent: into the same values of go-sdk's type, or refused alike.
		if m, ok := sdkMethodOf(a.Method); ok && m.params != nil {
			read := func(params []byte) (any, error) {
				p := m.params()
				if len(params) == 0 {
					return p, nil
				}
				return p, sdkDecode(params, p)
			}
			pa, erra := read(a.Params)
			pb, errb := read(b.Params)
			if (erra == nil) != (errb == nil) || erra == nil && !reflect.DeepEqual(pa, pb) {
				t.Fatalf("canonical(%s) = %s: go-sdk reads the params as %+v (%v), then %+v (%v)", msg, out, reflect.ValueOf(pa).Elem().Interface(), erra, reflect.ValueOf(pb).Elem().Interface(), errb)
			}
		}
	})
}

// TestStdioListChangedOnPlane: over stdio the plane tells an initialized
// host of the view's list changes (View.WatchLists): one notification per
// change, and none before initialize.
func TestStdioListChangedOnPlane(t *testing.T) {
	hub, v := hubWith(t, nil, &rawFake{tools: []string{"echo"}, raw: echoRaw})
	h := startStdio(t, v, nil)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	h.recv(t)

	add := func(name string) {
		t.Helper()
		p := junction.NewPack(name)
		p.AddTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		p.AddPrompt(&mcp.Prompt{Name: name + "-prompt"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
		if err := hub.Add(t.Context(), name, p, nil); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]any {
		t.Helper()
		done := make(chan map[string]any, 1)
		go func() { done <- h.next(t) }()
		select {
		case m := <-done:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("nothing came from the plane within 10s")
			return nil
		}
	}
	for round, name := range []string{"p1", "p2"} {
		add(name)
		got := map[string]int{}
		for range 2 {
			m := next()
			method, _ := m["method"].(string)
			if !strings.HasSuffix(method, "/list_changed") || fmt.Sprint(m["params"]) != "map[]" {
				t.Fatalf("round %d: %v; want a list_changed notification", round, m)
			}
			got[method]++
		}
		// No other notification of the change is written: the ping's
		// answer comes next.
		h.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		if m := next(); m["id"] != 2.0 {
			t.Fatalf("round %d: %v after the plane's notifications; want the ping's answer", round, m)
		}
		if got["notifications/tools/list_changed"] != 1 || got["notifications/prompts/list_changed"] != 1 {
			t.Errorf("round %d: notifications %v; want one of tools and one of prompts", round, got)
		}
	}
}

// TestStdioMetaRefusedOnPlane: over stdio a request whose _meta names
// 2026-07-28 or later but that go-sdk's server refuses (client info or
// capabilities it cannot read, a version it does not speak) gets
// go-sdk's error from the plane, before initialize and after it, and
// go-sdk never sees it.
func TestStdioMetaRefusedOnPlane(t *testing.T) {
	metas := []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"t"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null}`,
		`{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-29","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}`,
	}
	methods := []string{`"tools/call","params":{"name":"s__echo","arguments":{},"_meta":%s}`, `"tools/list","params":{"_meta":%s}`, `"no/such","params":{"_meta":%s}`, `"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"},"_meta":%s}`}
	var lines []string
	for i, meta := range metas {
		for j, m := range methods {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":`+m+`}`, 100*i+j, meta))
		}
	}
	answeredAsSDK(t, lines)
}

// TestStdioOutOfRevisionOnPlane: over stdio a request of a method its
// revision does not have (a session's own request of 2026-07-28, which
// has no sessions; server/discover of an older revision) gets go-sdk's
// -32601 from the plane, before initialize and after it, and go-sdk
// never sees it.
func TestStdioOutOfRevisionOnPlane(t *testing.T) {
	const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	answeredAsSDK(t, []string{
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"x://y",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"x://y",` + modern + `}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping","params":{` + modern + `}}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"},` + modern + `}}`,
		`{"jsonrpc":"2.0","id":6,"method":"server/discover"}`,
		`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
	})
}

// TestStdioParamsRefusedOnPlane: over stdio, once initialized, a
// request whose params go-sdk's server would not take (left out or null
// where it requires them, of a type its decoder refuses) gets go-sdk's
// error, word for word, from the plane, and go-sdk never sees it; in a
// message nested deeper than go-sdk's decoder reads, the message is
// refused as a whole, as go-sdk refuses it. (Before initialize the plane refuses every
// request of an older client alike: TestStdioRefusesBeforeInitialize.)
func TestStdioParamsRefusedOnPlane(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 1001) + `1` + strings.Repeat(`}`, 1001)
	answeredAsSDK(t, []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":["s__echo"]}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":1}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s__echo","_meta":7}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":1}}`,
		`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p","arguments":{"who":1}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":null}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":7}}`,
		`{"jsonrpc":"2.0","id":10,"method":"completion/complete","params":{"ref":{"type":"ref/other","name":"p"},"argument":{"name":"a","value":""}}}`,
		`{"jsonrpc":"2.0","id":11,"method":"ping","params":[]}`,
		`{"jsonrpc":"2.0","id":12,"method":"logging/setLevel","params":"debug"}`,
		`{"jsonrpc":"2.0","id":13,"method":"resources/subscribe"}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":1,"arguments":` + deep + `}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"cursor":1,"_meta":` + deep + `}}`,
	}, true)
}

// TestStdioNullsOnPlane: over stdio a request with members go-sdk's
// decoder reads as left out (null params of a list or ping, a null
// _meta, a tool call's null or missing name), a cursor written with
// escapes, or params without what go-sdk's server requires of them (a
// prompt's name, a resource's URI, a completion's reference or argument
// name) is answered by the plane as go-sdk answers it, and go-sdk never
// sees it.
func TestStdioNullsOnPlane(t *testing.T) {
	servedAsSDK(t, []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{"msg":"hi"},"_meta":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":null,"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{"cursor":"\u007a"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p","_meta":null}}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/list","params":{"cursor":null,"_meta":null}}`,
		`{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/read","params":{"url":"file:///a"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"completion/complete","params":{"argument":{"name":"a","value":""}}}`,
		`{"jsonrpc":"2.0","id":13,"method":"prompts/get","params":{"name":"p","arguments":{"a":"1"},"_meta":` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"_meta":{"a":` + strings.Repeat(`[`, 997) + strings.Repeat(`]`, 997) + `}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"prompts/list","params":{"_meta":{"a":` + strings.Repeat(`[`, 999) + strings.Repeat(`]`, 999) + `}}}`,
	}, true)
}

// TestStdioMetaTwiceOnPlane: over stdio a request whose params give
// _meta more than once is answered by the plane, which reads the _meta
// go-sdk's decoder reads (the members of each merged into one, the last
// of a key given twice winning; mergedMeta), as go-sdk answers it; and
// one whose second _meta go-sdk's decoder refuses gets its error.
func TestStdioMetaTwiceOnPlane(t *testing.T) {
	got := servedAsSDK(t, []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{"msg":"hi"},"_meta":{"progressToken":"p"},"_meta":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"a":1},"_m\u0065ta":{"b":2}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","_meta":{"a":1},"_meta":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"a":1},"_meta":{"a":2}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s__echo","_meta":{"a":1},"_meta":"x"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///a","_meta":{},"_meta":{"progressToken":2}}}`,
	}, true)
	if got[4]["error"] == nil {
		t.Errorf("a call whose second _meta is a string: %v; want go-sdk's error", got[4])
	}
}

// TestStdioAnswersTheRest: over stdio what no path of the plane takes
// is answered by the plane as go-sdk's session answers it, before
// initialize and after: a notification's method sent with an id, an
// initialize without params. go-sdk's session is handed none of it.
// (A request before initialize is refused as in TestStdioInitializeRefused.)
func TestStdioAnswersTheRest(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","id":4,"method":"notifications/cancelled","params":{"requestId":9}}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":18446744073709551616,"method":"notifications/initialized"}`,
	}
	answeredAsSDK(t, lines, true)
	// Before initialize go-sdk refuses the methods of notifications it
	// does not look at then as it refuses any request then (code 0: the
	// plane's -32600, docs/deviations.md).
	answeredAsSDK(t, []string{lines[0], lines[2], lines[4], lines[5], lines[6]}, false)
}

// TestStdioInitializeRefused: over stdio an initialize whose params
// go-sdk's decoder refuses is answered by the plane with the decoder's
// error (-32602; go-sdk's server wrote code 0 and named a type of its
// own: docs/deviations.md), leaves the connection uninitialized (a
// request is still refused as before initialize), and a good initialize
// after it is answered; all of it by the plane.
func TestStdioInitializeRefused(t *testing.T) {
	watchUntaken(t)
	h := startStdio(t, viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil)
	for _, tc := range []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, "handling 'initialize': invalid params: unmarshaling"},
		{`{"jsonrpc":"2.0","id":2,"method":"initialize","params":[]}`, "handling 'initialize': invalid params: unmarshaling"},
		{`{"jsonrpc":"2.0","id":5,"method":"initialize","params":null}`, `missing required "params"`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "tools/list before initialize"},
	} {
		h.send(t, tc.line)
		m := h.recvWithin(t, 10*time.Second)
		if e, _ := m["error"].(map[string]any); e == nil || !strings.Contains(fmt.Sprint(e["message"]), tc.want) {
			t.Errorf("%s: %v; want an error saying %q", tc.line, m, tc.want)
		}
	}
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if m := h.recvWithin(t, 10*time.Second); m["result"] == nil {
		t.Errorf("tools/list after a good initialize: %v", m)
	}
}

// TestStdioDropsAsSDK: over stdio the messages go-sdk's session would do
// nothing with are dropped by the plane, without an answer and without
// reaching go-sdk: a request sent without an id or with a null one, a
// cancellation of no request in flight, an answer to no request of
// go-sdk's session (a late answer to one of the plane's, or one that
// answers nothing; a misspelt "Method" makes a request an answer), the
// host's progress notifications (go-sdk's server ignores them) and a
// second notifications/initialized (which go-sdk's server logs).
func TestStdioDropsAsSDK(t *testing.T) {
	check := watchUntaken(t)
	var logs syncBuffer
	h := startStdio(t, viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h.initialize(t)
	dropped := []string{
		`{"jsonrpc":"2.0","method":"notifications/zz-drop"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"zz-drop","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"zz-drop","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{"cursor":"zz-drop"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"prompts/get","params":{"name":"zz-drop"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"zz-drop"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"zz-drop"}}`,
		`{"jsonrpc":"2.0","id":"jh-zz-drop","result":{}}`,
		`{"jsonrpc":"2.0","id":"jh-zz-drop","error":{"code":-1,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":99,"result":{"zz-drop":true}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"zz-drop"}}`,
	}
	for _, line := range dropped {
		h.send(t, line)
	}
	// The plane answers a ping meanwhile, and nothing else comes first.
	h.send(t, `{"jsonrpc":"2.0","id":"p1","method":"ping"}`)
	if m := h.recvWithin(t, 10*time.Second); m["id"] != "p1" || m["result"] == nil {
		t.Errorf("after the messages dropped: %v; want the ping's answer and nothing before it", m)
	}
	check()
	if !strings.Contains(logs.String(), "duplicate initialized notification") {
		t.Errorf("a second notifications/initialized is not logged as go-sdk logs it; the log:\n%s", logs.String())
	}
}

// sdkHeld serves a view of one tool (s__echo) over stdio. From hold to
// free (or the end of the test) every message must be taken or answered
// by the plane (watchUntaken).
func sdkHeld(t *testing.T) (h *fastHost, hold, free func()) {
	t.Helper()
	h = startStdio(t, viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil)
	check := func() {}
	hold = func() { check = watchUntaken(t) }
	free = func() { check() }
	return h, hold, free
}

// watchUntaken records, from now until the check it returns is called
// (or the test ends), every message the plane neither takes nor answers
// over stdio (testHookUntaken), and the check fails the test for each.
// Tests that use it do not run in parallel.
func watchUntaken(t *testing.T) (check func()) {
	var mu sync.Mutex
	var left []string
	hook := func(msg jsonrpc.Message) {
		b, _ := jsonrpc.EncodeMessage(msg)
		mu.Lock()
		left = append(left, string(b))
		mu.Unlock()
	}
	testHookUntaken.Store(&hook)
	var once sync.Once
	check = func() {
		once.Do(func() {
			testHookUntaken.CompareAndSwap(&hook, nil)
			mu.Lock()
			defer mu.Unlock()
			for _, m := range left {
				t.Errorf("no path of the plane took %s; want every message taken or answered by the plane", m)
			}
		})
	}
	t.Cleanup(check)
	return check
}

// answeredAsSDK sends each of lines, requests that go-sdk's server
// refused, to a stdio plane, before initialize and after it (when, if
// given: false for before, true for after), and checks that the plane
// answers each itself (go-sdk's session is handed none of them) with
// go-sdk's error (servedAsSDK).
func answeredAsSDK(t *testing.T, lines []string, when ...bool) {
	t.Helper()
	if len(when) == 0 {
		when = []bool{false, true}
	}
	for _, initialize := range when {
		for _, m := range servedAsSDK(t, lines, initialize) {
			if m["error"] == nil {
				t.Errorf("initialized %v: %v; want an error", initialize, m)
			}
		}
	}
}

// servedAsSDK sends each of lines to a stdio plane, after initialize if
// initialize is set, checks that the plane answers each itself (go-sdk's
// session is handed none of them) as go-sdk's server answered it, and
// returns the plane's answers. What go-sdk answered is kept in
// testdata/TEST.txtar (goldenWant), in a section for before initialize
// or after it: each line sent ("> " and the line), then its answer
// as sortedJSON writes it (the answers are compared as JSON values).
func servedAsSDK(t *testing.T, lines []string, initialize bool) []map[string]any {
	t.Helper()
	h, hold, free := sdkHeld(t)
	if initialize {
		h.initialize(t)
	}
	hold() // the answers can only be the plane's
	var answers []map[string]any
	var got []string
	for _, line := range lines {
		h.send(t, line)
		m := h.recvWithin(t, 10*time.Second)
		answers = append(answers, m)
		got = append(got, "> "+line, sortedJSON(t, m))
	}
	free()
	section := map[bool]string{false: "before initialize", true: "after initialize"}[initialize]
	want := strings.Split(goldenWant(t, section, strings.Join(got, "\n")), "\n")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: the plane's answers differ from those expected (-want +plane):\n%s", section, diff)
	}
	return answers
}

// BenchmarkReadMeta reads the _meta a 2026-07-28 host sends with every
// request: the first read checks its client capabilities and info as
// go-sdk decodes them, the others find them kept (clientMetaOK).
func BenchmarkReadMeta(b *testing.B) {
	meta := []byte(`{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1.0.0"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if mi := readMeta(meta); !mi.ok {
			b.Fatal("not ok")
		}
	}
}

// TestStdioReusedID: over stdio a request whose id is that of a request
// still in flight is refused by the plane (-32600, null id, naming the
// id), whatever its method, and go-sdk's session never sees it (it used
// to serve a call with such an id a second time, so the host got two
// answers for one id); the request in flight is answered once, and its
// id may be used again after that.
func TestStdioReusedID(t *testing.T) {
	release := make(chan struct{})
	f := &rawFake{tools: []string{"wait"}, raw: func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{"content":[{"type":"text","text":"raw"}]}`), nil
	}}
	v := viewOf(t, f)
	h := startStdio(t, v, nil)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"s__wait"}}`)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"s__wait"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"p"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"s__none"}}`,
	} {
		h.send(t, line)
		m := h.recv(t)
		e, _ := m["error"].(map[string]any)
		if m["id"] != nil || errCode(m) != -32600 || !strings.Contains(fmt.Sprint(e["message"]), "request id 7 is in use") {
			t.Errorf("%s, sent while id 7 is in flight: %v; want -32600 with a null id, naming the id", line, m)
		}
	}
	close(release)
	if m := h.recv(t); m["id"] != float64(7) || text(m) != "raw" {
		t.Errorf("the call in flight: %v; want its own answer", m)
	}
	h.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`)
	if m := h.recv(t); m["id"] != float64(7) || m["result"] == nil {
		t.Errorf("id 7 used again once answered: %v; want the list", m)
	}
}

// TestStdioKeepAlive: with the hub's KeepAlive set, the plane pings a
// stdio host at that interval (go-sdk's server pinged its sessions; the
// plane makes none for a stdio connection): an answered ping keeps the
// connection, one not answered within half the interval ends it, and
// the error is logged. A host that does not know ping is not pinged
// again.
func TestStdioKeepAlive(t *testing.T) {
	start := func(t *testing.T, logs io.Writer) *fastHost {
		v := viewWith(t, &junction.Options{KeepAlive: 10 * time.Second}, &rawFake{tools: []string{"echo"}, raw: echoRaw})
		h := startStdio(t, v, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
		h.initialize(t)
		return h
	}
	ping := func(t *testing.T, h *fastHost) map[string]any {
		t.Helper()
		m := h.next(t)
		if m["method"] != "ping" {
			t.Fatalf("%v; want a ping", m)
		}
		return m
	}
	t.Run("not answered", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var logs syncBuffer
			h := start(t, &logs)
			before := time.Now()
			m := ping(t, h)
			if d := time.Since(before); d != 10*time.Second {
				t.Errorf("the first ping came after %v; want 10s", d)
			}
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{}}`, m["id"]))
			ping(t, h) // not answered: cancelled, then the connection ends
			if m := h.next(t); m["method"] != "notifications/cancelled" {
				t.Errorf("after a ping not answered: %v; want its cancellation", m)
			}
			if line, err := h.r.ReadBytes('\n'); err != io.EOF {
				t.Errorf("after a ping not answered: %q, %v; want the connection's end", line, err)
			}
			if d := time.Since(before); d != 25*time.Second {
				t.Errorf("the connection ended after %v; want 25s (two pings, and half an interval)", d)
			}
			if !strings.Contains(logs.String(), "keepalive ping failed") {
				t.Errorf("the log does not say why the connection ended:\n%s", logs.String())
			}
		})
	})
	t.Run("ping unknown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h := start(t, io.Discard)
			m := ping(t, h)
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"error":{"code":-32601,"message":"no ping here"}}`, m["id"]))
			// The host pings the plane a minute later (on the bubble's
			// clock); a keep-alive ping of the plane's, every 10s, would
			// come before its answer.
			time.AfterFunc(time.Minute, func() { io.WriteString(h.w, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n") })
			if m := h.next(t); m["id"] != float64(7) {
				t.Errorf("%v; want the answer to the host's ping, and no ping of the plane's", m)
			}
		})
	})
}

// FuzzStdioPlane feeds a stdio plane, which answers everything itself,
// whatever lines come: it ends when its input does, writes only JSON
// lines, never more answers than lines, and takes or answers every
// message (none is left: testHookUntaken).
func FuzzStdioPlane(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","id":1.5,"method":"notifications/progress"}`,
		`{"jsonrpc":"2.0","id":2,"method":"initialize","params":[]}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p","_meta":{},"_meta":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"garbage\n[]\n{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var left atomic.Int32
		hook := func(jsonrpc.Message) { left.Add(1) }
		testHookUntaken.Store(&hook)
		defer testHookUntaken.Store(nil)
		var out syncBuffer
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if err := New(viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil).ServeStdio(ctx, bytes.NewReader(data), &out, nil); err != nil {
			t.Fatalf("ServeStdio = %v", err)
		}
		if ctx.Err() != nil {
			t.Fatal("ServeStdio did not end with its input")
		}
		lines := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				lines++
			}
		}
		answers := 0
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			if !json.Valid([]byte(line)) {
				t.Fatalf("wrote %q, not JSON", line)
			}
			if strings.Contains(line, `"result"`) || strings.Contains(line, `"error"`) {
				answers++
			}
		}
		if answers > lines {
			t.Errorf("%d answers to %d lines:\n%s", answers, lines, out.String())
		}
		if n := left.Load(); n > 0 {
			t.Errorf("%d messages neither taken nor answered by the plane", n)
		}
	})
}

// TestStdioSessionEnds: a stdio connection the plane answers is one of
// its Sessions, with the revision it initialized with, or, for a
// host that does not initialize, the one its first request named; and it
// ends when its view is removed or its hub closes, as the view's go-sdk
// sessions are closed.
func TestStdioSessionEnds(t *testing.T) {
	versions := func(p *Plane) (vs []string) {
		p.Sessions(func(v string) { vs = append(vs, v) })
		return vs
	}
	for _, end := range []string{"view removed", "hub closed"} {
		t.Run(end, func(t *testing.T) {
			hub, v := hubWith(t, nil, &rawFake{tools: []string{"echo"}, raw: echoRaw})
			p := New(v, nil)
			serve := func() (*fastHost, chan error) {
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				h := &fastHost{w: inW, r: bufio.NewReader(outR)}
				done := make(chan error, 1)
				go func() {
					done <- p.ServeStdio(context.Background(), inR, outW, nil)
					outW.Close()
				}()
				t.Cleanup(func() { inW.Close() })
				return h, done
			}
			older, olderDone := serve()
			older.initialize(t)
			newer, newerDone := serve()
			newer.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
			newer.recv(t)
			got := versions(p)
			slices.Sort(got)
			if want := []string{"2025-11-25", "2026-07-28"}; !slices.Equal(got, want) {
				t.Errorf("Sessions: %q; want %q", got, want)
			}
			if end == "view removed" {
				hub.RemoveView(v)
			} else {
				hub.Close()
			}
			for _, done := range []chan error{olderDone, newerDone} {
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("ServeStdio = %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("a stdio connection did not end when its %s", end)
				}
			}
			if got := versions(p); len(got) != 0 {
				t.Errorf("Sessions after the end: %q; want none", got)
			}
		})
	}
}

// The envelope of a call as hosts send it, read once per call: a
// 2025-11-25 host's, and a 2026-07-28 host's with its _meta.
func BenchmarkParseToolCall(b *testing.B) {
	for _, bc := range []struct{ name, msg string }{
		{"2025", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo__echo","arguments":{"msg":"hello, world! 0123"}}}`},
		{"2026", `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo__echo","arguments":{"msg":"hello, world! 0123"},` +
			`"_meta":{"progressToken":17,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcpload","version":"1.0.0"},` +
			`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{}}}}}}`},
	} {
		msg := []byte(bc.msg)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, ok := parseToolCall(msg); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}

// TestStandaloneHostGreets: over stdio, the first request of a host that
// does not initialize (2026-07-28 on) is its greeting, as an older host's
// handshake is: the hub's Greeted closes, so a hub serving it settles
// (gives back its startup pages, tunes its collector for load) without
// waiting for an initialize that will not come.
func TestStandaloneHostGreets(t *testing.T) {
	hub, v := hubWith(t, nil, &rawFake{tools: []string{"echo"}, raw: echoRaw})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &fastHost{w: inW, r: bufio.NewReader(outR)}
	done := make(chan error, 1)
	go func() {
		done <- New(v, nil).ServeStdio(context.Background(), inR, outW, nil)
		outW.Close()
	}()
	select {
	case <-hub.Greeted():
		t.Fatal("Greeted is closed before the host sent anything")
	default:
	}
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if res := h.recv(t); res["result"] == nil {
		t.Fatalf("tools/list answered %v", res)
	}
	select {
	case <-hub.Greeted():
	default:
		t.Error("Greeted is still open after the first request of a host at 2026-07-28")
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
}
