package junction

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A RawCaller is a [Source] that can forward a tools/call without decoding
// its arguments or its result: the hub's fast path (see
// [View.ServeStdioFast]) hands it the params object as the host sent it,
// with the source-local tool name, and writes the result it returns to the
// host as it is.
//
// CallToolRaw returns the JSON of the result object. Errors mean what they
// mean for CallTool: a *jsonrpc.Error is answered as that protocol error,
// anything else becomes a tool error. The fast path only uses CallToolRaw
// for calls without _meta (no progress token, no per-request protocol
// fields) and without multi-round-trip fields; everything else goes
// through CallTool.
//
// ctx names the host session the call is made for ([HostSession]). Log
// messages, and sampling, elicitation or roots requests, that the source
// has for the host during the call should be sent with that session's
// methods (Log, CreateMessage, Elicit, ListRoots) and a context derived
// from ctx: the fast path then delivers them as the ordinary path would
// (over HTTP, on the call's own response stream).
//
// A RawCaller that also has a method CanCallRaw(tool string) bool is
// asked before each call, with the source-local tool name; false sends
// the call the ordinary way (for a source that can forward raw only over
// some of its transports).
//
// docs/performance.md has the measurements behind the fast path.
type RawCaller interface {
	CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error)
}

type hostSessionKey struct{}

func withHostSession(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, hostSessionKey{}, ss)
}

// HostSession returns the host session a [RawCaller]'s call is made for,
// or nil.
func HostSession(ctx context.Context) *mcp.ServerSession {
	ss, _ := ctx.Value(hostSessionKey{}).(*mcp.ServerSession)
	return ss
}

// FastOptions configure [View.ServeStdioFast]. A nil *FastOptions is the
// same as a zero one.
type FastOptions struct {
	// MaxFrame bounds one inbound frame; zero means [DefaultMaxFrame].
	MaxFrame int
	// OnBadFrame is passed to the [StdioTransport] that carries everything
	// the fast path does not answer.
	OnBadFrame func(error)
}

// ServeStdioFast serves the view on in and out like
// v.Server().Run(ctx, &StdioTransport{In: in, Out: out}), except that a
// tools/call for a tool whose source is a [RawCaller] is answered by a
// data plane of its own: the request is parsed just enough to route it
// (id, method, tool name) and forwarded as raw bytes, and the source's
// result is written back as raw bytes. go-sdk's server still answers
// everything else on the same connection (initialize, lists, pings,
// resources, prompts, calls with _meta, calls to other sources), and
// selection is enforced the same way.
//
// It returns when in ends (after the calls in flight are answered, up to
// [DrainTimeout]) or ctx is done. Fast calls count in [Hub.InFlight], so
// [Hub.WaitIdle] waits for them too.
func (v *View) ServeStdioFast(ctx context.Context, in io.Reader, out io.Writer, opts *FastOptions) error {
	var o FastOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	w := newBatchWriter(out)
	defer w.flush()
	// Lines the fast path does not take go through a pipe to the ordinary
	// StdioTransport, which keeps all of its behaviour (bad frames,
	// batches, draining).
	pr, pw := io.Pipe()
	f := &fastPlane{v: v, out: w, slow: pw, onBad: o.OnBadFrame, calls: make(map[string]*fastCall)}

	// As v.server.Run, keeping the session: raw calls are made for it.
	ss, err := v.server.Connect(ctx, &StdioTransport{In: pr, Out: w, MaxFrame: o.MaxFrame, OnBadFrame: o.OnBadFrame}, nil)
	if err != nil {
		return err
	}
	f.host = ss
	runErr := make(chan error, 1)
	go func() {
		closed := make(chan error, 1)
		go func() { closed <- ss.Wait() }()
		select {
		case <-ctx.Done():
			ss.Close()
			<-closed
			runErr <- ctx.Err()
		case err := <-closed:
			runErr <- err
		}
	}()

	readErr := make(chan error, 1)
	go func() { readErr <- f.readLoop(ctx, in, o.MaxFrame) }() // ends at EOF of in, or when the pipe closes

	select {
	case err = <-runErr:
		// The server stopped (ctx done, or a write failed): stop reading.
		cancel()
		pr.Close()
		f.wait(DrainTimeout)
		// The read goroutine ends at the next line or EOF of in; a blocked
		// read of os.Stdin cannot be interrupted.
	case rerr := <-readErr:
		// Input ended: answer the fast calls in flight, then let the
		// transport see EOF and drain its own.
		f.wait(DrainTimeout)
		pw.CloseWithError(rerr)
		err = <-runErr
	}
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
		err = nil
	}
	return err
}

