package dataplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// boundFake is a rawFake whose one tool, "bound", binds arguments to
// headers (x-mcp-header), one of them inside an object.
type boundFake struct{ *rawFake }

const boundToolSchema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"flag":{"type":"boolean","x-mcp-header":"Flag"},
	"where":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}},
	"note":{"type":"string"}}}`

func (f boundFake) Catalog(context.Context) (*junction.Catalog, error) {
	return &junction.Catalog{Tools: []*mcp.Tool{{Name: "bound", InputSchema: json.RawMessage(boundToolSchema)}}}, nil
}

// TestParamHeadersOnPlane: a 2026-07-28 call of a tool that binds
// arguments to headers takes the raw path, and its Mcp-Param-* headers
// are checked there as go-sdk's handler checks them: each case gets the
// same status and the same error from a plane that takes the call as from
// one that leaves every request to go-sdk (NoRaw).
func TestParamHeadersOnPlane(t *testing.T) {
	raw := &rawFake{raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"raw"}]}`), nil
	}}
	fastView := viewOf(t, boundFake{raw})
	sdkCalls := sdkCounted(fastView, func(m string) bool { return m == "tools/call" })
	fast := httptest.NewServer(New(fastView, nil).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(fast.Close)
	typed := &rawFake{}
	slow := httptest.NewServer(New(viewOf(t, boundFake{typed}), &Options{NoRaw: true}).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(slow.Close)

	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	for _, c := range []struct {
		name    string
		args    string // "" for none
		headers []string
		ok      bool // a result, not a header mismatch
	}{
		{"all agree", `{"region":"eu-west","count":3,"flag":true,"where":{"zone":"b"},"note":"n"}`,
			[]string{"Mcp-Param-Region", "eu-west", "Mcp-Param-Count", "3", "Mcp-Param-Flag", "true", "Mcp-Param-Zone", "b"}, true},
		{"no bound argument, no header", `{"note":"n"}`, nil, true},
		{"no arguments", "", nil, true},
		{"a header no binding names", `{"note":"n"}`, []string{"Mcp-Param-Other", "x"}, true},
		{"an empty header is none", `{}`, []string{"Mcp-Param-Region", ""}, true},
		{"Base64", `{"region":"Zürich "}`, []string{"Mcp-Param-Region", b64("Zürich ")}, true},
		{"an integer in another notation", `{"count":3.0}`, []string{"Mcp-Param-Count", "3e0"}, true},
		{"a negative integer", `{"count":-7}`, []string{"Mcp-Param-Count", "-7"}, true},
		{"false", `{"flag":false}`, []string{"Mcp-Param-Flag", "false"}, true},
		{"a null argument without its header", `{"region":null}`, nil, true},
		{"arguments that are not an object", `"eu"`, []string{"Mcp-Param-Region", "eu"}, true},

		{"a header missing", `{"region":"eu-west"}`, nil, false},
		{"a nested header missing", `{"where":{"zone":"a"}}`, nil, false},
		{"a header for an absent argument", `{}`, []string{"Mcp-Param-Region", "eu-west"}, false},
		{"a header for a null argument", `{"region":null}`, []string{"Mcp-Param-Region", "x"}, false},
		{"values differ", `{"region":"eu-west"}`, []string{"Mcp-Param-Region", "us-east"}, false},
		{"nested values differ", `{"where":{"zone":"a"}}`, []string{"Mcp-Param-Zone", "b"}, false},
		{"Base64 that is not", `{"region":"x"}`, []string{"Mcp-Param-Region", "=?base64?***?="}, false},
		{"Base64 of another value", `{"region":"x"}`, []string{"Mcp-Param-Region", b64("y")}, false},
		{"a fraction", `{"count":1.5}`, []string{"Mcp-Param-Count", "1.5"}, false},
		{"an integer beyond 2^53", `{"count":9007199254740993}`, []string{"Mcp-Param-Count", "9007199254740993"}, false},
		{"an object", `{"region":{"a":1}}`, []string{"Mcp-Param-Region", "x"}, false},
		{"a boolean's case", `{"flag":true}`, []string{"Mcp-Param-Flag", "True"}, false},
		{"one of several bindings wrong", `{"region":"a","count":1}`, []string{"Mcp-Param-Region", "a", "Mcp-Param-Count", "2"}, false},
	} {
		params := `"name":"s__bound"`
		if c.args != "" {
			params += `,"arguments":` + c.args
		}
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + params + `,"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		before := sdkCalls.Load()
		fs, fm := modernPost(t, fast.URL, "tools/call", "s__bound", "", body, c.headers...)
		ss, sm := modernPost(t, slow.URL, "tools/call", "s__bound", "", body, c.headers...)
		if n := sdkCalls.Load() - before; n != 0 {
			t.Errorf("%s: go-sdk's server took the call", c.name)
		}
		if fs != ss || fmt.Sprint(fm["error"]) != fmt.Sprint(sm["error"]) {
			t.Errorf("%s: the plane answered %d %v; go-sdk %d %v", c.name, fs, fm["error"], ss, sm["error"])
		}
		switch mismatch := errCode(fm) == mcp.CodeHeaderMismatch; {
		case c.ok && (fs != http.StatusOK || fm["result"] == nil):
			t.Errorf("%s: %d %v; want a result", c.name, fs, fm)
		case !c.ok && (fs != http.StatusBadRequest || !mismatch):
			t.Errorf("%s: %d %v; want a header mismatch (-32020) with 400", c.name, fs, fm)
		}
	}
	if n := typed.slow.Load(); n == 0 {
		t.Error("the NoRaw plane made no call: the comparison compared nothing")
	}
}

// TestParamBindings: the bindings found in a schema, as go-sdk finds them.
func TestParamBindings(t *testing.T) {
	p := &Plane{}
	for _, c := range []struct {
		schema string
		want   string
	}{
		{`{"type":"object"}`, "[]"},
		{boundToolSchema, ""}, // checked below
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, "[]"},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":7}}}`, "[]"},
		// A type that is not a string fails go-sdk's decoding of the whole schema.
		{`{"type":"object","properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}`, "[]"},
		{`{"type":"object","properties":{"a":{"type":"string","X-Mcp-Header":"A"}}}`, "[]"},
		{`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A"}}}`, "[{[a] Mcp-Param-A}]"},
	} {
		got := p.paramBindings(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(c.schema)})
		if c.want == "" {
			if len(got) != 4 {
				t.Errorf("%s: %d bindings %v; want 4", c.schema, len(got), got)
			}
			continue
		}
		if s := fmt.Sprint(got); s != c.want && !(c.want == "[]" && got == nil) {
			t.Errorf("%s: %s; want %s", c.schema, s, c.want)
		}
	}
}

