package e2e

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// The echo upstream of the corpus and reload tests is this test binary
// run again, by junction, as a stdio MCP server (2025-11-25, so that
// plain calls to it are forwarded raw). Its tools show the caller what
// reached the upstream:
//
//   - echo: the call's arguments, as structured content (the bytes it
//     read, verbatim, and in base64) and as text; its _meta with the
//     hub's progress token replaced by "TOKEN" (the token is the hub's
//     own, chosen afresh).
//   - fail: a tool error (isError).
//   - rpcerr: a JSON-RPC error with data.
//   - odd: a fixed result with what a hub could mangle: numbers beyond
//     float64, exponents, lone surrogate escapes, invalid UTF-8, a
//     content type nobody knows, extra members.
//   - pid: its process id, for the reload test.
//   - paths: how many calls it received raw and through go-sdk's
//     client, "raw=N sdk=M": the raw path's requests have ids "jr-N",
//     go-sdk's client's numbers.
//
// Tool names with characters beyond [A-Za-z0-9_.-] ("é", "sp ace",
// "quote\"", and control characters: tab, DEL, U+0001) test the hub's
// handling of names.
//
// The switch is an init function, as for the scripted upstream
// (scripted_upstream_test.go): it runs before TestMain and exits.

// envEchoUpstream set to "1" on a process makes this binary the echo
// upstream; the tests set it in the upstream's config (env:), so junction
// itself never sees it.
const envEchoUpstream = "JUNCTION_E2E_ECHO_UPSTREAM"

