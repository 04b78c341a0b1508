package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// TestHTTPSessionGETStream: a session's GET stream gets what the session
// sends its host outside a request (here a list change), a second GET
// while one is open gets go-sdk's 409, and a GET of a session that does
// not exist 404; the stream ends when the host deletes the session.
func TestHTTPSessionGETStream(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: echoRaw}
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	if err := hub.Add(t.Context(), "s", f, nil); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptestServer(t, New(v, nil).HTTPHandler(nil))
	sid := rawSession(t, srv.URL)

	get := func() *http.Response {
		resp, err := http.DefaultClient.Do(request(t, http.MethodGet, srv.URL, "", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	stream := get()
	if stream.StatusCode != http.StatusOK || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %s %q", stream.Status, stream.Header.Get("Content-Type"))
	}
	if second := get(); second.StatusCode != http.StatusConflict {
		t.Errorf("a second GET while one is open: %s, want 409", second.Status)
	}
	resp, err := http.DefaultClient.Do(request(t, http.MethodGet, srv.URL, "", "Mcp-Session-Id", "no-such-session"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of an unknown session: %s, want 404", resp.Status)
	}

	// A source that comes while the stream is open changes the tool
	// list: the host hears of it there.
	if err := hub.Add(t.Context(), "t", &rawFake{tools: []string{"more"}, raw: echoRaw}, nil); err != nil {
		t.Fatal(err)
	}
	er := newEventReader(stream.Body)
	ev := er.next(t)
	if !strings.Contains(ev.data, `"notifications/tools/list_changed"`) {
		t.Errorf("the GET stream's event: %+v; want the list change", ev)
	}

	del, err := http.DefaultClient.Do(request(t, http.MethodDelete, srv.URL, "", "Mcp-Session-Id", sid))
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if del.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s, want 204", del.Status)
	}
	if ev, ok := er.read(); ok {
		t.Errorf("after DELETE the GET stream got %+v; want its end", ev)
	}
}

// TestHTTPSessionRefusals: what go-sdk's stateful handler refuses before
// its session reads a message is refused in its words and status, and a
// 2025-03-26 client's batch gets -32600 as over stdio (docs/deviations.md).
func TestHTTPSessionRefusals(t *testing.T) {
	srv := startHTTPFast(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}, HTTPOptions{})
	sid := rawSession(t, srv.URL)
	for _, c := range []struct {
		name, body string
		hdrs       []string
		status     int
		want       string
	}{
		{"batch 2025-11-25", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, []string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"},
			400, "JSON-RPC batching is not supported in 2025-06-18 and later (request version: 2025-11-25)"},
		{"batch 2025-03-26", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, []string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-03-26"},
			400, `"code":-32600,"message":"JSON-RPC batches are not supported"`},
		{"empty batch", `[]`, []string{"Mcp-Session-Id", sid}, 400, "malformed payload: empty batch"},
		{"not a message", `{"hello":"world"}`, []string{"Mcp-Session-Id", sid}, 400, `malformed payload: invalid message version tag`},
		{"Last-Event-ID on a POST", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Mcp-Session-Id", sid, "Last-Event-ID", "x_1"},
			400, "can't send Last-Event-ID for POST request"},
		{"unknown session", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Mcp-Session-Id", "nope"}, 404, "session not found"},
		{"unsupported version", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "1999-01-01"},
			400, "Bad Request: Unsupported protocol version"},
		{"a request of 2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			[]string{"Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25"}, 400, `"code":-32022`},
		{"an id in use", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, []string{"Mcp-Session-Id", sid}, 200, `"result":{}`},
	} {
		resp := postWith(t, srv.URL, c.body, c.hdrs...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %s %s; want %d and %q", c.name, resp.Status, bytes.TrimSpace(b), c.status, c.want)
		}
	}
}

// echoCallServer starts a plane over HTTP in mode with the echo tool
// (s__echo), and returns it with the headers of a 2025-11-25 host's
// calls: with a session's id, unless mode is stateless.
func echoCallServer(t *testing.T, mode HTTPMode) (*httptest.Server, []string) {
	t.Helper()
	srv := startHTTPFast(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}, HTTPOptions{Mode: mode})
	hdrs := []string{"Mcp-Protocol-Version", "2025-11-25"}
	if mode != HTTPStateless {
		hdrs = append(hdrs, "Mcp-Session-Id", rawSession(t, srv.URL))
	}
	return srv, hdrs
}

