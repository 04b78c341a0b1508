package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The raw call path: [Server.CallToolRaw] implements [junction.RawCaller]
// for stdio upstreams. It writes the request line itself on the session's
// stdin (under the same lock as go-sdk's writes), with a string id of its
// own ("jr-N", which go-sdk, whose ids are numbers, never uses), and
// stdioConn.readStdout hands the response line with that id to the
// waiting call before go-sdk would decode it. Notifications the upstream
// sends meanwhile (progress, log messages) still go through go-sdk.

var _ junction.RawCaller = (*Server)(nil)

// ErrRawUnsupported is returned by [Server.CallToolRaw] for a server
// whose transport is not stdio; [Server.CanCallRaw] reports false for
// those, so the hub's fast path sends their calls the ordinary way.
var ErrRawUnsupported = errors.New("raw calls are supported for stdio upstreams only")

// rawReply is the upstream's answer to one raw call.
type rawReply struct {
	result []byte         // the result member, as sent
	err    *jsonrpc.Error // or the error member
	fail   error          // or why the request could not be written
}

// hostKey is the context key of [WithHost].
type hostKey struct{}

// WithHost returns a context for [Server.CallToolRaw] that names the host
// session a raw call is made for: log messages the upstream sends during
// the call are forwarded to it, as they are for CallTool (which learns its
// host from the request). host is called once per call and may return
// nil.
func WithHost(ctx context.Context, host func() *mcp.ServerSession) context.Context {
	return context.WithValue(ctx, hostKey{}, host)
}

// hostFrom returns the host session of a raw call: the hub's own
// ([junction.HostSession]), or the one named by [WithHost].
func hostFrom(ctx context.Context) *mcp.ServerSession {
	if ss := junction.HostSession(ctx); ss != nil {
		return ss
	}
	if f, ok := ctx.Value(hostKey{}).(func() *mcp.ServerSession); ok && f != nil {
		return f()
	}
	return nil
}

// CanCallRaw reports whether a call to tool may go through
// [Server.CallToolRaw]: the transport is stdio and the upstream does not
// speak protocol 2026-07-28 or later (whose calls carry per-request _meta
// and may answer with input requests, which the ordinary path handles).
// The hub's fast path asks before each call.
func (s *Server) CanCallRaw(tool string) bool {
	if s.cfg.TransportKind() != TransportStdio || !s.cfg.allows(tool) {
		return false
	}
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	return sess == nil || !rawIncapable(sess)
}

// rawIncapable reports whether sess cannot take raw calls.
func rawIncapable(sess *session) bool {
	return sess.stdio() == nil || sess.cs.InitializeResult().ProtocolVersion >= "2026-07-28"
}

// CallToolRaw implements [junction.RawCaller]: it forwards params (a
// tools/call params object with the upstream's tool name, without _meta)
// to a stdio upstream and returns the result object as the upstream sent
// it, except that content blocks of unknown types are rewritten as in
// CallTool. A JSON-RPC error from the upstream is returned as that
// *jsonrpc.Error; a server that is not connected gives an error wrapping
// [junction.ErrSourceDown]. Cancelling ctx sends notifications/cancelled
// to the upstream. A call that makes no progress for the tool's timeout
// fails with an error wrapping context.DeadlineExceeded. Log messages the
// upstream sent before its result are forwarded (see [WithHost]) before
// CallToolRaw returns.
//
// When the session turns out not to take raw calls (see
// [Server.CanCallRaw]) the call is made with CallTool and its result
// encoded. Other transports get [ErrRawUnsupported].
//
// The hub's fast path (junction serve, unless -fast-path=false) uses it.
func (s *Server) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	params, timeout, err := s.rawCheck(name, params)
	if err != nil {
		return nil, err
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	if rawIncapable(sess) {
		return s.callViaSDK(ctx, params)
	}
	conn := sess.stdio()
	// A raw call has no context of its own: the no-progress timer and the
	// session's closing end it by failing its reply (see register), and
	// the host's cancellation is ctx. The reply is expected before the
	// call is registered, so a timer can never fire with nothing to fail.
	id, reply := conn.expectRaw()
	c := s.register(ctx, sess, hostFrom(ctx), timeout, func(cause error) { conn.failRaw(id, cause) }, false)
	if c == nil {
		conn.forgetRaw(id)
		return nil, fmt.Errorf("upstream %q: %s: %w: session closed", s.name, toolWhat(name), junction.ErrSourceDown)
	}
	defer s.end(c)

	if err := conn.writeRaw(id, c.token, params); err != nil {
		conn.forgetRaw(id)
		return nil, s.rawError(ctx, name, timeout, err)
	}
	// The rare outcomes are in functions of their own, which keeps this
	// frame (and the stack the host's goroutine must grow to) small; the
	// tool's name is quoted for messages only when there is one to write.
	select {
	case r := <-reply:
		return s.rawResult(ctx, conn, id, name, timeout, r)
	case <-conn.rawDone:
		return s.rawEnded(ctx, conn, id, name, timeout, reply)
	case <-ctx.Done():
		conn.forgetRaw(id)
		conn.cancelRaw(id, context.Cause(ctx))
		return nil, s.rawError(ctx, name, timeout, ctx.Err())
	}
}

