package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/junction-mcp/junction/wire"
)

// serverConnOptions configure [newServerConn]. A nil *serverConnOptions
// is the same as a zero one.
type serverConnOptions struct {
	// Logger receives what the server does wrong on stdout (junk lines,
	// over-long lines, unknown content types). Nil discards.
	Logger *slog.Logger
	// MaxLine bounds one line from the server; zero means
	// [wire.DefaultMaxLine].
	MaxLine int
	// Observe, if not nil, sees every notification the server sends, as
	// it is read and before go-sdk handles it: go-sdk hands a response to
	// its caller at once but queues notifications for its handlers, so a
	// caller that must forward a call's progress and log messages before
	// its result counts them here. It is called from the reading
	// goroutine and must not block.
	Observe func(method string, params json.RawMessage)
	// EndError, if not nil, says why the server's stdout ended (the
	// process exited, with what); Read returns its error, which should
	// wrap io.EOF.
	EndError func() error
	// StreamStall bounds a pause of the server in the middle of an answer
	// forwarded while it arrives (see cutthrough.go); zero means
	// [wire.DefaultStreamStall].
	StreamStall time.Duration
}

// A serverConn is junction's side of the stdin and stdout of an MCP
// server it runs: newline-delimited JSON-RPC both ways, an
// [mcp.Connection] for go-sdk's client, and raw tool calls beside
// go-sdk's requests on the same pipes ([serverConn.newRawCall]).
//
// Lines on stdout that are not JSON-RPC messages (a banner, a stray
// print) are logged and skipped, where go-sdk's own connection would end
// the session; writes to stdin are coalesced (see writer.go). The process
// itself belongs to the caller: it closes stdout once the process is gone,
// which ends the reading goroutine ([serverConn.Wait]).
type serverConn struct {
	logger   *slog.Logger
	observe  func(string, json.RawMessage)
	endError func() error
	stall    time.Duration // see serverConnOptions.StreamStall

	in       *wire.Writer
	stdin    io.Closer
	incoming chan jsonrpc.Message // from read; closed when it ends
	readDone chan struct{}        // closed when read ends
	closed   chan struct{}        // closed by Close
	close    sync.Once

	// Raw calls, by number (rawCall.n; the id on the wire says it).
	rawSeq     atomic.Uint64
	rawPending atomic.Int64 // len(raw), read by read without the lock
	rawMu      sync.Mutex   // guards raw and readEnded
	raw        numTable[rawCall]
	readEnded  bool // the reading goroutine has ended: no reply will come

	// go-sdk's tools/list requests not answered yet, by id: their
	// results keep the tools' annotations (see annotations.go).
	listsPending atomic.Int64 // len(lists), read by read without the lock
	listsMu      sync.Mutex
	lists        map[any]bool

	// batch is the reading goroutine's: answers to hosts queue there while
	// it handles what one read of stdout brought in (see writer.go).
	batch wire.Batch
	// resultMeta is the reading goroutine's too: the server's last
	// result _meta, recognised in the next result without a walk.
	resultMeta wire.ServerMeta
}

var _ mcp.Connection = (*serverConn)(nil)

// newServerConn starts reading stdout, in one goroutine, and returns the
// connection.
func newServerConn(stdin io.WriteCloser, stdout io.Reader, opts *serverConnOptions) *serverConn {
	var o serverConnOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxLine <= 0 {
		o.MaxLine = wire.DefaultMaxLine
	}
	if o.StreamStall <= 0 {
		o.StreamStall = wire.DefaultStreamStall
	}
	if o.EndError == nil {
		o.EndError = func() error { return fmt.Errorf("server closed stdout: %w", io.EOF) }
	}
	c := &serverConn{
		logger:   o.Logger,
		observe:  o.Observe,
		endError: o.EndError,
		stall:    o.StreamStall,
		in:       wire.NewWriter(stdin),
		stdin:    stdin,
		incoming: make(chan jsonrpc.Message),
		readDone: make(chan struct{}),
		closed:   make(chan struct{}),
	}
	c.in.SetHooks(func(ids []uint64, err error) {
		for _, n := range ids {
			c.fail(n, err)
		}
	}, func() bool { return c.rawPending.Load() > 1 })
	go c.read(stdout, o.MaxLine)
	return c
}

