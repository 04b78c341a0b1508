package dataplane

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

// modernCase is one HTTP request of a 2026-07-28 client without a
// session.
type modernCase struct {
	what    string
	verb    string   // "" for POST
	body    string   // "" for none
	headers []string // pairs, over the defaults of modernRequest (a value "-" removes the header)
	// plane, where the plane's answer differs from go-sdk's
	// (docs/deviations.md), is its status and body; where it does not,
	// testdata/TestHTTPModernOnPlane.txtar holds go-sdk's answer.
	plane string
}

// modernCases are requests of a 2026-07-28 client without a session that
// go-sdk's handler refuses or answers without calling a handler.
var modernCases = []modernCase{
	{"ping", "", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "ping"}, ""},
	{"initialize", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, []string{"Mcp-Method", "initialize"}, ""},
	{"logging/setLevel", "", `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info",` + modernMeta + `}}`, []string{"Mcp-Method", "logging/setLevel"}, ""},
	{"resources/subscribe", "", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///a",` + modernMeta + `}}`, []string{"Mcp-Method", "resources/subscribe"}, ""},
	{"an unknown method", "", `{"jsonrpc":"2.0","id":1,"method":"bogus/method","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "bogus/method"},
		`404 {"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found: \"bogus/method\""}}`},
	{"no _meta", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"no params", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"params not an object", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"an older _meta version", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"Mcp-Name differs", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"},` + modernMeta + `}}`, []string{"Mcp-Method", "tools/call", "Mcp-Name", "wrong"}, ""},
	{"Mcp-Name missing", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"},` + modernMeta + `}}`, []string{"Mcp-Method", "tools/call"}, ""},
	{"Mcp-Method differs", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "prompts/list"}, ""},
	{"Mcp-Method missing", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "-"}, ""},
	{"a notification", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, []string{"Mcp-Method", "notifications/initialized"}, ""},
	{"a cancellation", "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, []string{"Mcp-Method", "notifications/cancelled"}, ""},
	{"a notification, Mcp-Method differs", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, []string{"Mcp-Method", "x"}, ""},
	{"an unknown notification", "", `{"jsonrpc":"2.0","method":"notifications/bogus"}`, []string{"Mcp-Method", "notifications/bogus"}, "202 "},
	{"an answer", "", `{"jsonrpc":"2.0","id":1,"result":{}}`, []string{"Mcp-Method", "-"}, ""},
	{"a batch", "", `[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}]`, []string{"Mcp-Method", "tools/list"}, ""},
	{"an id that is an object", "", `{"jsonrpc":"2.0","id":{},"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"no jsonrpc member", "", `{"id":1,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"an empty body", "", ``, []string{"Mcp-Method", "tools/list"}, ""},
	{"no client capabilities", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"client info of the wrong type", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":5}}}`, []string{"Mcp-Method", "tools/list"}, ""},
	{"a prompt's name a number", "", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":5,` + modernMeta + `}}`, []string{"Mcp-Method", "prompts/get", "Mcp-Name", "5"}, ""},
	{"a completion's ref a number", "", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":5,` + modernMeta + `}}`, []string{"Mcp-Method", "completion/complete"}, ""},
	{"a resource read, Mcp-Name differs", "", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a",` + modernMeta + `}}`, []string{"Mcp-Method", "resources/read", "Mcp-Name", "file:///b"}, ""},
	{"a notification naming another version", "", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`, []string{"Mcp-Method", "notifications/initialized"}, ""},
	{"a string id", "", `{"jsonrpc":"2.0","id":"x","method":"ping","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "ping"}, ""},
	{"a request's method without an id", "", `{"jsonrpc":"2.0","method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list"}, "202 "},
	{"a notification's method with an id", "", `{"jsonrpc":"2.0","id":1,"method":"notifications/initialized"}`, []string{"Mcp-Method", "notifications/initialized"},
		`400 {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: unexpected id for \"notifications/initialized\""}}`},
	{"params left out", "", `{"jsonrpc":"2.0","id":1,"method":"prompts/get"}`, []string{"Mcp-Method", "prompts/get", "Mcp-Name", "p"},
		`400 {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: missing required \"params\""}}`},
	{"a null id", "", `{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list"}, "202 "},
	{"an unknown version in both", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, []string{"Mcp-Method", "tools/list", "Mcp-Protocol-Version", "2027-01-01"}, ""},
	{"GET", "GET", ``, nil, ""},
	{"DELETE", "DELETE", ``, nil, ""},
	{"PUT", "PUT", ``, nil, ""},
	{"Content-Type text", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list", "Content-Type", "text/plain"}, ""},
	{"Accept JSON only", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list", "Accept", "application/json"}, ""},
	{"Last-Event-ID on a POST", "", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernMeta + `}}`, []string{"Mcp-Method", "tools/list", "Last-Event-ID", "1"}, ""},
}

// TestHTTPModernOnPlane: a 2026-07-28 client's requests without a
// session that go-sdk's handler refused get from the plane the status,
// content type and body go-sdk's handler gave (kept, byte for byte, in
// testdata/TestHTTPModernOnPlane.txtar: goldenWant), and go-sdk's
// stateless handler is handed none of them.
func TestHTTPModernOnPlane(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, uris: []string{"file:///a"}, raw: echoRaw}
	srv := httptest.NewServer(New(viewOf(t, f), nil).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(srv.Close)
	var handed []string
	hook := func(r *http.Request) { handed = append(handed, r.Method+" "+r.Header.Get("Mcp-Method")) }
	testHookUnserved.Store(&hook)
	t.Cleanup(func() { testHookUnserved.Store(nil) })

	do := func(url string, c modernCase) (int, string, string) {
		req := modernRequest(t, url, "", "", "", c.body)
		req.Header.Del("Mcp-Method")
		if c.verb != "" {
			req.Method = c.verb
		}
		for i := 0; i+1 < len(c.headers); i += 2 {
			if c.headers[i+1] == "-" {
				req.Header.Del(c.headers[i])
			} else {
				req.Header.Set(c.headers[i], c.headers[i+1])
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type") + " Allow:" + resp.Header.Get("Allow"), string(bytes.TrimSpace(b))
	}
	for _, c := range modernCases {
		handed = nil
		st, ct, body := do(srv.URL, c)
		if len(handed) > 0 {
			t.Errorf("%s: handed to go-sdk's stateless handler: %q", c.what, handed)
		}
		if c.plane != "" {
			if got := fmt.Sprintf("%d %s", st, body); got != c.plane {
				t.Errorf("%s:\n got  %s\n want %s", c.what, got, c.plane)
			}
			continue
		}
		got := fmt.Sprintf("%d %s\n%s", st, ct, body)
		if want := goldenWant(t, c.what, got); got != want {
			t.Errorf("%s:\n got  %s\n want %s", c.what, got, want)
		}
	}
}

// TestHTTPModernListen: a 2026-07-28 client's subscriptions/listen
// without a session is a stream of its own on the POST's response, served
// by the plane as go-sdk's handler served it (the events it sent are the
// test's wants): the acknowledgement, then each list change it was
// granted, tagged with its id, until the client goes away; a listen
// granted nothing is answered at once. go-sdk's stateless handler is
// handed none of it.
func TestHTTPModernListen(t *testing.T) {
	type served struct {
		pack  *junction.Pack
		plane *Plane
		url   string
	}
	serve := func() served {
		p := junction.NewPack("p")
		p.AddResource(&mcp.Resource{URI: "r://a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
		addTool(p, "one")
		plane := New(viewOf(t, p), nil)
		srv := httptest.NewServer(plane.HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		return served{p, plane, srv.URL}
	}
	var handed atomic.Int32
	hook := func(*http.Request) { handed.Add(1) }
	testHookUnserved.Store(&hook)
	t.Cleanup(func() { testHookUnserved.Store(nil) })

	listen := func(t *testing.T, s served, notifications string) (events <-chan string, stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":` + notifications + `,` + modernMeta + `}}`
		req := modernRequest(t, s.url, "subscriptions/listen", "", "", body).WithContext(ctx)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		ch := make(chan string, 16)
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			ch <- fmt.Sprintf("%d %s %s", resp.StatusCode, ct, bytes.TrimSpace(b))
			close(ch)
			return ch, cancel
		}
		go func() {
			defer close(ch)
			defer resp.Body.Close()
			er := newEventReader(resp.Body)
			for {
				ev, ok := er.read()
				if !ok {
					return
				}
				ch <- ev.name + " " + ev.data
			}
		}()
		return ch, cancel
	}
	next := func(t *testing.T, ch <-chan string) string {
		t.Helper()
		select {
		case e, ok := <-ch:
			if !ok {
				return "(end)"
			}
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
			return ""
		}
	}
	untilEnd := func(t *testing.T, ch <-chan string) (got []string) {
		for e := next(t, ch); e != "(end)"; e = next(t, ch) {
			got = append(got, e)
		}
		return got
	}
	run := func(t *testing.T) []string {
		s := serve()
		ch, stop := listen(t, s, `{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["r://a"]}`)
		got := []string{next(t, ch)}
		n := 0
		s.plane.Sessions(func(string) { n++ })
		if n != 0 {
			t.Errorf("an open listen counts as %d stdio sessions; want none", n)
		}
		s.pack.ResourceUpdated("r://a")
		got = append(got, next(t, ch))
		addTool(s.pack, "two")
		got = append(got, next(t, ch))
		stop()
		for e := range ch {
			got = append(got, e) // nothing more, once the client has gone
		}
		// Granted nothing: answered at once.
		ch, stop = listen(t, s, `{}`)
		defer stop()
		got = append(got, untilEnd(t, ch)...)
		// A resource the hub refuses: the hub's error.
		ch, stop = listen(t, s, `{"resourceSubscriptions":["r://none"]}`)
		defer stop()
		return append(got, untilEnd(t, ch)...)
	}
	got := run(t)
	if n := handed.Load(); n != 0 {
		t.Errorf("%d requests handed to go-sdk's stateless handler; want none", n)
	}
	// What go-sdk's handler sent: an acknowledgement, an update, a list
	// change; an acknowledgement and an answer; an error.
	want := []string{
		`message {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["r://a"]}}}`,
		`message {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"uri":"r://a"}}`,
		`message {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`,
		`message {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"notifications":{}}}`,
		`message {"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"junction","version":"dev"},"io.modelcontextprotocol/subscriptionId":7}}}`,
		`400 application/json {"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Resource not found","data":{"uri":"r://none"}}}`,
	}
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("event %d:\n got  %s\n want %s", i+1, g, w)
		}
	}
}

// addTool adds a tool that answers nothing to p.
func addTool(p *junction.Pack, name string) {
	p.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

// FuzzHTTPAlone: whatever body a client without a session POSTs, at
// whatever Mcp-Protocol-Version, under whatever Mcp-Method and Mcp-Name,
// to a handler without sessions, the plane answers it (a status, and a
// JSON body where the answer is JSON) and hands nothing to go-sdk's
// stateless handler.
func FuzzHTTPAlone(f *testing.F) {
	for _, c := range modernCases {
		if c.verb == "" {
			method, name := "", ""
			for i := 0; i+1 < len(c.headers); i += 2 {
				switch c.headers[i] {
				case "Mcp-Method":
					method = c.headers[i+1]
				case "Mcp-Name":
					name = c.headers[i+1]
				}
			}
			f.Add(c.body, method, name, "2026-07-28")
		}
	}
	for _, c := range olderCases {
		if c.verb == "" {
			f.Add(c.body, "", "", c.version)
		}
	}
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{},`+modernMeta+`}}`, "subscriptions/listen", "", "2026-07-28")
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__chatty","arguments":{},`+modernMeta+`}}`, "tools/call", "s__chatty", "2026-07-28")
	h := New(viewOf(f, olderPack()), nil).HTTPHandler(&HTTPOptions{Mode: HTTPStateless})
	var handed atomic.Int32
	hook := func(*http.Request) { handed.Add(1) }
	testHookUnserved.Store(&hook)
	f.Cleanup(func() { testHookUnserved.Store(nil) })
	header := func(req *http.Request, key, value string) {
		if value != "" && !strings.ContainsAny(value, "\r\n\x00") {
			req.Header.Set(key, value)
		}
	}
	f.Fuzz(func(t *testing.T, body, method, name, version string) {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		header(req, "Mcp-Protocol-Version", version)
		header(req, "Mcp-Method", method)
		header(req, "Mcp-Name", name)
		ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second) // a listen's stream ends with its client
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		if rec.Code == 0 {
			t.Fatalf("no status for %q", body)
		}
		if ct := rec.Header().Get("Content-Type"); ct == "application/json" && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%q: a JSON answer that is not JSON: %q", body, rec.Body.Bytes())
		}
		if n := handed.Swap(0); n != 0 {
			t.Fatalf("%q handed to go-sdk's stateless handler", body)
		}
	})
}

// olderCase is one request of a client before 2026-07-28 without a
// session, to a handler without sessions (HTTPStateless).
type olderCase struct {
	what    string
	version string // its Mcp-Protocol-Version, "" for none
	verb    string // "" for POST
	body    string
	// plane, where the plane's answer differs from go-sdk's
	// (docs/deviations.md), is its status and messages; where it does
	// not, testdata/TestHTTPOlderAloneOnPlane.txtar holds go-sdk's.
	plane string
	sid   string // an Mcp-Session-Id, which a handler without sessions ignores
}

var olderCases = []olderCase{
	{"initialize", "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "", ""},
	{"initialize at 2025-03-26", "2025-03-26", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "", ""},
	{"initialized", "2025-11-25", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", ""},
	{"a prompt", "2025-11-25", "", `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"s__greet","arguments":{"who":"x"}}}`, "", ""},
	{"an unknown prompt", "2025-11-25", "", `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"nope"}}`, "", ""},
	{"a resource", "2025-06-18", "", `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"r://a"}}`, "", ""},
	{"a completion", "2025-11-25", "", `{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"s__greet"},"argument":{"name":"who","value":"x"}}}`, "", ""},
	{"logging/setLevel", "2025-11-25", "", `{"jsonrpc":"2.0","id":5,"method":"logging/setLevel","params":{"level":"debug"}}`, "", ""},
	{"resources/subscribe", "2025-11-25", "", `{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"r://a"}}`, "", ""},
	{"a pack's call that logs", "2025-11-25", "", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"s__chatty","arguments":{},"_meta":{"progressToken":"t1"}}}`, "", ""},
	{"a pack's call that asks", "2025-11-25", "", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"s__ask","arguments":{}}}`, "", ""},
	{"a pack's call that samples", "2025-11-25", "", `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"s__sample","arguments":{}}}`, "", ""},
	{"a pack's call, no header", "", "", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"s__chatty","arguments":{}}}`, "", ""},
	{"an unknown tool", "2025-11-25", "", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, "", ""},
	{"an unknown method", "2025-11-25", "", `{"jsonrpc":"2.0","id":11,"method":"bogus"}`,
		`200 {"jsonrpc":"2.0","id":11,"error":{"code":-32601,"message":"method not found: \"bogus\""}}`, ""},
	{"a batch at 2025-11-25", "2025-11-25", "", `[{"jsonrpc":"2.0","id":12,"method":"ping"}]`, "", ""},
	{"a batch at 2025-03-26", "2025-03-26", "", `[{"jsonrpc":"2.0","id":12,"method":"ping"}]`,
		`400 {"jsonrpc":"2.0","error":{"code":-32600,"message":"JSON-RPC batches are not supported"}}`, ""},
	{"a version the hub does not speak", "1999-01-01", "", `{"jsonrpc":"2.0","id":13,"method":"ping"}`, "", ""},
	{"a _meta of another version", "2025-11-25", "", `{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, "", ""},
	{"a notification of another version", "2025-11-25", "", `{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}`, "", ""},
	{"GET", "2025-11-25", "GET", ``, "", ""},
	{"DELETE", "", "DELETE", ``, "", ""},
	{"a session id", "2025-11-25", "", `{"jsonrpc":"2.0","id":15,"method":"prompts/get","params":{"name":"s__greet","arguments":{"who":"y"}}}`, "", "made-up"},
	{"a session id on a DELETE", "2025-11-25", "DELETE", ``, "", "made-up"},
}

// olderPack is a pack with a prompt, a resource, a tool that logs at
// info and at debug and sends progress, and one that asks the host.
func olderPack() *junction.Pack {
	p := junction.NewPack("p")
	p.AddResource(&mcp.Resource{URI: "r://a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "r://a", Text: "alpha"}}}, nil
	})
	p.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	p.AddTool(&mcp.Tool{Name: "chatty", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		host := junction.HostSession(ctx)
		for _, level := range []mcp.LoggingLevel{"debug", "info"} {
			if err := junction.Log(ctx, host, &mcp.LoggingMessageParams{Level: level, Data: string(level)}); err != nil {
				return nil, err
			}
		}
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := junction.NotifyProgress(ctx, host, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	p.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := junction.HostSession(ctx).Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: &jsonschema.Schema{Type: "object"}})
		if err == nil {
			return nil, errors.New("the host was asked")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "could not ask: " + err.Error()}}}, nil
	})
	p.AddTool(&mcp.Tool{Name: "sample", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := junction.HostSession(ctx).CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1})
		if err == nil {
			return nil, errors.New("the host was asked")
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "could not ask: " + err.Error()}}}, nil
	})
	return p
}