// toolWhat names a tool in error messages.
func toolWhat(name string) string { return "tool " + strconv.Quote(name) }

// rawCheck checks a raw call's transport, tool and params, and returns
// the params trimmed and the tool's no-progress timeout. Not inlined: the
// Config methods copy Config, which would swell CallToolRaw's frame.
//
//go:noinline
func (s *Server) rawCheck(name string, params json.RawMessage) (json.RawMessage, time.Duration, error) {
	if s.cfg.TransportKind() != TransportStdio {
		return nil, 0, fmt.Errorf("upstream %q: %w", s.name, ErrRawUnsupported)
	}
	if !s.cfg.allows(name) {
		return nil, 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	params = bytes.TrimSpace(params)
	if len(params) < 2 || params[0] != '{' {
		return nil, 0, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: not a JSON object"}
	}
	return params, s.cfg.callTimeout(name), nil
}

// rawResult turns the reply to a raw call into CallToolRaw's return
// values.
func (s *Server) rawResult(ctx context.Context, conn *stdioConn, id, name string, timeout time.Duration, r rawReply) (json.RawMessage, error) {
	switch {
	case r.fail != nil:
		if errors.Is(r.fail, errNoProgress) || errors.Is(r.fail, errSessionClosing) {
			conn.cancelRaw(id, r.fail) // junction gave up: tell the upstream
		}
		return nil, s.rawError(ctx, name, timeout, r.fail)
	case r.err != nil:
		return nil, r.err
	}
	res := json.RawMessage(r.result)
	if fixed, n := sanitizeContent(res); n > 0 {
		s.logger.Warn("replaced content blocks of unknown type", "count", n)
		res = fixed
	}
	s.drainLogs()
	return res, nil
}

// rawEnded ends a raw call whose session's stdout ended.
func (s *Server) rawEnded(ctx context.Context, conn *stdioConn, id, name string, timeout time.Duration, reply <-chan rawReply) (json.RawMessage, error) {
	conn.forgetRaw(id)
	// The reply may have been delivered just before stdout ended.
	select {
	case r := <-reply:
		return s.rawResult(ctx, conn, id, name, timeout, r)
	default:
	}
	s.Reconnect()
	return nil, fmt.Errorf("upstream %q: %s: %w: %v", s.name, toolWhat(name), junction.ErrSourceDown, conn.exitError())
}

// rawError classifies the failure of a raw call: err is the cause it
// ended with (errNoProgress, errSessionClosing, a failed write, the
// host's cancellation).
func (s *Server) rawError(ctx context.Context, name string, timeout time.Duration, err error) error {
	what := toolWhat(name)
	switch {
	case errors.Is(err, errNoProgress):
		return fmt.Errorf("upstream %q: %s: no progress for %v: %w", s.name, what, timeout, context.DeadlineExceeded)
	case errors.Is(err, errSessionClosing):
		return fmt.Errorf("upstream %q: %s: %w: session closed during the call", s.name, what, junction.ErrSourceDown)
	case errors.Is(err, mcp.ErrConnectionClosed):
		s.Reconnect()
		return fmt.Errorf("upstream %q: %s: %w: %v", s.name, what, junction.ErrSourceDown, err)
	case ctx.Err() != nil:
		return fmt.Errorf("upstream %q: %s: %w", s.name, what, ctx.Err())
	}
	return fmt.Errorf("upstream %q: %s: %w", s.name, what, err)
}

// callViaSDK makes a raw call the ordinary way.
func (s *Server) callViaSDK(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	res, err := s.CallTool(ctx, &mcp.CallToolRequest{Params: &p})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: encode result: %w", s.name, err)
	}
	return b, nil
}

