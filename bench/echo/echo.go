// Package echo is the benchmark's floor: a hand-written MCP server that
// offers one tool, "echo", whose result is the text of its "msg"
// argument, over newline-delimited JSON-RPC on stdio ([Server.Serve]) or
// over Streamable HTTP ([Server.HTTPHandler]).
//
// It is deliberately minimal (one goroutine per connection, no schema
// validation, no SDK, encoding/json for the envelope), so calling it
// directly measures the cost of the pipe or of HTTP and of the driver,
// and calling it through the hub measures the hub:
//
//	mcpload ──stdio──▶ echo            (the floor)
//	mcpload ──stdio──▶ junction ──stdio──▶ echo
//	mcpload ──HTTP───▶ echo            (the HTTP floor)
//	mcpload ──HTTP───▶ junction ──stdio──▶ echo
//
// With a positive "size" argument the text is that many 'x' bytes
// instead, to measure large results with small requests.
//
// It answers initialize, ping, tools/list and tools/call; every other
// request gets -32601 (method not found), which also makes go-sdk's client
// fall back from server/discover to initialize. Notifications are ignored.
//
// # Protocol 2026-07-28
//
// A [Server] with Modern set also speaks 2026-07-28, the revision without
// initialize: it answers server/discover, and a request whose _meta names
// that revision (io.modelcontextprotocol/protocolVersion) must carry the
// client's capabilities (and, if any, its info) as objects there, as
// go-sdk's server checks; its result gets "resultType":"complete" and the
// server's info in _meta, as go-sdk's server writes them. initialize
// offering 2026-07-28 is answered with it. Without Modern the server is
// one of 2025-11-25 (the zero value): it knows nothing of _meta and
// answers server/discover with -32601. Either way a request is decoded
// once, _meta with the rest, so that what a request of 2026-07-28 costs
// the server more is its longer line.
package echo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ProtocolVersion is the revision answered when the client asks for one
// the server does not know.
const ProtocolVersion = "2025-11-25"

// ModernVersion is the first revision without sessions or initialize.
const ModernVersion = "2026-07-28"

// CodeUnsupportedProtocolVersion is the error of a request naming a
// revision the server does not speak (go-sdk's code).
const CodeUnsupportedProtocolVersion = -32022

var knownVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// supportedModern is what a Modern server supports, newest first.
var supportedModern = append([]string{ModernVersion}, knownVersions...)

// MaxFrame bounds one request line (or HTTP body).
const MaxFrame = 64 << 20

const toolList = `{"tools":[{"name":"echo","description":"Returns the text of msg.","inputSchema":{"type":"object","properties":{"msg":{"type":"string"}}}}]}`

// modernTail ends the result of a request at 2026-07-28 (after its other
// members): the result type and the server's info.
const modernTail = `,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echoserver","version":"1"}}`

// Server is the echo server. The zero value speaks 2025-11-25 and before.
type Server struct {
	// Modern also speaks 2026-07-28 (see the package documentation).
	Modern bool
}

// Serve answers requests read from r on w until r ends, as a 2025-11-25
// server (the zero Server).
func Serve(r io.Reader, w io.Writer) error { return (&Server{}).Serve(r, w) }

// Serve answers requests read from r on w until r ends. It returns nil at
// EOF, and an error if a frame is too long or w fails. A line that is not
// JSON gets a parse error with a null id, as JSON-RPC asks.
func (s *Server) Serve(r io.Reader, w io.Writer) error { return s.serve(r, w, MaxFrame) }

func (s *Server) serve(r io.Reader, w io.Writer, maxFrame int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	var line, out []byte
	for {
		var err error
		line, err = readLine(br, line[:0], maxFrame)
		if len(bytes.TrimSpace(line)) > 0 {
			out = s.answer(out[:0], line)
			if len(out) > 0 {
				if _, werr := bw.Write(out); werr != nil {
					return fmt.Errorf("echo: write: %w", werr)
				}
			}
		}
		// Flush only when no further request is already waiting, so a
		// pipelining client gets its answers in few writes.
		if br.Buffered() == 0 || err != nil {
			if ferr := bw.Flush(); ferr != nil {
				return fmt.Errorf("echo: write: %w", ferr)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("echo: read: %w", err)
		}
	}
}

func readLine(br *bufio.Reader, buf []byte, max int) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > max {
			return nil, fmt.Errorf("frame exceeds %d bytes", max)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return buf, err
	}
}

// message is one decoded JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`

	p      params
	pErr   error // decoding params failed
	parsed bool  // the envelope was JSON
	meta   meta  // params._meta, decoded with the params by a Modern server
}

// params is every member of the params the server reads, for any method.
type params struct {
	Name      string `json:"name"`
	Arguments struct {
		Msg  json.RawMessage `json:"msg"`
		Size int             `json:"size"`
	} `json:"arguments"`
	// Raw, so that a server of 2025-11-25 reads only what it did before:
	// initialize's protocolVersion; _meta is read only in Modern
	// (modernParams).
	ProtocolVersion json.RawMessage `json:"protocolVersion"`
}

// modernParams is params as a Modern server decodes them: the _meta of
// 2026-07-28 with the rest, in the same pass.
type modernParams struct {
	*params
	Meta *meta `json:"_meta"`
}

// meta is what a request's _meta says of 2026-07-28.
type meta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
}