// TestHTTPSessionCallBodies: a tools/call's body is read once, before the
// session sees it (checkJSONBody), and that reading is the body's check
// as JSON: one spread over lines is served, one followed by a byte that
// is not JSON white space is refused as not JSON, and a protocol version
// is looked for in the call's _meta, not in its arguments.
func TestHTTPSessionCallBodies(t *testing.T) {
	for _, mode := range []HTTPMode{HTTPDual, HTTPStateless} {
		srv, hdrs := echoCallServer(t, mode)
		for _, c := range []struct {
			name, body string
			status     int
			want       string
		}{
			{"over lines", "{\"jsonrpc\":\"2.0\",\r\n \"id\":2,\n \"method\":\"tools/call\",\n \"params\":{\"name\":\"s__echo\",\n  \"arguments\":{\"msg\":\n \"hi\"}}}\n",
				200, `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`},
			{"a form feed after it", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}` + "\f",
				400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: body is not valid JSON"}}`},
			{"a no-break space after it", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}` + "\u00a0",
				400, `"code":-32700`},
			{"a version in its arguments", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"io.modelcontextprotocol/protocolVersion"}}}`,
				200, `"text":"io.modelcontextprotocol/protocolVersion"`},
		} {
			resp := postWith(t, srv.URL, c.body, hdrs...)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status || !strings.Contains(string(b), c.want) {
				t.Errorf("mode %v, %s: %s %s; want %d and %s", mode, c.name, resp.Status, bytes.TrimSpace(b), c.status, c.want)
			}
		}
	}
	// On a session, a call of 2026-07-28 is refused as such: its _meta is
	// read for the version.
	srv := startHTTPFast(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}, HTTPOptions{})
	resp := postWith(t, srv.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		"Mcp-Session-Id", rawSession(t, srv.URL), "Mcp-Protocol-Version", "2025-11-25")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"id":5,"error":{"code":-32022`) {
		t.Errorf("a call of 2026-07-28 on a session: %s %s; want 400 and -32022", resp.Status, bytes.TrimSpace(b))
	}
}

// TestHTTPAnswerLength: a JSON answer, short or longer than what
// net/http holds back (heldLength), goes with its Content-Length and is
// not chunked, with a session and without one.
func TestHTTPAnswerLength(t *testing.T) {
	for _, mode := range []HTTPMode{HTTPDual, HTTPStateless} {
		srv, hdrs := echoCallServer(t, mode)
		for i, msg := range []string{"hi", strings.Repeat("x", heldLength-80), strings.Repeat("x", heldLength), strings.Repeat("x", 3*heldLength)} {
			resp := postWith(t, srv.URL, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":%q}}}`, i+10, msg), hdrs...)
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !strings.Contains(string(b), msg) || resp.ContentLength != int64(len(b)) || len(resp.TransferEncoding) > 0 {
				t.Errorf("mode %v, a result of %d bytes: %s, Content-Length %d, Transfer-Encoding %q, %d bytes; want 200, not chunked, the body's length",
					mode, len(msg), resp.Status, resp.ContentLength, resp.TransferEncoding, len(b))
			}
		}
	}
}

// TestHTTPSessionWithoutInitialize: a POST without a session makes one,
// as go-sdk's handler does, which ends with the POST unless the host
// initialized there: its request is refused as before initialize, and no
// session id comes back.
func TestHTTPSessionWithoutInitialize(t *testing.T) {
	p := New(viewOf(t, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil)
	srv := httptestServer(t, p.HTTPHandler(nil))
	resp := rawPost(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), `"code":-32600`) || !strings.Contains(string(b), "before initialize") || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("a request without a session: %s %s, session %q; want -32600 before initialize, no session", resp.Status, b, resp.Header.Get("Mcp-Session-Id"))
	}
	waitFor(t, "the session to end", func() bool { return len(liveSessions(p)) == 0 })
}

// TestHTTPSessionSlowHostHoldsNoOne: a host that reads nothing of its
// GET stream does not hold up the session's other requests, nor another
// session's: what the router is given queues for the stream's own
// goroutine.
func TestHTTPSessionSlowHostHoldsNoOne(t *testing.T) {
	f := &rawFake{tools: []string{"echo"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		// Each call floods the session with log messages outside any
		// request: they go to the GET stream, which nobody reads.
		for range 200 {
			junction.HostSession(ctx).Log(context.Background(), &mcp.LoggingMessageParams{Level: "error", Data: strings.Repeat("x", 4096)})
		}
		return echoRaw(ctx, name, params)
	}}
	srv := startHTTPFast(t, f, HTTPOptions{})
	sid := rawSession(t, srv.URL)
	rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":"l","method":"logging/setLevel","params":{"level":"debug"}}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := request(t, http.MethodGet, srv.URL, "", "Mcp-Session-Id", sid)
	req = req.WithContext(ctx)
	stream, err := http.DefaultClient.Do(req) // never read
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	other := rawSession(t, srv.URL)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 5 {
			for _, s := range []string{sid, other} {
				resp := rawPost(t, srv.URL, s, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i+2)+`,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hi"}}}`)
				io.Copy(io.Discard, resp.Body)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls were held up by a host that does not read its GET stream")
	}
}