// sendRaw writes a tools/call request with params and a fresh raw id,
// with progressToken (so the upstream's progress restarts the call's
// no-progress timer) in its _meta. It returns the id, as it appears on the
// wire, and the channel its reply arrives on.
func (c *stdioConn) sendRaw(progressToken string, params json.RawMessage) (string, <-chan rawReply, error) {
	id, reply := c.expectRaw()
	if err := c.writeRaw(id, progressToken, params); err != nil {
		c.forgetRaw(id)
		return "", nil, err
	}
	return id, reply, nil
}

// expectRaw makes a fresh raw id (as it appears on the wire) and the
// channel its reply will arrive on.
func (c *stdioConn) expectRaw() (string, <-chan rawReply) {
	n := c.rawSeq.Add(1)
	id := `"jr-` + strconv.FormatUint(n, 10) + `"`
	reply := make(chan rawReply, 1)
	c.rawMu.Lock()
	if c.raw == nil {
		c.raw = make(map[string]chan rawReply)
	}
	c.raw[id] = reply
	c.rawPending.Add(1)
	c.rawMu.Unlock()
	return id, reply
}

// writeRaw writes the tools/call request with the raw id id.
func (c *stdioConn) writeRaw(id, progressToken string, params json.RawMessage) error {
	line := make([]byte, 0, len(params)+len(progressToken)+96)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, id...)
	line = append(line, `,"method":"tools/call","params":{"_meta":{"progressToken":`...)
	line = appendToken(line, progressToken)
	line = append(line, '}')
	if rest := bytes.TrimSpace(params[1:]); len(rest) > 0 && rest[0] != '}' {
		line = append(line, ',')
	}
	line = append(line, params[1:]...)
	line = append(line, "}\n"...)
	return c.writeLine(line, id, false)
}

// appendToken appends tok as a JSON string. Junction's own tokens
// ("junction-N") need no escaping, so the general quoting is skipped for
// them.
func appendToken(b []byte, tok string) []byte {
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			q, _ := json.Marshal(tok) // strconv's quoting is not JSON's
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, tok...)
	return append(b, '"')
}

// forgetRaw drops the waiter for id, if it is still there.
func (c *stdioConn) forgetRaw(id string) {
	c.rawMu.Lock()
	if _, ok := c.raw[id]; ok {
		delete(c.raw, id)
		c.rawPending.Add(-1)
	}
	c.rawMu.Unlock()
}