func init() {
	if os.Getenv(envEchoUpstream) == "1" {
		if err := serveEchoUpstream(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "echo upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// echoUpstreamTools is its tools/list result.
const echoUpstreamTools = `{"tools":[` +
	`{"name":"echo","description":"Echoes what it received.","inputSchema":{"type":"object"}},` +
	`{"name":"fail","description":"A tool error.","inputSchema":{"type":"object"}},` +
	`{"name":"rpcerr","description":"A JSON-RPC error.","inputSchema":{"type":"object"}},` +
	`{"name":"odd","description":"A result with odd values.","inputSchema":{"type":"object"}},` +
	`{"name":"pid","description":"Its process id.","inputSchema":{"type":"object"}},` +
	`{"name":"paths","description":"How many calls came raw, and how many not.","inputSchema":{"type":"object"}},` +
	`{"name":"\u00e9","description":"A name beyond ASCII.","inputSchema":{"type":"object"}},` +
	`{"name":"sp ace","description":"A name with a space.","inputSchema":{"type":"object"}},` +
	`{"name":"quote\"d","description":"A name with a quote.","inputSchema":{"type":"object"}},` +
	`{"name":"tab\t","description":"A name with a tab.","inputSchema":{"type":"object"}},` +
	`{"name":"del\u007f","description":"A name with a DEL.","inputSchema":{"type":"object"}},` +
	`{"name":"ctl\u0001","description":"A name with a control character.","inputSchema":{"type":"object"}}` +
	`]}`

// echoOddResult is the result of the odd tool: raw bytes, invalid UTF-8
// included.
var echoOddResult = []byte(`{"content":[` +
	`{"type":"text","text":"lone \ud800 high, lone \udc00 low, pair \ud83c\udf89, raw ` + "\xff\xfe" + ` bytes, nul \u0000, slash \/"},` +
	`{"type":"hologram","data":"?"},` +
	`{"type":"text","text":"extra","extra":{"n":18446744073709551617}}],` +
	`"structuredContent":{"big":18446744073709551617,"exp":1e3,"neg0":-0,"frac":0.1000000000000000055511151231257827,"tiny":1e-320,"s":"\ud800"},` +
	`"_meta":{"x-odd":true},"unknownMember":[1,2]}`)

// echoCalls counts the calls the echo upstream received, raw and
// through go-sdk's client. Only
// serveEchoUpstream's goroutine uses it.
var echoCalls struct{ raw, sdk int }

// serveEchoUpstream answers requests read from r on w until r ends.
func serveEchoUpstream(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if out := echoAnswer(line); out != nil {
				if _, werr := w.Write(append(out, '\n')); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// echoAnswer returns the answer to one line, or nil for a notification
// or a response.
func echoAnswer(line []byte) []byte {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`)
	}
	if len(req.ID) == 0 || string(req.ID) == "null" || req.Method == "" {
		return nil
	}
	result := func(res []byte) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, res)
	}
	rpcError := func(code int, msg, data string) []byte {
		out := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s`, req.ID, code, jsonString(msg))
		if data != "" {
			out = fmt.Appendf(out, `,"data":%s`, data)
		}
		return append(out, "}}"...)
	}
	switch req.Method {
	case "initialize":
		return result([]byte(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{},"resources":{},"completions":{}},"serverInfo":{"name":"echo-upstream","version":"1"}}`))
	case "ping":
		return result([]byte(`{}`))
	case "tools/list":
		return result([]byte(echoUpstreamTools))
	case "prompts/list":
		return result([]byte(`{"prompts":[{"name":"greet","arguments":[{"name":"who"}]}]}`))
	case "resources/list":
		return result([]byte(`{"resources":[{"uri":"echo://res","name":"res","mimeType":"text/plain"}]}`))
	case "resources/templates/list":
		return result([]byte(`{"resourceTemplates":[{"uriTemplate":"echo://t/{x}","name":"t","mimeType":"text/x"}]}`))
	case "prompts/get", "resources/read", "completion/complete":
		return result(echoRequest(req.Method, req.Params))
	case "tools/call":
	default:
		return rpcError(-32601, "method not found: "+req.Method, "")
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return rpcError(-32602, "bad params: "+err.Error(), "")
	}
	if bytes.HasPrefix(req.ID, []byte(`"jr-`)) {
		echoCalls.raw++
	} else {
		echoCalls.sdk++
	}
	switch p.Name {
	case "paths":
		return result(fmt.Appendf(nil, `{"content":[{"type":"text","text":"raw=%d sdk=%d"}]}`, echoCalls.raw, echoCalls.sdk))
	case "fail":
		return result([]byte(`{"content":[{"type":"text","text":"it failed"}],"isError":true}`))
	case "rpcerr":
		return rpcError(-32602, "rpcerr: bad arguments", `{"field":"x","n":18446744073709551617}`)
	case "odd":
		return result(echoOddResult)
	case "pid":
		return result(fmt.Appendf(nil, `{"content":[{"type":"text","text":"%d"}]}`, os.Getpid()))
	}
	if _, ok := p.Meta["progressToken"]; ok {
		p.Meta["progressToken"] = "TOKEN"
	}
	meta, _ := json.Marshal(p.Meta)
	args := []byte(p.Arguments)
	if len(args) == 0 {
		args = []byte("null")
	}
	res := fmt.Appendf(nil, `{"content":[{"type":"text","text":%s}],"structuredContent":{"tool":%s,"arguments":%s,"bytes":%q,"meta":%s}}`,
		quoteBytesJSON(args), jsonString(p.Name), args, base64.StdEncoding.EncodeToString(args), meta)
	return result(res)
}

// echoRequest is the echo upstream's result for a prompts/get,
// resources/read or completion/complete with params: the params it
// received (the hub's progress token as "TOKEN"), as a prompt's message,
// a resource's text (a template's without a MIME type, which the hub
// fills in) or a completion value. A prompt named "missing" and a URI
// ending in "/missing" get no result members at all.
func echoRequest(method string, params json.RawMessage) []byte {
	var p map[string]any
	json.Unmarshal(params, &p)
	if meta, ok := p["_meta"].(map[string]any); ok {
		if _, ok := meta["progressToken"]; ok {
			meta["progressToken"] = "TOKEN"
		}
	}
	got, _ := json.Marshal(p)
	uri, _ := p["uri"].(string)
	switch {
	case p["name"] == "missing" || strings.HasSuffix(uri, "/missing"):
		return []byte(`{}`)
	case method == "prompts/get":
		return fmt.Appendf(nil, `{"messages":[{"role":"user","content":{"type":"text","text":%s}}]}`, jsonString(string(got)))
	case method == "resources/read" && uri == "echo://res":
		return fmt.Appendf(nil, `{"contents":[{"uri":%s,"mimeType":"text/plain","text":%s}]}`, jsonString(uri), jsonString(string(got)))
	case method == "resources/read":
		return fmt.Appendf(nil, `{"contents":[{"text":%s}]}`, jsonString(string(got)))
	}
	return fmt.Appendf(nil, `{"completion":{"values":[%s],"total":1}}`, jsonString(string(got)))
}

// quoteBytesJSON returns b as a JSON string holding its bytes as they are:
// quotes, backslashes and control characters escaped, anything else
// (invalid UTF-8 included) copied.
func quoteBytesJSON(b []byte) []byte {
	out := []byte{'"'}
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c < 0x20:
			out = fmt.Appendf(out, `\u%04x`, c)
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

// jsonString returns s as a JSON string.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