// FuzzParamHeaders: any arguments and header values are checked without
// a panic, and a header that carries a string argument as it is agrees
// with it.
func FuzzParamHeaders(f *testing.F) {
	f.Add(`{"region":"eu","count":3,"where":{"zone":"b"}}`, "eu", "3", "b")
	f.Add(`{"region":null}`, "", "=?base64?eA==?=", "")
	f.Add(`{"count":1e400,"where":[1]}`, "x", "1e400", "=?base64?")
	f.Add(`[{"region":"x"}]`, "x", "-0", "")
	p := &Plane{}
	tool := &mcp.Tool{Name: "bound", InputSchema: json.RawMessage(boundToolSchema)}
	f.Fuzz(func(t *testing.T, args, region, count, zone string) {
		h := http.Header{}
		for k, v := range map[string]string{"Mcp-Param-Region": region, "Mcp-Param-Count": count, "Mcp-Param-Zone": zone} {
			h.Set(k, v)
		}
		werr := p.checkParamHeaders(h, tool, json.RawMessage(args))
		if werr != nil && (werr.Code != mcp.CodeHeaderMismatch || werr.Message == "") {
			t.Fatalf("%s: %v", args, werr)
		}
		var obj map[string]any
		if json.Unmarshal([]byte(args), &obj) != nil || len(obj) != 1 {
			return
		}
		if s, ok := obj["region"].(string); ok && s == region && s != "" && count == "" && zone == "" && werr != nil {
			t.Fatalf("%s with Mcp-Param-Region %q: %v; want agreement", args, region, werr)
		}
	})
}