// cancelRaw tells the upstream that the raw call id is cancelled.
func (c *stdioConn) cancelRaw(id string, cause error) {
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	line := make([]byte, 0, 128)
	line = append(line, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	line = append(line, id...)
	line = append(line, `,"reason":`...)
	q, _ := json.Marshal(reason) // strconv's quoting is not JSON's (\x01)
	line = append(line, q...)
	line = append(line, "}}\n"...)
	if err := c.writeLine(line, "", false); err != nil {
		c.logger.Debug("sending notifications/cancelled failed", "error", err)
	}
}

// deliverRaw hands line to the raw call waiting for it and reports
// whether it was such a response. Called by readStdout only.
func (c *stdioConn) deliverRaw(line []byte) bool {
	var id, result, errv []byte
	method := false
	if !rawjson.EachMember(line, func(key, val []byte) {
		switch string(key) {
		case "id":
			id = val
		case "result":
			result = val
		case "error":
			errv = val
		case "method":
			method = true
		}
	}) || method || len(id) == 0 || !bytes.HasPrefix(id, []byte(`"jr-`)) {
		// Not a response to a raw call (a request of the upstream's own
		// may use any id, "jr-1" included).
		return false
	}
	c.rawMu.Lock()
	reply, ok := c.raw[string(id)]
	if ok {
		delete(c.raw, string(id))
		c.rawPending.Add(-1)
	}
	c.rawMu.Unlock()
	if !ok {
		return true // a reply to a raw call that gave up: not go-sdk's either
	}
	var r rawReply
	switch {
	case result != nil && errv == nil:
		// The line is the reader's own copy (lineReader.next allocates
		// per line), so the result can be kept without a copy.
		r.result = result
	case errv != nil:
		var e jsonrpc.Error
		if err := json.Unmarshal(errv, &e); err != nil {
			e = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream sent a malformed error: " + err.Error()}
		}
		r.err = &e
	default:
		r.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream sent a response with neither result nor error"}
	}
	reply <- r // capacity 1, one send per id
	return true
}

// unknownTypes reports whether the result b may hold a content block
// that sanitizeContent rewrites. It looks only at the blocks' members,
// skipping string contents with IndexByte, and walks the content array
// once (a megabyte of text is one IndexByte pass); true only means the
// full check must run (it is also the answer for anything unusual: escapes
// in keys, a block that is not an object, a result that does not parse).
func unknownTypes(b []byte) bool {
	unknown := false
	end := walkObject(b, 0, func(key []byte, v int) int {
		if bytes.IndexByte(key, '\\') >= 0 {
			unknown = true
			return -1
		}
		if string(key) != "content" {
			return rawjson.SkipValue(b, v)
		}
		return walkArray(b, v, func(e int) int {
			end, known := knownBlockAt(b, e)
			if !known {
				unknown = true
				return -1
			}
			return end
		})
	})
	return end < 0 || unknown
}

// knownBlockAt reports whether the value at b[i:] is an object whose type
// (matched as encoding/json matches a field name) is a known content type,
// and returns the index just past it (-1 if it is not well-formed).
func knownBlockAt(b []byte, i int) (int, bool) {
	known, seen := true, false
	end := walkObject(b, i, func(key []byte, v int) int {
		e := rawjson.SkipValue(b, v)
		if e < 0 {
			return -1
		}
		switch {
		case bytes.IndexByte(key, '\\') >= 0:
			known = false
		case bytes.EqualFold(key, []byte("type")):
			seen = true
			val := b[v:e]
			if len(val) < 2 || val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 || !knownContent[string(val[1:len(val)-1])] {
				known = false
			}
		}
		return e
	})
	return end, end >= 0 && seen && known
}

// walkObject walks the JSON object starting at b[i:] (after spaces): for
// each member it calls fn with the key (without quotes, escapes left as
// they are) and the index where the value starts; fn returns the index
// just past the value, or -1 to stop. walkObject returns the index just
// past the object, or -1 if fn stopped or the object is not well-formed.
// Each value is walked once, by fn.
func walkObject(b []byte, i int, fn func(key []byte, v int) int) int {
	i = rawjson.SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = rawjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for i < len(b) {
		if b[i] != '"' {
			return -1
		}
		end := rawjson.SkipString(b, i+1)
		if end < 0 {
			return -1
		}
		key := b[i+1 : end]
		i = rawjson.SkipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = fn(key, rawjson.SkipSpace(b, i+1)); i < 0 {
			return -1
		}
		i = rawjson.SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = rawjson.SkipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
	return -1
}

// walkArray is walkObject for the JSON array at b[i:]: fn gets the index
// where each element starts.
func walkArray(b []byte, i int, fn func(e int) int) int {
	i = rawjson.SkipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return -1
	}
	i = rawjson.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for i < len(b) {
		if i = fn(i); i < 0 {
			return -1
		}
		i = rawjson.SkipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = rawjson.SkipSpace(b, i+1)
		case ']':
			return i + 1
		default:
			return -1
		}
	}
	return -1
}
