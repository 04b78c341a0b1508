package echo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

type httpAnswer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url string, header map[string]string, body string) httpAnswer {
	t.Helper()
	a, err := doReq(t.Context(), method, url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// doReq sends one request; header values replace the defaults (JSON in,
// JSON and SSE accepted), an empty one removes the header.
func doReq(ctx context.Context, method, url string, header map[string]string, body string) (httpAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return httpAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return httpAnswer{}, err
	}
	return httpAnswer{resp.StatusCode, resp.Header, string(b)}, nil
}

func newHTTPServer(t *testing.T, modern bool) string {
	ts := httptest.NewServer((&Server{Modern: modern}).HTTPHandler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// check fails unless a has the status and its body is body exactly.
func check(t *testing.T, what string, a httpAnswer, status int, body string) {
	t.Helper()
	if a.status != status || a.body != body {
		t.Errorf("%s = %d %q\nwant %d %q", what, a.status, a.body, status, body)
	}
	if body != "" && status != http.StatusAccepted {
		if ct := a.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", what, ct)
		}
		if !json.Valid([]byte(a.body)) {
			t.Errorf("%s: body is not JSON: %s", what, a.body)
		}
	}
}

// TestHTTPSessions: a client of 2025-11-25 gets a session from initialize
// and must use it; DELETE ends it.
func TestHTTPSessions(t *testing.T) {
	for _, modern := range []bool{false, true} {
		url := newHTTPServer(t, modern)
		init := do(t, "POST", url, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		check(t, "initialize", init, 200, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`)
		sid := init.header.Get("Mcp-Session-Id")
		if len(sid) != 32 {
			t.Fatalf("initialize: Mcp-Session-Id %q, want 32 hex digits", sid)
		}
		other := do(t, "POST", url, nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
		if osid := other.header.Get("Mcp-Session-Id"); osid == "" || osid == sid {
			t.Errorf("second initialize: session %q, want a new one (first %q)", osid, sid)
		}
		s := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
		check(t, "initialized", do(t, "POST", url, s, `{"jsonrpc":"2.0","method":"notifications/initialized"}`), 202, "")
		check(t, "call", do(t, "POST", url, s, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi \"x\""}}}`),
			200, `{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi \"x\""}]}}`)
		big := do(t, "POST", url, s, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"size":1048576}}}`)
		if want := `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}}`; big.status != 200 || big.body != want {
			t.Errorf("1 MiB call = %d, %d bytes, want 200, %d bytes", big.status, len(big.body), len(want))
		}
		check(t, "unknown tool", do(t, "POST", url, s, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`),
			200, `{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"unknown tool \"nope\""}}`)
		check(t, "tools/list", do(t, "POST", url, s, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`),
			200, `{"jsonrpc":"2.0","id":5,"result":`+toolList+`}`)
		check(t, "no session", do(t, "POST", url, nil, `{"jsonrpc":"2.0","id":6,"method":"ping"}`),
			400, `{"jsonrpc":"2.0","id":6,"error":{"code":-32600,"message":"missing Mcp-Session-Id"}}`)
		check(t, "unknown session", do(t, "POST", url, map[string]string{"Mcp-Session-Id": "nope"}, `{"jsonrpc":"2.0","id":7,"method":"ping"}`),
			404, `{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":"session not found"}}`)
		check(t, "unknown version", do(t, "POST", url, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2024-01-01"}, `{"jsonrpc":"2.0","id":8,"method":"ping"}`),
			400, `{"jsonrpc":"2.0","id":8,"error":{"code":-32600,"message":"unsupported Mcp-Protocol-Version \"2024-01-01\""}}`)
		check(t, "initialize on a session", do(t, "POST", url, s, `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}`),
			400, `{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"initialize on a session"}}`)
		if a := do(t, "DELETE", url, s, ""); a.status != http.StatusNoContent {
			t.Errorf("DELETE = %d %s, want 204", a.status, a.body)
		}
		check(t, "call after DELETE", do(t, "POST", url, s, `{"jsonrpc":"2.0","id":10,"method":"ping"}`),
			404, `{"jsonrpc":"2.0","id":10,"error":{"code":-32001,"message":"session not found"}}`)
		if a := do(t, "DELETE", url, s, ""); a.status != http.StatusNotFound {
			t.Errorf("second DELETE = %d, want 404", a.status)
		}
	}
}

// TestHTTPErrors: what is not a JSON-RPC POST the server takes.
func TestHTTPErrors(t *testing.T) {
	url := newHTTPServer(t, true)
	if a := do(t, "GET", url, map[string]string{"Accept": "text/event-stream"}, ""); a.status != http.StatusMethodNotAllowed || a.header.Get("Allow") != "POST, DELETE" {
		t.Errorf("GET = %d (Allow %q), want 405", a.status, a.header.Get("Allow"))
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	if a := do(t, "POST", url, map[string]string{"Content-Type": "text/plain"}, init); a.status != http.StatusUnsupportedMediaType {
		t.Errorf("POST text/plain = %d, want 415", a.status)
	}
	if a := do(t, "POST", url, map[string]string{"Accept": "text/event-stream"}, init); a.status != http.StatusNotAcceptable {
		t.Errorf("POST accepting SSE only = %d, want 406", a.status)
	}
	if a := do(t, "POST", url, map[string]string{"Accept": "*/*"}, init); a.status != 200 {
		t.Errorf("POST accepting */* = %d, want 200", a.status)
	}
	if a := do(t, "DELETE", url, nil, ""); a.status != http.StatusBadRequest {
		t.Errorf("DELETE without a session = %d, want 400", a.status)
	}
	parseErr := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`
	check(t, "not JSON", do(t, "POST", url, nil, `{"jsonrpc":`), 400, parseErr)
	check(t, "a batch", do(t, "POST", url, nil, `[`+init+`]`), 400, parseErr)
}

// TestHTTPModern: a client of 2026-07-28 is served without a session,
// and must say in headers and _meta what that revision asks.
func TestHTTPModern(t *testing.T) {
	url := newHTTPServer(t, true)
	h := func(method, name string) map[string]string {
		return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name}
	}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi"},` + modernMeta + `}}`
	a := do(t, "POST", url, h("tools/call", "echo"), call)
	check(t, "call", a, 200, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"resultType":"complete",`+serverInfo+`}}`)
	if sid := a.header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("call: Mcp-Session-Id %q, want none", sid)
	}
	check(t, "server/discover", do(t, "POST", url, h("server/discover", ""), `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{`+modernMeta+`}}`),
		200, `{"jsonrpc":"2.0","id":2,"result":{"supportedVersions":`+supported+`,"capabilities":{"tools":{}},"resultType":"complete",`+serverInfo+`}}`)
	check(t, "notification", do(t, "POST", url, h("notifications/cancelled", ""), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`), 202, "")
	for _, tc := range []struct {
		name   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		{"wrong Mcp-Name", h("tools/call", "other"), call, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Mcp-Name \"other\" does not match name \"echo\""}}`},
		{"no Mcp-Method", h("", "echo"), call, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Mcp-Method \"\" does not match method \"tools/call\""}}`},
		{"no _meta", h("tools/call", "echo"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"hi"}}}`, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"_meta protocolVersion \"\" does not match Mcp-Protocol-Version \"2026-07-28\""}}`},
		{"no capabilities", h("tools/call", "echo"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, 200,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"missing or invalid _meta field \"io.modelcontextprotocol/clientCapabilities\""}}`},
		{"a session", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo", "Mcp-Session-Id": "x"}, call, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no sessions at protocol 2026-07-28"}}`},
		{"unknown revision", map[string]string{"Mcp-Protocol-Version": "2099-01-01"}, call, 400,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported protocol version \"2099-01-01\""}}`},
	} {
		check(t, tc.name, do(t, "POST", url, tc.header, tc.body), tc.status, tc.want)
	}
	// A server of 2025-11-25 refuses the revision.
	old := newHTTPServer(t, false)
	check(t, "2026-07-28 call to a 2025-11-25 server", do(t, "POST", old, h("tools/call", "echo"), call),
		400, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported protocol version \"2026-07-28\""}}`)
}