// parse decodes line, and for a Modern server the params' _meta with the
// params: each request is decoded once, whatever its revision, so that
// the server's cost of a request of 2026-07-28 is what its longer line
// costs, not a decode of its own.
func parse(line []byte, modern bool) *message {
	m := &message{}
	if err := json.Unmarshal(line, m); err != nil {
		return m
	}
	m.parsed = true
	switch {
	case len(m.Params) == 0:
	case !modern:
		m.pErr = json.Unmarshal(m.Params, &m.p)
	default:
		err := json.Unmarshal(m.Params, &modernParams{params: &m.p, Meta: &m.meta})
		// A member of _meta of the wrong type (a protocolVersion that is
		// not a string, an _meta that is not an object) names no
		// revision (readMeta); the params are still read.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && (te.Field == "_meta" || strings.HasPrefix(te.Field, "_meta.")) {
			err = nil
		}
		m.pErr = err
	}
	return m
}

// request reports whether m is a request (it has an id), not a
// notification or a response.
func (m *message) request() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// readMeta returns the revision the request's _meta names (parse decoded
// it, for a Modern server), if it is 2026-07-28 or later; "" for a
// request of an earlier revision (or one whose _meta is not an object).
func (m *message) readMeta() string {
	if v := m.meta.ProtocolVersion; v >= ModernVersion {
		return v
	}
	return ""
}

// initVersion is the revision initialize's params offer.
func (m *message) initVersion() string {
	var v string
	_ = json.Unmarshal(m.p.ProtocolVersion, &v)
	return v
}

// answer appends the response to line (with its newline) to out; nothing
// for a notification.
func (s *Server) answer(out, line []byte) []byte {
	m := parse(line, s.Modern)
	if !m.parsed {
		return append(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`+"\n"...)
	}
	return s.respond(out, m)
}

// respond appends the response to m, with a newline; nothing for a
// notification.
func (s *Server) respond(out []byte, m *message) []byte {
	if !m.request() {
		return out // a notification (or a response to us: we send no requests)
	}
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, m.ID...)
	modern := false
	if s.Modern {
		if v := m.readMeta(); v != "" {
			if code, msg, data := checkModern(v, &m.meta); code != 0 {
				return errorResponse(out, code, msg, data)
			}
			modern = true
		}
	}
	tail := func(out []byte) []byte {
		if modern {
			out = append(out, modernTail...)
		}
		return append(out, "}}\n"...)
	}
	switch m.Method {
	case "tools/call":
		p := &m.p
		if m.pErr != nil || p.Name != "echo" {
			return errorResponse(out, -32602, fmt.Sprintf("unknown tool %q", p.Name), "")
		}
		out = append(out, `,"result":{"content":[{"type":"text","text":`...)
		msg := p.Arguments.Msg
		switch {
		case p.Arguments.Size > 0 && p.Arguments.Size <= MaxFrame:
			out = appendBlob(out, p.Arguments.Size)
		case len(msg) > 0 && msg[0] == '"':
			out = append(out, msg...) // already a JSON string: no re-encoding
		case len(msg) == 0:
			out = append(out, `""`...)
		default:
			out = strconv.AppendQuote(out, string(msg))
		}
		return tail(append(out, "}]"...))
	case "initialize":
		v := ProtocolVersion
		if offer := m.initVersion(); slices.Contains(knownVersions, offer) || s.Modern && offer == ModernVersion {
			v = offer
		}
		out = append(out, `,"result":{"protocolVersion":"`...)
		out = append(out, v...)
		return tail(append(out, `","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}`...))
	case "server/discover":
		if !s.Modern {
			break
		}
		out = append(out, `,"result":{"supportedVersions":`...)
		out = appendStrings(out, supportedModern)
		out = append(out, `,"capabilities":{"tools":{}}`...)
		if !modern { // discover is itself of 2026-07-28: its result always has the tail
			out = append(out, modernTail...)
		}
		return tail(out)
	case "tools/list":
		out = append(out, `,"result":`...)
		return tail(append(out, toolList[:len(toolList)-1]...))
	case "ping":
		return tail(append(out, `,"result":{`...))
	}
	return errorResponse(out, -32601, fmt.Sprintf("method %q not found", m.Method), "")
}

// checkModern checks what 2026-07-28 asks of a request's _meta, as
// go-sdk's server does; a zero code means it holds.
func checkModern(version string, p *meta) (code int, msg, data string) {
	if !slices.Contains(supportedModern, version) {
		d := appendStrings([]byte(`{"supported":`), supportedModern)
		d = append(d, `,"requested":`...)
		d = strconv.AppendQuote(d, version)
		return CodeUnsupportedProtocolVersion, "unsupported protocol version", string(append(d, '}'))
	}
	if c := p.ClientCapabilities; len(c) == 0 || c[0] != '{' {
		return -32602, `missing or invalid _meta field "io.modelcontextprotocol/clientCapabilities"`, ""
	}
	if c := p.ClientInfo; len(c) > 0 && c[0] != '{' {
		return -32602, `invalid _meta field "io.modelcontextprotocol/clientInfo"`, ""
	}
	return 0, "", ""
}

func appendStrings(out []byte, ss []string) []byte {
	out = append(out, '[')
	for i, s := range ss {
		if i > 0 {
			out = append(out, ',')
		}
		out = strconv.AppendQuote(out, s)
	}
	return append(out, ']')
}

// appendBlob appends a JSON string of n 'x' bytes.
func appendBlob(out []byte, n int) []byte {
	out = append(out, '"')
	out = slices.Grow(out, n+1)
	for range n {
		out = append(out, 'x')
	}
	return append(out, '"')
}

// errorResponse appends an error member (data: JSON, or none if empty)
// and ends the response.
func errorResponse(out []byte, code int, msg, data string) []byte {
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, `,"message":`...)
	out = strconv.AppendQuote(out, msg)
	if data != "" {
		out = append(out, `,"data":`...)
		out = append(out, data...)
	}
	return append(out, "}}\n"...)
}