// FuzzLineHead: what lineHead reads from the start of a line, when it
// says it can tell, is what the whole line says: an answer (a result or
// an error, no method) and its id.
func FuzzLineHead(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a\"b","error":{"code":-32600,"message":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,
		`{"jsonrpc":"2.0","id":"jh-1","method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`{"result":{},"id":7}`,
		` { "id" : 12 , "result" : [ ] } `,
	} {
		f.Add([]byte(s), 5)
	}
	f.Fuzz(func(t *testing.T, line []byte, cut int) {
		if !json.Valid(line) || bytes.TrimSpace(line)[0] != '{' {
			return
		}
		var wantID []byte
		method, result := false, false
		// (A line with both a method and a result is no message the plane
		// writes; lineHead may tell it by either.)
		rawjson.Object(bytes.TrimSpace(line), func(key, val []byte) {
			switch string(key) {
			case "id":
				wantID = val
			case "method":
				method = true
			case "result", "error":
				result = true
			}
		})
		for _, n := range []int{len(line), max(0, min(cut, len(line)))} {
			id, answer, ok := lineHead(line[:n])
			if !ok {
				if n == len(line) {
					t.Fatalf("lineHead(%q) cannot tell a whole line", line)
				}
				continue
			}
			if method && result {
				continue
			}
			if answer && (method || !result || !bytes.Equal(id, wantID)) || !answer && n == len(line) && !method && result && wantID != nil {
				t.Fatalf("lineHead(%q) = answer %s; the line has method %v, result %v, id %s", line[:n], id, method, result, wantID)
			}
		}
	})
}

// BenchmarkSessionWake: the request that wakes a parked session (the
// session made anew from its initialize, then the request answered),
// against one on a live session.
func BenchmarkSessionWake(b *testing.B) {
	for _, park := range []bool{true, false} {
		name := "live"
		if park {
			name = "parked"
		}
		b.Run(name, func(b *testing.B) {
			o := &HTTPOptions{SessionPark: -1}
			if park {
				o.SessionPark = time.Millisecond
			}
			p := New(viewOf(b, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil)
			srv := httptestServer(b, p.HTTPHandler(o))
			sid := benchSession(b, srv.URL)
			ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			for b.Loop() {
				if park {
					b.StopTimer()
					waitFor(b, "the session to park", func() bool { return p.ParkedSessions() == 1 })
					b.StartTimer()
				}
				if resp := benchPost(b, srv.URL, sid, ping); resp.StatusCode != http.StatusOK {
					b.Fatalf("ping: %s", resp.Status)
				}
			}
		})
	}
}

// benchSession initializes a session on url and returns its id.
func benchSession(b *testing.B, url string) string {
	b.Helper()
	sid := benchPost(b, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`).Header.Get("Mcp-Session-Id")
	benchPost(b, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}

// benchPost POSTs body on session sid ("": none) and reads the answer.
func benchPost(b *testing.B, url, sid, body string) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestHTTPSessionKeepAlive: with the hub's keep-alive set, a session is
// pinged on its GET stream and lives on while it answers; with no GET
// stream open the ping reaches nobody and the session ends, as go-sdk's
// failing ping ended its session.
func TestHTTPSessionKeepAlive(t *testing.T) {
	v := viewWith(t, &junction.Options{KeepAlive: 2 * time.Second}, &rawFake{tools: []string{"echo"}, raw: echoRaw})
	srv := httptestServer(t, New(v, nil).HTTPHandler(nil))
	sid := rawSession(t, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	req := request(t, http.MethodGet, srv.URL, "", "Mcp-Session-Id", sid).WithContext(ctx)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	ev := newEventReader(stream.Body).next(t)
	var ping struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal([]byte(ev.data), &ping) != nil || ping.Method != "ping" || ping.ID == nil {
		t.Fatalf("the GET stream's event: %+v; want a ping", ev)
	}
	if resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":`+string(ping.ID)+`,"result":{}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the ping's answer: %s, want 202", resp.Status)
	}
	if resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the answered ping: %s; want the session alive", resp.Status)
	}
	cancel() // no GET stream: the next ping reaches nobody
	waitFor(t, "the session to end", func() bool {
		resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusNotFound
	})
}

// BenchmarkHTTPSessionCall: a tools/call on a live session, through the
// plane's HTTP handler alone (no connection): what the front spends on a
// POST around its call.
func BenchmarkHTTPSessionCall(b *testing.B) {
	h := New(viewOf(b, &rawFake{tools: []string{"echo"}, raw: echoRaw}), nil).HTTPHandler(&HTTPOptions{SessionPark: -1})
	post := func(sid, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusAccepted {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
		return rec
	}
	sid := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header().Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__echo","arguments":{"msg":"hello"}}}`
	b.ReportAllocs()
	for b.Loop() {
		post(sid, call)
	}
}