// batchWriter serialises whole-line writes of the fast path and of the
// StdioTransport (which writes each line with one Write call), and
// coalesces them: lines written while a write to w is under way are sent
// together by the writer already at work, so concurrent answers cost one
// system call rather than one each. A Write may return before its bytes
// reach w; a failure of w is returned by the next Write and by flush.
type batchWriter struct {
	w io.Writer

	mu       sync.Mutex // guards the fields below
	idle     *sync.Cond // signalled when flushing ends
	pending  []byte
	spare    []byte
	flushing bool // some Write is writing to w
	err      error
}

// bigWrite is the size above which a line is written directly instead of
// being copied into the batch.
const bigWrite = 64 << 10

func newBatchWriter(w io.Writer) *batchWriter {
	b := &batchWriter{w: w}
	b.idle = sync.NewCond(&b.mu)
	return b
}

func (b *batchWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if len(p) > bigWrite {
		for b.flushing {
			b.idle.Wait()
		}
		b.flushing = true
		b.writeOut(b.takePending())
		if b.err == nil {
			b.writeOut(p)
		}
	} else {
		b.pending = append(b.pending, p...)
		if b.flushing {
			return len(p), nil // the writer at work sends it
		}
		b.flushing = true
	}
	for len(b.pending) > 0 && b.err == nil {
		b.writeOut(b.takePending())
	}
	b.flushing = false
	b.idle.Broadcast()
	if b.err != nil {
		return 0, b.err
	}
	return len(p), nil
}

// takePending swaps out the pending bytes; called with mu held.
func (b *batchWriter) takePending() []byte {
	buf := b.pending
	b.pending = b.spare[:0]
	b.spare = nil
	return buf
}

// writeOut writes buf to w without holding mu; called with mu held and
// flushing set.
func (b *batchWriter) writeOut(buf []byte) {
	if len(buf) == 0 {
		return
	}
	b.mu.Unlock()
	_, err := b.w.Write(buf)
	b.mu.Lock()
	if len(buf) <= bigWrite && b.spare == nil {
		b.spare = buf[:0]
	}
	if err != nil && b.err == nil {
		b.err = err
	}
}

// flush waits until everything written so far has been sent to w.
func (b *batchWriter) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.flushing {
		b.idle.Wait()
	}
	return b.err
}

// fastPlane is the fast path's side of one stdio connection.
type fastPlane struct {
	v     *View
	out   *batchWriter
	slow  *io.PipeWriter // lines for the StdioTransport; written by readLoop only
	onBad func(error)
	host  *mcp.ServerSession // the connection's session, which raw calls are for
	// ready is set once the host has sent notifications/initialized; until
	// then every line goes the ordinary way. Owned by readLoop.
	ready bool

	wg      sync.WaitGroup       // fast calls in flight; Add only under mu while !closing
	mu      sync.Mutex           // guards the fields below
	calls   map[string]*fastCall // by the host's raw request id
	closing bool                 // no new fast calls
}

// fastCall is one fast call in flight.
type fastCall struct {
	cancel    context.CancelFunc
	cancelled bool // the host sent notifications/cancelled; guarded by fastPlane.mu
}

// wait stops new fast calls and waits up to d for those in flight.
func (f *fastPlane) wait(d time.Duration) {
	f.mu.Lock()
	f.closing = true
	f.mu.Unlock()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// readLoop reads host lines, answering what it can and passing the rest
// on. It returns the read error (io.EOF at the end of input).
func (f *fastPlane) readLoop(ctx context.Context, in io.Reader, max int) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readFrame(r, max)
		if tooLong {
			f.rejectTooLong(max)
		} else if len(line) > 0 && (!f.ready || !f.take(ctx, line)) {
			if !f.ready && bytes.Contains(line, []byte(`"notifications/initialized"`)) {
				f.ready = true
			}
			if _, werr := f.slow.Write(line); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}

// rejectTooLong answers an oversized frame as the StdioTransport does.
func (f *fastPlane) rejectTooLong(max int) {
	msg := fmt.Sprintf("frame exceeds %d bytes", max)
	if f.onBad != nil {
		f.onBad(errors.New(msg))
	}
	f.writeError([]byte("null"), &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg})
}