// TestHTTPConcurrent: many sessions and stateless calls at once, each
// answered with its own id and text.
func TestHTTPConcurrent(t *testing.T) {
	url := newHTTPServer(t, true)
	errc := make(chan string, 64)
	ctx := t.Context()
	for i := range 32 {
		go func() {
			var hd map[string]string
			meta := ""
			if i%2 == 0 {
				a, err := doReq(ctx, "POST", url, nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)
				if err != nil {
					errc <- err.Error()
					return
				}
				hd = map[string]string{"Mcp-Session-Id": a.header.Get("Mcp-Session-Id")}
			} else {
				hd = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
				meta = "," + modernMeta
			}
			for j := range 20 {
				msg := strings.Repeat(string(rune('a'+i%26)), j+1)
				id := strconv.Itoa(i*100 + j)
				a, err := doReq(ctx, "POST", url, hd, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"echo","arguments":{"msg":"`+msg+`"}`+meta+`}}`)
				if err != nil {
					errc <- err.Error()
					return
				}
				if a.status != 200 || !strings.HasPrefix(a.body, `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"`+msg+`"}]`) {
					errc <- a.body
					return
				}
			}
			errc <- ""
		}()
	}
	for range 32 {
		if e := <-errc; e != "" {
			t.Errorf("concurrent call answered %s", e)
		}
	}
}
