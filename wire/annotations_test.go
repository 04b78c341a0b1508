package wire

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	junction "github.com/junction-mcp/junction"
)

// carried decodes a tools/list result as go-sdk's client does and
// returns each tool's carried annotations ("" for none).
func carried(t *testing.T, result []byte) map[string]string {
	t.Helper()
	var r mcp.ListToolsResult
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("go-sdk cannot decode %s: %v", result, err)
	}
	out := make(map[string]string)
	for _, tool := range r.Tools {
		s, _ := tool.Meta[junction.MetaAnnotations].(string)
		out[tool.Name] = s
	}
	return out
}

func TestKeepAnnotations(t *testing.T) {
	t.Parallel()
	in := `{"tools":[
		{"name":"partial","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true, "openWorldHint":false}},
		{"name":"vendor","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true,"x-vendor":{"z":1,"a":"<b>"}},"_meta":{"own":"kept"}},
		{"name":"sdk","inputSchema":{"type":"object"},"annotations":{"idempotentHint":false,"readOnlyHint":true}},
		{"name":"none","inputSchema":{"type":"object"}}
	],"nextCursor":"c"}`
	out, n := KeepAnnotations(json.RawMessage(in))
	if n != 2 {
		t.Errorf("marked %d tools, want 2 (partial, vendor)", n)
	}
	got := carried(t, out)
	want := map[string]string{
		"partial": `{"readOnlyHint":true,"openWorldHint":false}`,
		"vendor":  `{"destructiveHint":true,"x-vendor":{"z":1,"a":"<b>"}}`,
		"sdk":     "", "none": "",
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s carries %q, want %q", name, got[name], w)
		}
	}
	var r struct {
		NextCursor string `json:"nextCursor"`
		Tools      []struct {
			Name string         `json:"name"`
			Meta map[string]any `json:"_meta"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.NextCursor != "c" || r.Tools[1].Meta["own"] != "kept" {
		t.Errorf("the rest of the result changed: %s (%v)", out, err)
	}

	for _, same := range []string{`{"tools":[{"name":"a","annotations":{"idempotentHint":false,"readOnlyHint":false}}]}`, `{"content":[]}`, `not json`, `{"tools":{"annotations":1}}`,
		`{"tools":[{"name":"odd","annotations":{"readOnlyHint":true},"_meta":"not an object"}]}`} {
		if out, n := KeepAnnotations(json.RawMessage(same)); n != 0 || string(out) != same {
			t.Errorf("KeepAnnotations(%s) = %s, %d; want it unchanged", same, out, n)
		}
	}
}

// TestContentTransportKeepsListAnnotations: an HTTP server's answer to a
// tools/list, in a JSON body or an event stream, carries its tools'
// annotations; an answer to another request is left as it is.
func TestContentTransportKeepsListAnnotations(t *testing.T) {
	t.Parallel()
	const result = `{"tools":[{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`
	const response = `{"jsonrpc":"2.0","id":1,"result":` + result + `}`
	for _, ct := range []string{"application/json", "text/event-stream"} {
		for _, method := range []string{"tools/list", "prompts/list"} {
			base := roundTripFunc(func(*http.Request) (*http.Response, error) {
				body := response
				if ct == "text/event-stream" {
					body = "event: message\ndata: " + response + "\n\n"
				}
				return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(strings.NewReader(body))}, nil
			})
			req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&ContentTransport{Base: base}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct == "text/event-stream" {
				b = []byte(strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(string(b), "event: message\n"), "data: "), "\n\n"))
			}
			var msg struct{ Result json.RawMessage }
			if err := json.Unmarshal(b, &msg); err != nil {
				t.Fatalf("%s %s: %v: %s", ct, method, err, b)
			}
			want := ""
			if method == "tools/list" {
				want = `{"readOnlyHint":true}`
			}
			if got := carried(t, msg.Result)["t"]; got != want {
				t.Errorf("%s answer to %s carries %q, want %q", ct, method, got, want)
			}
		}
	}
}

// TestIsToolsListHeader: a request at 2026-07-28 names its method in the
// Mcp-Method header, which decides without reading the body again.
func TestIsToolsListHeader(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		header, body string
		want         bool
	}{
		{"tools/list", "", true},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
		{"", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true},
	} {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.header != "" {
			req.Header.Set("Mcp-Method", c.header)
		}
		if got := isToolsList(req); got != c.want {
			t.Errorf("isToolsList(Mcp-Method %q, body %q) = %v, want %v", c.header, c.body, got, c.want)
		}
	}
}