// parseToolCall reads the one shape of message the fast path takes: a
// JSON-RPC request {"jsonrpc":"2.0","id":…,"method":"tools/call",
// "params":{"name":…,"arguments":…}} with no other members (no _meta, so
// no progress token and no per-request protocol fields; no inputResponses
// or requestState), each member once and spelled exactly, an id that is a
// number or a string, and nothing after it. Anything else goes the
// ordinary way. The id and arguments are returned as sent, and checked to
// be valid JSON, since they are forwarded without being decoded.
func parseToolCall(msg []byte) (id json.RawMessage, name string, args json.RawMessage, ok bool) {
	var params, rawName []byte
	var seen [4]bool
	ok = true
	end := rawjson.Object(msg, func(key, val []byte) {
		k := -1
		switch string(key) {
		case "jsonrpc":
			k, ok = 0, ok && string(val) == `"2.0"`
		case "id":
			k, id = 1, val
		case "method":
			k, ok = 2, ok && string(val) == `"tools/call"`
		case "params":
			k, params = 3, val
		}
		if k < 0 || seen[k] {
			ok = false
			return
		}
		seen[k] = true
	})
	if !ok || end < 0 || seen != [4]bool{true, true, true, true} || len(bytes.TrimSpace(msg[end:])) > 0 {
		return nil, "", nil, false
	}
	if c := id[0]; c != '"' && c != '-' && (c < '0' || c > '9') || !json.Valid(id) {
		return nil, "", nil, false // null, or not an id at all
	}
	var pseen [2]bool
	if rawjson.Object(params, func(key, val []byte) {
		switch string(key) {
		case "name":
			ok, pseen[0], rawName = ok && !pseen[0], true, val
		case "arguments":
			ok, pseen[1], args = ok && !pseen[1], true, val
		default:
			ok = false
		}
	}) < 0 || !ok || !pseen[0] || rawName[0] != '"' {
		return nil, "", nil, false
	}
	if plainASCII(rawName) {
		name = string(rawName[1 : len(rawName)-1])
	} else if json.Unmarshal(rawName, &name) != nil { // escapes, or UTF-8 to check
		return nil, "", nil, false
	}
	if len(args) > 0 && !json.Valid(args) {
		return nil, "", nil, false
	}
	return id, name, args, true
}

// plainASCII reports whether b holds only printable ASCII without
// backslashes: a JSON string that means what it says.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

// take answers line on the fast path if it can and reports whether it did.
func (f *fastPlane) take(ctx context.Context, line []byte) bool {
	if bytes.Contains(line, []byte(`"notifications/cancelled"`)) {
		id, ok := cancelledID(line)
		return ok && f.cancel(id)
	}
	rt, ok := f.v.routeRaw(line)
	if !ok {
		return false
	}
	key := string(rt.id)
	callCtx, cancel := context.WithCancel(withHostSession(ctx, f.host))
	fc := &fastCall{cancel: cancel}
	f.mu.Lock()
	if _, dup := f.calls[key]; dup || f.closing {
		f.mu.Unlock()
		cancel()
		return false // the ordinary path deals with a reused id
	}
	f.calls[key] = fc
	f.wg.Add(1)
	f.mu.Unlock()

	go func() {
		defer f.wg.Done()
		answer := f.v.callRaw(callCtx, rt)
		f.mu.Lock()
		delete(f.calls, key)
		cancelled := fc.cancelled
		f.mu.Unlock()
		cancel()
		// A call the host cancelled gets no answer, as JSON-RPC asks.
		if !cancelled {
			f.out.Write(answer)
		}
	}()
	return true
}

// rawRoute is a tools/call the fast path takes: where it goes and what
// to send.
type rawRoute struct {
	id     json.RawMessage // the host's request id, as sent
	name   string          // the tool's name in the view
	e      *toolEntry
	rc     RawCaller
	params []byte // the params for the source: its local name and the host's arguments
}

// routeRaw reports whether the JSON-RPC message msg is a tools/call the
// fast path takes, and if so how: a request (not a notification) whose
// params hold only name and arguments, for a tool the view selects, of a
// source that is a RawCaller and (if it asks) takes this call raw.
// Anything else (unknown tools included) is for the ordinary path.
func (v *View) routeRaw(msg []byte) (rawRoute, bool) {
	if !bytes.Contains(msg, []byte(`"tools/call"`)) {
		return rawRoute{}, false
	}
	id, name, args, ok := parseToolCall(msg)
	if !ok {
		return rawRoute{}, false
	}
	h := v.hub
	h.mu.RLock()
	e := h.table.toolIndex[name]
	h.mu.RUnlock()
	if e == nil || !v.allows(name) {
		return rawRoute{}, false
	}
	rc, ok := e.source.src.(RawCaller)
	if !ok {
		return rawRoute{}, false
	}
	if p, ok := rc.(interface{ CanCallRaw(string) bool }); ok && !p.CanCallRaw(e.local) {
		return rawRoute{}, false
	}
	hasArgs := len(args) > 0 && string(args) != "null" // as the ordinary path: null means none
	params := make([]byte, 0, len(args)+len(e.local)+32)
	params = append(params, `{"name":`...)
	params = strconv.AppendQuote(params, e.local)
	if hasArgs {
		params = append(params, `,"arguments":`...)
		params = append(params, args...)
	}
	params = append(params, '}')
	return rawRoute{id: id, name: name, e: e, rc: rc, params: params}, true
}