// TestHTTPOlderAloneOnPlane: on a handler without sessions, an older
// client's requests get from the plane what go-sdk's stateless handler
// answered (the same status and messages, as JSON or SSE events; kept,
// byte for byte, in testdata/TestHTTPOlderAloneOnPlane.txtar:
// goldenWant), and go-sdk's stateless handler is handed none of them.
func TestHTTPOlderAloneOnPlane(t *testing.T) {
	srv := httptest.NewServer(New(viewOf(t, olderPack()), nil).HTTPHandler(&HTTPOptions{Mode: HTTPStateless}))
	t.Cleanup(srv.Close)
	var handed []string
	hook := func(r *http.Request) { handed = append(handed, r.Method) }
	testHookUnserved.Store(&hook)
	t.Cleanup(func() { testHookUnserved.Store(nil) })

	do := func(url string, c olderCase) string {
		verb := cmp.Or(c.verb, http.MethodPost)
		req, err := http.NewRequestWithContext(t.Context(), verb, url, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.version != "" {
			req.Header.Set("Mcp-Protocol-Version", c.version)
		}
		if c.sid != "" {
			req.Header.Set("Mcp-Session-Id", c.sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out := fmt.Sprint(resp.StatusCode)
		if ct := resp.Header.Get("Content-Type"); ct == "text/event-stream" {
			for _, e := range readEvents(t, resp.Body) {
				out += " " + e.data
			}
			return out
		}
		b, _ := io.ReadAll(resp.Body)
		if a := resp.Header.Get("Allow"); a != "" {
			out += " Allow:" + a
		}
		return out + " " + string(bytes.TrimSpace(b))
	}
	for _, c := range olderCases {
		handed = nil
		got := do(srv.URL, c)
		if len(handed) > 0 {
			t.Errorf("%s: handed to go-sdk's stateless handler", c.what)
		}
		want := c.plane
		if want == "" {
			want = goldenWant(t, c.what, got)
		}
		if got != want {
			t.Errorf("%s:\n got  %s\n want %s", c.what, got, want)
		}
		// The answer kept for it, as -update may rewrite it, still has
		// what go-sdk's had.
		if c.what == "a pack's call that logs" && (!strings.Contains(want, `"notifications/message"`) || strings.Contains(want, `"debug"`) || !strings.Contains(want, `"notifications/progress"`)) {
			t.Errorf("%s: the answer expected is %s; want the info message, not the debug one, and the progress", c.what, want)
		}
	}
}

// BenchmarkHTTPAlone: what a request without a session that the raw path
// does not take costs, served by a connection of its own: an older
// client's prompts/get in stateless mode, and a 2026-07-28 client's
// subscriptions/listen granted nothing.
func BenchmarkHTTPAlone(b *testing.B) {
	for _, c := range []struct {
		name, version, method, body string
		mode                        HTTPMode
	}{
		{"older-prompt", "2025-11-25", "prompts/get", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"s__greet","arguments":{"who":"x"}}}`, HTTPStateless},
		{"modern-listen", "2026-07-28", "subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{},` + modernMeta + `}}`, HTTPDual},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := New(viewOf(b, olderPack()), nil).HTTPHandler(&HTTPOptions{Mode: c.mode})
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", c.version)
				req.Header.Set("Mcp-Method", c.method)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestAnswers: the output of a connection for one request ends with the
// request's answer, or with the refusal of its line (a null id).
func TestAnswers(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":8,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, false},
		{`not json`, false},
	} {
		if got := answers([]byte(c.line), []byte("7")); got != c.want {
			t.Errorf("answers(%s, 7) = %v, want %v", c.line, got, c.want)
		}
	}
}
