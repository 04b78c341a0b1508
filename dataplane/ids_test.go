package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oddIDs are request ids go-sdk would not return as sent, and some it
// would (they pass untouched).
var oddIDs = []string{
	`18446744073709551616`, `-9223372036854775809`, `1.5`, `1e3`, `-0`, `1.0`, `0.1e-2`,
	`"a\u0041"`, `"<tag>&"`, `"\ud800"`, `"é"`, `"tab\there"`, `"\u0000jid-1"`,
	`9223372036854775807`, `9007199254740993`, `9007199254740992`,
	`7`, `-3`, `"plain"`, `"with space"`,
}

// TestSDKKeepsID: what sdkKeepsID lets through, go-sdk gives back as it
// came.
func TestSDKKeepsID(t *testing.T) {
	for _, id := range oddIDs {
		// What go-sdk does to it: decode, encode.
		var v any
		if err := json.Unmarshal([]byte(id), &v); err != nil {
			t.Fatal(err)
		}
		if f, ok := v.(float64); ok {
			v = int64(f) // what jsonrpc.MakeID does with a number
		}
		back, _ := json.Marshal(v)
		// A false "no" only costs a substitution; a false "yes" would
		// change the id.
		if sdkKeepsID([]byte(id)) && string(back) != id {
			t.Errorf("sdkKeepsID(%s) = true, but go-sdk gives %s back", id, back)
		}
	}
}

// idHub serves one raw source "s__echo" (raw path) and a pack tool
// "typed" (go-sdk's path), both echoing "msg".
func idHub(t *testing.T) *junction.View {
	t.Helper()
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "s", &rawFake{tools: []string{"echo"}, raw: echoRaw}, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	p := junction.NewPack("p")
	junction.AddTool(p, &mcp.Tool{Name: "typed"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Msg string `json:"msg"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Msg}}}, nil, nil
	})
	if err := hub.Add(t.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// idRequests are, for each id, a ping, a raw-path call and a typed call.
func idRequests(id string) []string {
	return []string{
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping"}`, id),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"r"}}}`, id),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"typed","arguments":{"msg":"t"}}}`, id),
	}
}

// answerID returns the id of an answer as written.
func answerID(t *testing.T, line []byte) string {
	t.Helper()
	var id []byte
	if !rawjson.EachMember(bytes.TrimSpace(line), func(k, v []byte) {
		if string(k) == "id" {
			id = v
		}
	}) {
		t.Fatalf("answer %q is not a JSON object", line)
	}
	return string(id)
}

// TestIDsComeBackAsSentOverStdio: every id comes back byte for byte,
// whichever path of the plane answers (a ping, the raw path, a pack's
// typed tool).
func TestIDsComeBackAsSentOverStdio(t *testing.T) {
	v := idHub(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- New(v, nil).ServeStdio(t.Context(), inR, outW, nil)
		outW.Close()
	}()
	r := bufio.NewReader(outR)
	next := func() []byte {
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatalf("reading: %v", err)
			}
			if bytes.Contains(line, []byte(`"id"`)) {
				return line
			}
		}
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	next()
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	for _, id := range oddIDs {
		for _, req := range idRequests(id) {
			io.WriteString(inW, req+"\n")
			line := next()
			if got := answerID(t, line); got != id {
				t.Errorf("sent id %s, got %s back: %s", id, got, line)
			}
			if bytes.Contains(line, []byte(`"error"`)) {
				t.Errorf("%s: %s", req, line)
			}
		}
	}
	inW.Close()
	go io.Copy(io.Discard, r)
	if err := <-done; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
}

// TestIDsComeBackAsSentOverHTTP: the same over a stateful session, and
// from a client without one (2026-07-28).
func TestIDsComeBackAsSentOverHTTP(t *testing.T) {
	v := idHub(t)
	srv := httptestServer(t, New(v, nil).HTTPHandler(nil))
	sid := rawSession(t, srv.URL)
	for _, id := range oddIDs {
		for _, req := range idRequests(id) {
			resp := rawPost(t, srv.URL, sid, req)
			body, _ := io.ReadAll(resp.Body)
			if resp.Header.Get("Content-Length") != "" && resp.Header.Get("Content-Length") != fmt.Sprint(len(body)) {
				t.Errorf("Content-Length %s for %d bytes", resp.Header.Get("Content-Length"), len(body))
			}
			line := body
			if i := bytes.Index(body, []byte("data: {")); i >= 0 { // past the priming event's empty data
				line = body[i+len("data: "):]
				line = line[:bytes.IndexByte(line, '\n')]
			}
			if got := answerID(t, line); got != id {
				t.Errorf("sent id %s, got %s back: %s", id, got, body)
			}
		}
	}
}

// TestCancelKeepsOddIDsApart: two calls in flight whose ids go-sdk's
// decoder would both read as 2 stay two calls, and a
// notifications/cancelled naming one cancels that one only.
func TestCancelKeepsOddIDsApart(t *testing.T) {
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	started, cancelled := make(chan string, 2), make(chan string, 2)
	release := make(chan struct{})
	p := junction.NewPack("p")
	junction.AddTool(p, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
		N string `json:"n"`
	}) (*mcp.CallToolResult, any, error) {
		started <- in.N
		select {
		case <-ctx.Done():
			cancelled <- in.N
			return nil, nil, ctx.Err()
		case <-release:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.N}}}, nil, nil
		}
	})
	hub.Add(t.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixNever})
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	answers := make(chan []byte, 16)
	go func() {
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(answers)
				return
			}
			if bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"error"`)) {
				answers <- line
			}
		}
	}()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(v, nil).ServeStdio(ctx, inR, outW, nil); outW.Close() }()
	var releaseOnce sync.Once
	t.Cleanup(func() {
		releaseOnce.Do(func() { close(release) })
		stop()
		inW.Close()
		<-done
	})
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2.5,"method":"tools/call","params":{"name":"wait","arguments":{"n":"a"}}}`,
		`{"jsonrpc":"2.0","id":2.7,"method":"tools/call","params":{"name":"wait","arguments":{"n":"b"}}}`,
	} {
		io.WriteString(inW, line+"\n")
	}
	<-answers // initialize
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("two calls with ids 2.5 and 2.7 did not both start")
		}
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.7,"reason":"user"}}`+"\n")
	select {
	case n := <-cancelled:
		if n != "b" {
			t.Errorf("cancelling 2.7 cancelled call %s, want b", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not cancelled")
	}
	releaseOnce.Do(func() { close(release) })
	select {
	case line := <-answers:
		if !strings.Contains(string(line), `"id":2.5`) || !strings.Contains(string(line), `"text":"a"`) {
			t.Errorf("answer to the call not cancelled = %s", line)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the call not cancelled")
	}
}

func TestReplaceMember(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1.5,"method":"x"}`, `{"jsonrpc":"2.0","id":"ID","method":"x"}`},
		{` { "id" : "a\"b" , "x":{"id":2}} `, ` { "id" : "ID" , "x":{"id":2}} `},
		{`{"x":{"id":2}}`, `{"x":{"id":2}}`},
	} {
		if got := string(replaceMember([]byte(tc.in), "id", []byte(`"ID"`))); got != tc.want {
			t.Errorf("replaceMember(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func httptestServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
