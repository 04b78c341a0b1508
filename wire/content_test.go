package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

func TestSSEFixer(t *testing.T) {
	t.Parallel()
	in := ": keepalive\n\n" +
		"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\n" +
		"data: \"result\":{\"content\":[{\"type\":\"widget\"}]}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n" +
		"data: partial"
	f := &sseFixer{body: io.NopCloser(strings.NewReader(in)), r: bufio.NewReader(strings.NewReader(in)), warn: func(int) {}}
	out, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	want := ": keepalive\n\n" +
		"event: message\nid: 1\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"content\":[{\"_meta\":{\"junction/original\":{\"type\":\"widget\"}},\"text\":\"[unsupported content type \\\"widget\\\"]\",\"type\":\"text\"}]}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n" +
		"data: partial"
	if string(out) != want {
		t.Errorf("sseFixer output:\n%s\nwant:\n%s", out, want)
	}
}

// TestContentTransportNamesStream: a notification is observed with the
// progress token of the request whose event stream carried it: a POSTed
// call's token, or "" for a GET or a request without one.
func TestContentTransportNamesStream(t *testing.T) {
	t.Parallel()
	const event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n"
	base := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(event))}, nil
	})
	var got []string
	ct := &ContentTransport{Base: base, Observe: func(stream, method string, _ json.RawMessage) {
		got = append(got, stream+" "+method)
	}}
	for _, c := range []struct{ method, body string }{
		{http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":"junction-7"}}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":7}}}`},
		{http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t"}}`},
		{http.MethodGet, ""},
	} {
		req, err := http.NewRequest(c.method, "http://127.0.0.1/mcp", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ct.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	want := []string{"junction-7 notifications/message", " notifications/message", " notifications/message", " notifications/message"}
	if !slices.Equal(got, want) {
		t.Errorf("observed %q, want %q", got, want)
	}
}

func TestSanitizeMessageBatch(t *testing.T) {
	t.Parallel()
	in := `[{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"x"}]}},{"jsonrpc":"2.0","method":"m","params":{"content":[{"type":"y"}]}}]`
	out, n := sanitizeMessage([]byte(in))
	if n != 1 || !strings.Contains(string(out), `unsupported content type \"x\"`) || !strings.Contains(string(out), `{"type":"y"}`) {
		t.Errorf("sanitizeMessage(batch) = %s, %d; want only the response fixed", out, n)
	}
}

func FuzzSSEFixer(f *testing.F) {
	f.Add("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"w\"}]}}\n\n")
	f.Add(": c\r\n\r\ndata: x\r\n\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		fx := &sseFixer{body: io.NopCloser(strings.NewReader(in)), r: bufio.NewReader(strings.NewReader(in)), warn: func(int) {}}
		out, err := io.ReadAll(fx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(in, `"content"`) && string(out) != in {
			t.Fatalf("sseFixer changed a stream with nothing to fix:\n%q\n%q", in, out)
		}
	})
}

// TestStripServerFields: a result loses the upstream's serverInfo (and an
// _meta it leaves empty) and a "resultType" of "complete", and keeps
// everything else in its order and its white space; what is not an
// object is kept as it is.
func TestStripServerFields(t *testing.T) {
	const info = `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`
	for _, tc := range []struct{ in, want string }{
		{`{"content":[]}`, `{"content":[]}`},
		{`{"content":[],"resultType":"complete","_meta":{` + info + `}}`, `{"content":[]}`},
		{`{"_meta":{` + info + `},"content":[],"resultType":"complete"}`, `{"content":[]}`},
		{`{"_meta":{` + info + `,"k":1},"content":[]}`, `{"_meta":{"k":1},"content":[]}`},
		{`{"_meta":{"a":[1],` + info + `,"b":{"c":2}},"isError":true}`, `{"_meta":{"a":[1],"b":{"c":2}},"isError":true}`},
		{`{"resultType":"input_required","_meta":{` + info + `}}`, `{"resultType":"input_required"}`},
		{`{"content":[], "_meta" : "x", "resultType":"complete"}`, `{"content":[], "_meta" : "x"}`},
		{"{ \"resultType\" : \"complete\" ,\n \"content\":[] , \"x\":1 }", "{\n \"content\":[] , \"x\":1 }"},
		{`{"_meta":{}, "resultType":"complete"}`, `{"_meta":{}}`},
		{`{"resultType":"complete"}`, `{}`},
		{`{"_meta":{` + info + `},"resultType":"complete"}`, `{}`},
		{`{"_meta":{"k":1,` + info + `}}`, `{"_meta":{"k":1}}`},
		{`{"_meta":[` + info + `],"resultType":"complete","x":1}`, `{"_meta":[` + info + `],"x":1}`},
		{`{"resultType":"complete","_meta":{` + info, `{"resultType":"complete","_meta":{` + info},
	} {
		if got := string(StripServerFields([]byte(tc.in))); got != tc.want {
			t.Errorf("StripServerFields(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// TestStripServerFieldsAllocs: StripServerFields runs on every result of
// a 2026-07-28 server: one allocation, the result's. It runs without the
// race detector (see skipAllocsUnderRace).
func TestStripServerFieldsAllocs(t *testing.T) {
	skipAllocsUnderRace(t)
	const info = `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}`
	res := []byte(`{"content":[{"type":"text","text":"hi"}],"resultType":"complete","_meta":{"k":1,` + info + `}}`)
	if n := testing.AllocsPerRun(100, func() { StripServerFields(res) }); n > 1 {
		t.Errorf("StripServerFields: %v allocations, want 1", n)
	}
}

// roundTripFunc is an http.RoundTripper in a func.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func TestSanitizeContent(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"content":[{"type":"text","text":"a"},{"type":"widget","x":1}],"isError":true}`)
	out, n := SanitizeContent(in)
	if n != 1 {
		t.Fatalf("sanitizeContent replaced %d blocks, want 1", n)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("go-sdk cannot decode the sanitized result: %v", err)
	}
	if !res.IsError || len(res.Content) != 2 || res.Content[1].(*mcp.TextContent).Text != `[unsupported content type "widget"]` {
		t.Errorf("sanitized result = %s", out)
	}
	ok := json.RawMessage(`{"content":[{"type":"image","data":"","mimeType":"image/png"}]}`)
	if out, n := SanitizeContent(ok); n != 0 || string(out) != string(ok) {
		t.Errorf("sanitizeContent changed a valid result: %s", out)
	}
}

// FuzzUnknownTypes checks that the quick scan never clears a result the
// full check would rewrite.
func FuzzUnknownTypes(f *testing.F) {
	for _, s := range []string{`{"content":[{"type":"text","text":"x"}]}`, `{"content":[{"type":"widget"}]}`,
		`{"content":[{"type" : "image","data":"","mimeType":"image/png"},{"text":"\"type\":\"x\"","type":"text"}]}`,
		`{"content":[{"type":1}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if unknownTypes(b) {
			return
		}
		if _, n := sanitizeFull(b); n > 0 {
			t.Fatalf("unknownTypes(%q) = false, but %d blocks need rewriting", b, n)
		}
	})
}

// checkFacts checks facts, which a reader learned of res, a result
// object, against res read member by member.
func checkFacts(t *testing.T, res []byte, facts junction.ResultFacts) {
	t.Helper()
	if facts&junction.ResultRead == 0 {
		return // nothing said
	}
	isError, seen, untyped := false, false, true
	if rawjson.Object(res, func(key, val []byte) {
		if !seen && string(key) == "isError" {
			seen, isError = true, string(val) == "true"
		}
		if string(key) == "_meta" || string(key) == "resultType" || bytes.IndexByte(key, '\\') >= 0 {
			untyped = false
		}
	}) < 0 {
		t.Fatalf("facts %b said of %q, which is not an object", facts, res)
	}
	if got := facts.Has(junction.ResultIsError); got != isError {
		t.Fatalf("facts of %q say isError %v, the result %v", res, got, isError)
	}
	if got := facts.Has(junction.ResultUntyped); got && !untyped {
		t.Fatalf("facts of %q say it has no _meta or resultType member; it has", res)
	}
}

// FuzzResultAt checks ResultAt against what it stands for: the end
// rawjson.SkipValue finds, the facts it learned (checkFacts), and, when
// it says a result is clean, a SanitizeContent that leaves the result as
// it is.
func FuzzResultAt(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}]}`))
	f.Add([]byte(`{"content":[{"type":"widget","x":1}],"isError":false}`))
	f.Add([]byte(`{"content":[{"TYPE":"text","text":"hi"}],"structuredContent":{"a":[1,2]}}`))
	f.Add([]byte(`{"content":[1 2]}`))
	f.Add([]byte(`{"conte\u006et":[{"type":"widget"}]}`))
	f.Add([]byte(`[{"content":[]}]`))
	f.Add([]byte(`{"content":[],"RESULTtype":"input_required"}`))
	f.Add([]byte(`{"resultType":"complete","content":[],"RESULTTYPE":"input_required"}`))
	f.Add([]byte(`{"resultType":"complete","content":[],"resulttype":"complete"}`))
	f.Add([]byte(`{"resultType":"complete","resultType":"input_required"}`))
	f.Add([]byte(`{"content":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"x":1}`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}x`))
	f.Add([]byte(`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"more":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		i := rawjson.SkipSpace(b, 0) // where a walk hands a value over
		end, shape := ResultAt(b, i, nil)
		if want := rawjson.SkipValue(b, i); end != want {
			t.Fatalf("ResultAt(%q, %d) ends at %d, SkipValue at %d", b, i, end, want)
		}
		// A reader that remembers the server's _meta reads the same:
		// one that remembers another server's, and one that has just
		// read this result (and remembers its _meta, if it could).
		for _, seen := range []*ServerMeta{{last: []byte(`{"io.modelcontextprotocol/serverInfo":{"name":"up"}}`)}, {}} {
			for range 2 {
				if e, sh := ResultAt(b, i, seen); e != end || sh != shape {
					t.Fatalf("ResultAt(%q, %d) remembering %q = %d, %+v, want %d, %+v", b, i, seen.last, e, sh, end, shape)
				}
			}
		}
		if end >= 0 && !shape.MayAskInput() {
			// No member encoding/json would take for a resultType, or
			// only ones that say "complete".
			var v struct {
				ResultType *string `json:"resultType"`
			}
			if json.Unmarshal(b[i:end], &v) == nil && v.ResultType != nil && *v.ResultType != "complete" {
				t.Fatalf("ResultAt(%q) says it cannot ask for input, and it has resultType %q", b, *v.ResultType)
			}
		}
		if end >= 0 {
			checkFacts(t, b[i:end], shape.Facts(false))
		}
		if end < 0 || shape.Unknown() {
			return
		}
		if out, n := SanitizeContent(b[i:end]); n != 0 || !bytes.Equal(out, b[i:end]) {
			t.Fatalf("ResultAt(%q) says clean, SanitizeContent replaced %d blocks: %s", b, n, out)
		}
	})
}
