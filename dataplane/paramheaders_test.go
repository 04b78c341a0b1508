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
// are checked there as go-sdk's handler checked them: each case gets the
// status and the error go-sdk's handler gave (the case's want).
func TestParamHeadersOnPlane(t *testing.T) {
	raw := &rawFake{raw: func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[{"type":"text","text":"raw"}]}`), nil
	}}
	v := viewOf(t, boundFake{raw})
	srv := httptest.NewServer(New(v, nil).HTTPHandler(&HTTPOptions{}))
	t.Cleanup(srv.Close)

	b64 := func(s string) string { return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=" }
	const mismatch = "header mismatch: "
	for _, c := range []struct {
		name    string
		args    string // "" for none
		headers []string
		// want is the message of the header mismatch (-32020, with
		// 400) go-sdk's handler answered; "" for a result (200).
		want string
	}{
		{"all agree", `{"region":"eu-west","count":3,"flag":true,"where":{"zone":"b"},"note":"n"}`,
			[]string{"Mcp-Param-Region", "eu-west", "Mcp-Param-Count", "3", "Mcp-Param-Flag", "true", "Mcp-Param-Zone", "b"}, ""},
		{"no bound argument, no header", `{"note":"n"}`, nil, ""},
		{"no arguments", "", nil, ""},
		{"a header no binding names", `{"note":"n"}`, []string{"Mcp-Param-Other", "x"}, ""},
		{"an empty header is none", `{}`, []string{"Mcp-Param-Region", ""}, ""},
		{"Base64", `{"region":"Zürich "}`, []string{"Mcp-Param-Region", b64("Zürich ")}, ""},
		{"an integer in another notation", `{"count":3.0}`, []string{"Mcp-Param-Count", "3e0"}, ""},
		{"a negative integer", `{"count":-7}`, []string{"Mcp-Param-Count", "-7"}, ""},
		{"false", `{"flag":false}`, []string{"Mcp-Param-Flag", "false"}, ""},
		{"a null argument without its header", `{"region":null}`, nil, ""},
		{"arguments that are not an object", `"eu"`, []string{"Mcp-Param-Region", "eu"}, ""},

		{"a header missing", `{"region":"eu-west"}`, nil,
			mismatch + `missing Mcp-Param-Region header for parameter "region"`},
		{"a nested header missing", `{"where":{"zone":"a"}}`, nil,
			mismatch + `missing Mcp-Param-Zone header for parameter "where.zone"`},
		{"a header for an absent argument", `{}`, []string{"Mcp-Param-Region", "eu-west"},
			mismatch + `unexpected Mcp-Param-Region header for absent or null parameter "region"`},
		{"a header for a null argument", `{"region":null}`, []string{"Mcp-Param-Region", "x"},
			mismatch + `unexpected Mcp-Param-Region header for absent or null parameter "region"`},
		{"values differ", `{"region":"eu-west"}`, []string{"Mcp-Param-Region", "us-east"},
			mismatch + `Mcp-Param-Region header value 'us-east' does not match body value`},
		{"nested values differ", `{"where":{"zone":"a"}}`, []string{"Mcp-Param-Zone", "b"},
			mismatch + `Mcp-Param-Zone header value 'b' does not match body value`},
		{"Base64 that is not", `{"region":"x"}`, []string{"Mcp-Param-Region", "=?base64?***?="},
			mismatch + `Mcp-Param-Region header contains invalid Base64 encoding`},
		{"Base64 of another value", `{"region":"x"}`, []string{"Mcp-Param-Region", b64("y")},
			mismatch + `Mcp-Param-Region header value '=?base64?eQ==?=' does not match body value`},
		{"a fraction", `{"count":1.5}`, []string{"Mcp-Param-Count", "1.5"},
			mismatch + `Mcp-Param-Count header present but body parameter "count" is not a primitive type`},
		{"an integer beyond 2^53", `{"count":9007199254740993}`, []string{"Mcp-Param-Count", "9007199254740993"},
			mismatch + `Mcp-Param-Count header present but body parameter "count" is not a primitive type`},
		{"an object", `{"region":{"a":1}}`, []string{"Mcp-Param-Region", "x"},
			mismatch + `Mcp-Param-Region header present but body parameter "region" is not a primitive type`},
		{"a boolean's case", `{"flag":true}`, []string{"Mcp-Param-Flag", "True"},
			mismatch + `Mcp-Param-Flag header value 'True' does not match body value`},
		{"one of several bindings wrong", `{"region":"a","count":1}`, []string{"Mcp-Param-Region", "a", "Mcp-Param-Count", "2"},
			mismatch + `Mcp-Param-Count header value '2' does not match body value`},
	} {
		params := `"name":"s__bound"`
		if c.args != "" {
			params += `,"arguments":` + c.args
		}
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + params + `,"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		status, m := modernPost(t, srv.URL, "tools/call", "s__bound", "", body, c.headers...)
		var want any // no error
		if c.want != "" {
			want = map[string]any{"code": float64(mcp.CodeHeaderMismatch), "message": c.want}
		}
		if got := m["error"]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the plane answered %d %v; want the error %v", c.name, status, got, want)
		}
		switch {
		case c.want == "" && (status != http.StatusOK || m["result"] == nil):
			t.Errorf("%s: %d %v; want a result", c.name, status, m)
		case c.want != "" && status != http.StatusBadRequest:
			t.Errorf("%s: %d %v; want a header mismatch (-32020) with 400", c.name, status, m)
		}
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