// callRaw makes the call rt and returns the JSON-RPC answer line for the
// host (a result, or an error), ending in a newline. Timeouts, tool-error
// mapping, panics and Observe are as on the ordinary path, and the call
// counts in [Hub.InFlight].
func (v *View) callRaw(ctx context.Context, rt rawRoute) []byte {
	h := v.hub
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	e, name := rt.e, rt.name
	if d := e.source.opts.Timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	start := time.Now()
	res, err := safeRawCall(ctx, rt.rc, e.local, rt.params)
	info := CallInfo{Source: e.source.name, Tool: name, Duration: time.Since(start), Outcome: "ok", Raw: true}
	defer func() {
		if h.opts.Observe != nil {
			h.opts.Observe(info)
		}
	}()
	if err == nil && len(bytes.TrimSpace(res)) == 0 {
		err = &ToolError{Code: CodeInternal, Message: "source returned no result"}
	}
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			info.Outcome = "protocol_error"
			return errorLine(rt.id, werr)
		}
		if ctx.Err() == context.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
		}
		te := asToolError(name, err)
		info.Outcome = strings.ToLower(te.Code)
		h.logger.Warn("tool call failed", LogKeySource, e.source.name, LogKeyTool, name, "code", te.Code, "error", err)
		b, merr := json.Marshal(te.Result())
		if merr != nil {
			return errorLine(rt.id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: merr.Error()})
		}
		res = b
	} else if topLevelIsError(res) {
		info.Outcome = "tool_error"
	}
	return resultLine(rt.id, res)
}

func safeRawCall(ctx context.Context, rc RawCaller, name string, params json.RawMessage) (res json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			res = nil
			err = &ToolError{Code: CodeInternal, Message: fmt.Sprintf("source panicked: %v", r)}
		}
	}()
	return rc.CallToolRaw(ctx, name, params)
}

func resultLine(id, result []byte) []byte {
	buf := make([]byte, 0, len(id)+len(result)+40)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"result":`...)
	buf = append(buf, result...)
	return append(buf, "}\n"...)
}

func (f *fastPlane) writeError(id []byte, e *jsonrpc.Error) { f.out.Write(errorLine(id, e)) }

func errorLine(id []byte, e *jsonrpc.Error) []byte {
	msg, _ := json.Marshal(e.Message)
	buf := make([]byte, 0, len(id)+len(msg)+80)
	buf = append(buf, `{"jsonrpc":"2.0","id":`...)
	buf = append(buf, id...)
	buf = append(buf, `,"error":{"code":`...)
	buf = strconv.AppendInt(buf, e.Code, 10)
	buf = append(buf, `,"message":`...)
	buf = append(buf, msg...)
	if len(e.Data) > 0 {
		buf = append(buf, `,"data":`...)
		buf = append(buf, e.Data...)
	}
	return append(buf, "}}\n"...)
}

// cancelledID returns the requestId of a notifications/cancelled message,
// as sent, and false for anything else.
func cancelledID(msg []byte) (json.RawMessage, bool) {
	var env struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &env); err != nil || env.Method != "notifications/cancelled" ||
		len(env.ID) > 0 || len(env.Params.RequestID) == 0 {
		return nil, false
	}
	return env.Params.RequestID, true
}

// cancel cancels the fast call with the host's request id and reports
// true, or reports false for the ordinary path's requests.
func (f *fastPlane) cancel(id json.RawMessage) bool {
	f.mu.Lock()
	c, ok := f.calls[string(id)]
	if ok {
		c.cancelled = true
	}
	f.mu.Unlock()
	if ok {
		c.cancel()
	}
	return ok
}

// topLevelIsError reports whether the JSON object res has a top-level
// member "isError" whose value is true. It trusts res to be valid JSON
// (the source's contract) and skips string contents with IndexByte, so a
// megabyte of text costs little; nested objects are skipped, so an
// "isError" inside structuredContent does not count.
func topLevelIsError(res []byte) bool {
	depth := 0
	for i := 0; i < len(res); i++ {
		switch res[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			start := i + 1
			end := rawjson.SkipString(res, start)
			if end < 0 {
				return false
			}
			i = end
			if depth != 1 || string(res[start:end]) != "isError" {
				continue
			}
			j := i + 1
			for j < len(res) && rawjson.IsSpace(res[j]) {
				j++
			}
			if j >= len(res) || res[j] != ':' {
				continue // a string value, not a key
			}
			j++
			for j < len(res) && rawjson.IsSpace(res[j]) {
				j++
			}
			return bytes.HasPrefix(res[j:], []byte("true"))
		}
	}
	return false
}
