// Package echo is the benchmark's floor: a hand-written MCP server that
// speaks newline-delimited JSON-RPC and offers one tool, "echo", whose
// result is the text of its "msg" argument.
//
// It is deliberately minimal (one goroutine, no schema validation, no
// SDK), so calling it directly measures the cost of the pipe and of the
// driver, and calling it through the hub measures the hub:
//
//	mcpload ──stdio──▶ echo            (the floor)
//	mcpload ──stdio──▶ junction ──stdio──▶ echo
//
// With a positive "size" argument the text is that many 'x' bytes
// instead, to measure large results with small requests.
//
// It answers initialize, ping, tools/list and tools/call; every other
// request gets -32601 (method not found), which also makes go-sdk's client
// fall back from server/discover to initialize. Notifications are ignored.
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
)

// ProtocolVersion is the revision answered when the client asks for one
// the server does not know.
const ProtocolVersion = "2025-11-25"

var knownVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// MaxFrame bounds one request line.
const MaxFrame = 64 << 20

const toolList = `{"tools":[{"name":"echo","description":"Returns the text of msg.","inputSchema":{"type":"object","properties":{"msg":{"type":"string"}}}}]}`

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// Serve answers requests read from r on w until r ends. It returns nil at
// EOF, and an error if a frame is too long or w fails. A line that is not
// JSON gets a parse error with a null id, as JSON-RPC asks.
func Serve(r io.Reader, w io.Writer) error { return serve(r, w, MaxFrame) }

func serve(r io.Reader, w io.Writer, maxFrame int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	var line, out []byte
	for {
		var err error
		line, err = readLine(br, line[:0], maxFrame)
		if len(bytes.TrimSpace(line)) > 0 {
			out = answer(out[:0], line)
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

// answer appends the response to line (with its newline) to out; nothing
// for a notification.
func answer(out, line []byte) []byte {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return append(out, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`+"\n"...)
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return out // a notification (or a response to us: we send no requests)
	}
	head := func() []byte {
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(out, req.ID...)
		return out
	}
	switch req.Method {
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Msg  json.RawMessage `json:"msg"`
				Size int             `json:"size"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Name != "echo" {
			return errorResponse(head(), -32602, fmt.Sprintf("unknown tool %q", p.Name))
		}
		out = append(head(), `,"result":{"content":[{"type":"text","text":`...)
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
		return append(out, "}]}}\n"...)
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		v := ProtocolVersion
		if slices.Contains(knownVersions, p.ProtocolVersion) {
			v = p.ProtocolVersion
		}
		out = append(head(), `,"result":{"protocolVersion":"`...)
		out = append(out, v...)
		return append(out, `","capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1"}}}`+"\n"...)
	case "tools/list":
		out = append(head(), `,"result":`...)
		return append(append(out, toolList...), "}\n"...)
	case "ping":
		return append(head(), `,"result":{}}`+"\n"...)
	}
	return errorResponse(head(), -32601, fmt.Sprintf("method %q not found", req.Method))
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

func errorResponse(out []byte, code int, msg string) []byte {
	out = append(out, `,"error":{"code":`...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, `,"message":`...)
	out = strconv.AppendQuote(out, msg)
	return append(out, "}}\n"...)
}