func (c *serverConn) SessionID() string { return "" }

// Read implements [mcp.Connection]: the server's next message.
func (c *serverConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg, ok := <-c.incoming:
		if !ok {
			return nil, c.endError()
		}
		return msg, nil
	case <-c.closed:
		return nil, mcp.ErrConnectionClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements [mcp.Connection]: it returns once msg is written.
func (c *serverConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/list" && r.IsCall() {
		c.listsMu.Lock()
		if c.lists == nil {
			c.lists = make(map[any]bool)
		}
		if !c.lists[r.ID.Raw()] {
			c.lists[r.ID.Raw()] = true
			c.listsPending.Add(1)
		}
		c.listsMu.Unlock()
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	return c.in.WriteLine(append(b, '\n'), 0, true)
}

// Close implements [mcp.Connection]: it stops delivering messages and
// closes the server's stdin, which tells a well-behaved server to exit.
// It does not wait for the reading goroutine (see [serverConn.Wait]).
func (c *serverConn) Close() error {
	c.close.Do(func() {
		close(c.closed)
		c.in.Close(func() { c.stdin.Close() })
	})
	return nil
}

// Wait waits until the reading goroutine has ended: stdout reached its
// end (the process is gone, or its owner closed the pipe).
func (c *serverConn) Wait() { <-c.readDone }

// read decodes one JSON-RPC message per line, hands responses to raw
// calls to them and everything else to go-sdk. Lines that are not
// JSON-RPC messages are logged and skipped.
func (c *serverConn) read(stdout io.Reader, max int) {
	defer close(c.readDone)
	defer close(c.incoming)
	defer func() { c.failAll(c.endError()) }()
	r := wire.NewLineReader(stdout, max)
	r.BeforeRead(c.batch.Flush)
	r.SplitLong(wire.LongLine)
	defer c.batch.Flush()
	junk := 0
	for {
		line, tooLong, err := r.Next()
		if r.Partial() {
			// A long line, not ended yet: an answer to forward while it
			// arrives (see cutthrough.go), or else Next reads it whole.
			if c.rawPending.Load() > 0 {
				if _, err := c.cutThrough(r, line); err != nil {
					return
				}
			}
			continue
		}
		if tooLong {
			c.logger.Warn("skipped over-long line on stdout", "limit_bytes", max)
		} else if c.rawPending.Load() > 0 && c.deliverRaw(line) {
			// A response to a raw call, handed over undecoded (or an
			// error with id null, for the one raw call waiting).
		} else if len(bytes.TrimSpace(line)) > 0 {
			msg, derr := decodeLine(line)
			switch m := msg.(type) {
			case *jsonrpc.Response:
				if c.listsPending.Load() > 0 && c.answersList(m.ID) {
					m.Result, _ = wire.KeepAnnotations(m.Result)
				} else if m.Result != nil {
					if fixed, n := wire.SanitizeContent(m.Result); n > 0 {
						c.logger.Warn("replaced content blocks of unknown type", "count", n)
						m.Result = fixed
					}
				}
			case *jsonrpc.Request:
				if c.observe != nil && !m.IsCall() {
					c.observe(m.Method, m.Params)
				}
			}
			if derr != nil {
				junk++
				// A server that floods stdout must not flood the log.
				if junk <= 10 || junk%1000 == 0 {
					c.logger.Warn("skipped non-JSON-RPC line on stdout", "line", preview(line), "error", derr, "skipped_so_far", junk)
				}
			} else {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
				c.logger.Debug("stdout ended", "error", err)
			}
			return
		}
	}
}

// answersList reports whether id is a pending tools/list request of
// go-sdk's, and forgets it.
func (c *serverConn) answersList(id jsonrpc.ID) bool {
	c.listsMu.Lock()
	defer c.listsMu.Unlock()
	if !c.lists[id.Raw()] {
		return false
	}
	delete(c.lists, id.Raw())
	c.listsPending.Add(-1)
	return true
}

// decodeLine decodes one line as a JSON-RPC message. go-sdk's decoder
// accepts any JSON object, so a line must also look like JSON-RPC 2.0.
func decodeLine(line []byte) (jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	if !rawjson.Contains(line, []byte(`"jsonrpc"`)) {
		return nil, errors.New("no jsonrpc member")
	}
	return jsonrpc.DecodeMessage(line)
}

// preview shortens b for a log line.
func preview(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// A rawCall is one tools/call made on a [serverConn] without go-sdk: the
// request is written with an id of its own ("jr-N", a string, where
// go-sdk's ids are numbers; N is the call's number), and the response
// line with that id is handed to the call undecoded. Notifications the
// server sends meanwhile (progress, log messages) still go through
// go-sdk.
type rawCall struct {
	c      *serverConn
	link   *wire.Link  // the host connection's link for the call, if it has one
	n      uint64      // the call's number, in its id on the wire (appendRawID)
	to     rawReceiver // gets the reply, once
	unsent error       // the call was made after the connection ended: Send fails with it
}

// A rawReceiver gets a raw call's reply: the server's answer, a failure
// to write the request, the cause given to [rawCall.Fail], or the end of
// the server's stdout (an error wrapping io.EOF). ReceiveRaw is called
// once, from whichever goroutine ends the call (the reading goroutine,
// for the server's answer), and must not block for long: it holds up
// reading.
type rawReceiver interface {
	ReceiveRaw(rawReply)
}

// rawReply is how a raw call ended: the result member as the server sent
// it, the server's error, or why there was no answer.
type rawReply struct {
	Result json.RawMessage
	// Shape is what the reader learned of Result while it found its end
	// (wire.ResultAt): whether it may hold content blocks that
	// SanitizeContent replaces, and where a server's own members are.
	// Result is the reader's own copy, which the rewrite for the host
	// (wire.ServerResult) may change in place.
	Shape wire.ResultShape
	Err   *jsonrpc.Error
	Fail  error
}

// rawIDPrefix begins the id of every raw call, after its quote.
const rawIDPrefix = `"jr-`

// appendRawID appends the id of the raw call numbered n to dst, as it
// goes on the wire: a JSON string, quotes included.
func appendRawID(dst []byte, n uint64) []byte {
	dst = append(dst, rawIDPrefix...)
	dst = strconv.AppendUint(dst, n, 10)
	return append(dst, '"')
}

// rawIDNum returns the number of the raw call whose id (as sent, quotes
// included) is id: the id as appendRawID writes it; false for any other.
func rawIDNum(id []byte) (uint64, bool) {
	if !bytes.HasPrefix(id, []byte(rawIDPrefix)) || len(id) < len(rawIDPrefix)+1 || id[len(id)-1] != '"' {
		return 0, false
	}
	return seqNum(id[len(rawIDPrefix) : len(id)-1])
}

// seqNum reads the number of one of junction's calls in its raw id or
// progress token: decimal digits with no sign and no leading zero, so
// that one number is written one way only; false for any other text, or
// one out of range.
func seqNum[T string | []byte](digits T) (uint64, bool) {
	if len(digits) == 0 || digits[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(digits); i++ {
		d := uint64(digits[i] - '0')
		// Nineteen digits fit; only a twentieth may not.
		if d > 9 || i >= 19 && n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// newRawCall returns a call whose reply goes to to. Its request is not
// written yet: a caller that sets up timers that may fail it can do so
// first ([rawCall.Send]).
func (c *serverConn) newRawCall(to rawReceiver) *rawCall {
	r := new(rawCall)
	c.addRawCall(r, to)
	return r
}

// addRawCall is newRawCall for a call whose record r, a zero rawCall, is
// part of its caller's (a rawFlight's), so that a call is one allocation.
func (c *serverConn) addRawCall(r *rawCall, to rawReceiver) {
	*r = rawCall{c: c, n: c.rawSeq.Add(1), to: to}
	c.rawMu.Lock()
	if c.readEnded {
		// Nothing will be sent: Send says so (not here, where the
		// caller may hold what its receiver takes).
		c.rawMu.Unlock()
		r.unsent = fmt.Errorf("%w: %w", wire.ErrNotSent, c.endError())
		return
	}
	c.raw.put(r.n, r)
	c.rawPending.Add(1)
	c.rawMu.Unlock()
}

// Send writes the tools/call request with params (a params object whose
// _meta, if any, is replaced) and a _meta holding meta's members (a JSON
// object's inside, without braces, such as
// `"progressToken":"junction-1"`; empty for none). It may return before
// the request is written: a failure to write arrives as the reply. ctx is
// the call's: when it carries a [wire.Link] (a host connection of package
// dataplane makes one), the request and the answer are batched with that
// connection's other traffic.
func (r *rawCall) Send(ctx context.Context, meta []byte, params json.RawMessage) error {
	return r.SendRequest(ctx, "tools/call", meta, params)
}

// SendRequest is [rawCall.Send] for a request of another method (the
// tasks extension's tasks/get, say); method must be a plain ASCII name.
func (r *rawCall) SendRequest(ctx context.Context, method string, meta []byte, params json.RawMessage) error {
	if r.unsent != nil {
		r.deliver(rawReply{Fail: r.unsent})
		return r.unsent
	}
	// JSON text must be UTF-8: a server may answer invalid bytes with a
	// parse error it cannot address to the call (id null), and the call
	// would wait for its timeout. They become U+FFFD, as decoding would
	// make them. Of params the host's side read (wire.RequestOf), the
	// _meta member is not sent (meta is, made by the hub), so only the
	// rest is looked at.
	l := wire.LinkOf(ctx)
	req := l.RequestFor(params)
	if req == nil || !req.Clean && !cleanBeside(params, req.MetaAt) {
		params = rawjson.FixText(params)
		req = l.RequestFor(params) // nil if FixText changed them
	}
	// The line is made where it is queued (Writer.AppendLine), not in a
	// buffer of its own.
	size, add := len(params)+len(meta)+80, func(dst []byte) []byte {
		start := len(dst)
		dst = append(dst, `{"jsonrpc":"2.0","id":`...)
		dst = appendRawID(dst, r.n)
		dst = append(dst, `,"method":"`...)
		dst = append(dst, method...)
		dst = append(dst, `","params":`...)
		dst = wire.AppendParams(dst, params, meta, req)
		dst = append(dst, "}\n"...)
		oneLine(dst[start : len(dst)-1])
		return dst
	}
	var err error
	if l != nil {
		r.link = l
	}
	if b := hostBatch(l); b != nil {
		err = r.c.in.AppendDeferred(size, r.n, b, add)
	} else {
		err = r.c.in.AppendLine(size, r.n, add)
	}
	if err != nil {
		r.c.fail(r.n, err) // the reply says so too
		return err
	}
	return nil
}

// cleanBeside reports whether params, but for the span at (zero: none),
// are clean text (rawjson.CleanText).
func cleanBeside(params []byte, at [2]int) bool {
	if at == [2]int{} {
		return rawjson.CleanText(params)
	}
	return rawjson.CleanText(params[:at[0]]) && rawjson.CleanText(params[at[1]:])
}

// oneLine turns the line breaks in b, a JSON text, into spaces, so that
// it is one line of newline-delimited JSON: in valid JSON a raw CR or LF
// can only be white space between tokens (inside a string it is
// escaped), so the meaning is the same. A host's request over HTTP may be
// pretty-printed.
func oneLine(b []byte) {
	if bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0 {
		return
	}
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
}

// Fail ends the call, if it still waits, with cause as its reply. A nil
// cause does nothing.
func (r *rawCall) Fail(cause error) {
	if cause != nil && r.Take() {
		r.deliver(rawReply{Fail: cause})
	}
}

// Forget drops the call's waiter, if it is still there: a reply that
// comes later is discarded.
func (r *rawCall) Forget() { r.Take() }

// Take takes the call out of the waiting ones and reports whether it was
// still there: the caller that gets true is the one that ends it (and
// delivers, if it delivers, the reply), so a call ends exactly once.
func (r *rawCall) Take() bool {
	c := r.c
	c.rawMu.Lock()
	ok := c.raw.get(r.n) == r
	if ok {
		c.raw.take(r.n)
		c.rawPending.Add(-1)
	}
	c.rawMu.Unlock()
	return ok
}

// deliver hands the call its reply; called once, by whoever took it.
func (r *rawCall) deliver(reply rawReply) { r.to.ReceiveRaw(reply) }

// Cancel tells the server the call is cancelled (notifications/cancelled
// with the call's id), with cause as the reason.
func (r *rawCall) Cancel(cause error) {
	reason := "cancelled"
	if cause != nil {
		reason = cause.Error()
	}
	line := append(wire.AppendCancelled(nil, string(appendRawID(nil, r.n)), reason), '\n')
	if err := r.c.in.WriteLine(line, 0, false); err != nil {
		r.c.logger.Debug("sending notifications/cancelled failed", "error", err)
	}
}

// fail ends the raw call numbered n, if it still waits, with cause.
func (c *serverConn) fail(n uint64, cause error) {
	c.rawMu.Lock()
	r := c.raw.take(n)
	if r != nil {
		c.rawPending.Add(-1)
	}
	c.rawMu.Unlock()
	if r != nil {
		r.deliver(rawReply{Fail: cause})
	}
}

// loneRawCall returns the id of the one raw call waiting, or nil if there
// are none or several.
func (c *serverConn) loneRawCall() []byte {
	c.rawMu.Lock()
	defer c.rawMu.Unlock()
	if c.raw.len() != 1 {
		return nil
	}
	for n := range c.raw.all() {
		return appendRawID(nil, n)
	}
	return nil
}

// failAll ends every raw call still waiting, with cause: the server's
// stdout has ended, so no reply will come. Calls made later fail at once.
func (c *serverConn) failAll(cause error) {
	c.rawMu.Lock()
	c.readEnded = true
	calls := make([]*rawCall, 0, c.raw.len())
	for n, r := range c.raw.all() {
		calls = append(calls, r)
		c.raw.take(n)
	}
	c.rawPending.Store(0)
	c.rawMu.Unlock()
	for _, r := range calls {
		r.deliver(rawReply{Fail: cause})
	}
}

// deliverRaw hands line to the raw call waiting for it and reports
// whether it was such a response. A request or a notification is left
// as soon as its method is read (most come with it among their first
// members); a response to one of go-sdk's requests is read to its end,
// as a raw call's is, before its id turns it away. Called by read only.
func (c *serverConn) deliverRaw(line []byte) bool {
	var id, result, errv []byte
	var shape wire.ResultShape
	if rawjson.WalkObject(line, 0, func(key []byte, v int) int {
		if string(key) == "result" {
			// Its content blocks' types are looked at on the way
			// (SanitizeContent's check), so a clean one is read once.
			end, sh := wire.ResultAt(line, v, &c.resultMeta)
			if end >= 0 {
				result, shape = line[v:end], sh
			}
			return end
		}
		end := rawjson.SkipValue(line, v)
		if end < 0 {
			return -1
		}
		switch string(key) {
		case "id":
			id = line[v:end]
		case "error":
			errv = line[v:end]
		case "method":
			return -1 // a request or a notification: not a response
		}
		return end
	}) < 0 || len(id) == 0 {
		return false
	}
	if string(id) == "null" && errv != nil {
		// An error the server could not address (a parse error, say):
		// when one raw call waits, it is that call's; otherwise go-sdk
		// logs it.
		id = c.loneRawCall()
	}
	if !bytes.HasPrefix(id, []byte(rawIDPrefix)) {
		// Not a response to a raw call (a request of the server's own
		// may use any id, "jr-1" included).
		return false
	}
	n, _ := rawIDNum(id) // zero, which no call has, for one junction did not write
	c.rawMu.Lock()
	r := c.raw.take(n)
	if r != nil {
		c.rawPending.Add(-1)
	}
	c.rawMu.Unlock()
	if r == nil {
		return true // a reply to a raw call that gave up: not go-sdk's either
	}
	var reply rawReply
	switch {
	case result != nil && errv == nil:
		// The line is the reader's own copy (wire.LineReader.Next allocates
		// per line), so the result can be kept without a copy.
		reply.Result, reply.Shape = result, shape
	case errv != nil:
		var e jsonrpc.Error
		if err := json.Unmarshal(errv, &e); err != nil {
			e = jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server sent a malformed error: " + err.Error()}
		}
		reply.Err = &e
	default:
		reply.Err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server sent a response with neither result nor error"}
	}
	if r.link != nil {
		r.link.Via.Store(&c.batch) // the answer to the host queues with this read's
		r.deliver(reply)
		r.link.Via.Store(nil)
		return true
	}
	r.deliver(reply)
	return true
}

// hostBatch is the batch a call's request queues in: the one of the host
// connection's reading goroutine, while it starts the call.
func hostBatch(l *wire.Link) *wire.Batch {
	if l == nil {
		return nil
	}
	return l.From.Load()
}
