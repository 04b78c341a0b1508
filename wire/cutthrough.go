package wire

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// Cut-through: a long answer to a raw call is forwarded to the host while
// the server's line is still arriving, rather than once it has ended, so
// that reading it and writing it overlap (a 1 MiB result no longer waits
// for its last byte before its first is written, and needs no 1 MiB
// buffer). It is the same forwarding as for a whole line, done piece by
// piece: the bytes go through the same rewrites (content blocks of
// unknown types, FixText's U+FFFD) with the same functions, so the host
// receives the same bytes either way. docs/design.md ("The data plane")
// has the conditions and the faults.
//
// A line is cut through only when all of these hold, and otherwise is
// read whole as before:
//   - it has filled LongLine bytes without ending, in at most
//     maxHeadReads reads;
//   - its head shows the id of a raw call in flight ("jr-N") before its
//     "result", whose value is an object;
//   - the call's host takes answers that way (Link.Stream) and the
//     call's receiver can let it: nothing it does to a result needs bytes
//     not seen yet, but for what a Rewrite does to the result's members
//     for a server or a host at 2026-07-28 or later (the server's reader,
//     in package upstream, asks it).
//
// While it streams, bytes are held back only where a decision needs more
// of them: a few at a chunk's end (an escape or a UTF-8 sequence cut in
// two: rawjson.TextCut), a content block until its type is known to be
// one go-sdk knows (a block of another type, or whose type comes after a
// member that does not fit, is held whole and then replaced or passed as
// replaceBlock decides), what is between the result's members until the
// next one shows whether it goes, the values of "_meta" and "resultType"
// where a Rewrite changes them, and the members after the result.

// DefaultStreamStall bounds how long a server may pause in the middle of
// an answer being forwarded: the host's line is then ended, and the call
// fails. The host's stdio writer, which all calls share, is held while an
// answer streams, so a server that stops mid-line must not hold it for
// long.
const DefaultStreamStall = 10 * time.Second

// maxHeadReads bounds the reads the head of a line may take for the line
// to be forwarded while it arrives. A server that writes its answer at
// once fills the pipe faster than junction reads it, so the head comes in
// a few large reads; one that writes it in small pieces as it computes it
// would hold the host's writer while it trickles, so its answer is read
// whole. (A count rather than a time: on a busy machine a reader that
// waits for the CPU finds more in the pipe, not less.)
const maxHeadReads = 16

// A StreamTo is how a host connection takes a call's answer while it
// arrives: set on the call's [Link] before the call starts.
type StreamTo struct {
	ID  []byte // the host's request id, as sent
	Out LineOut
	// Begun is set once the answer's line has begun (Out.BeginLine);
	// InText, when it was cut short inside a string member of a content
	// block, where closing it (TextCloser) makes the line whole again.
	// Both are set before Done is called.
	Begun, InText bool
	// Done finishes the call once the answer's line is written.
	Done StreamDone
}

// A StreamDone finishes a call whose answer went to the host while it
// arrived (see [StreamTo]): with err nil, the result had size bytes and
// that isError. Otherwise the answer was cut short, and err is how the
// call ends: StreamDone ends the line, if it had begun, and gives the
// host the call's error. The host's record of the call is typically its
// own StreamDone, so that none is made per call.
type StreamDone interface {
	StreamDone(size int, isError bool, err error)
}

// A LineOut takes one line in parts: the host's stdio writer, or an HTTP
// response. A line cut short is ended by the host's side (StreamTo.Done).
type LineOut interface {
	BeginLine() error
	LinePart(p []byte) error
	EndLine()
}

// errStreamStalled and errStreamMalformed are causes of an answer cut short
// (errLineTooLong, the line reader's, is the third).
var (
	errStreamStalled   = errors.New("stopped in the middle of its answer")
	errStreamMalformed = errors.New("sent a malformed answer")
)

// endCutLine ends, on w, the line of an answer cut short, for a stdio
// host: closed as the call's answer, errResult, whole, if it was cut
// inside a string of a content block (see textCloser), and then it
// reports true; otherwise with a line end where it is (a reader of lines
// drops the line; one that reads the stream as one JSON text fails
// there), and the call's answer must follow on a line of its own.
func (to *StreamTo) EndCutLine(w *Writer, errResult []byte, werr *jsonrpc.Error) bool {
	if !to.Begun {
		return false
	}
	if to.InText && werr == nil {
		if closer := TextCloser(errResult); closer != nil {
			w.LinePart(closer)
			w.EndLine()
			return true
		}
	}
	w.cutLine()
	return false
}

// textCloser returns what ends an answer cut short inside the text of a
// content block (StreamTo.inText) as a whole answer, a tool error: the
// text and its block end there, and the content blocks of errResult (the
// call's error, as the host would get it) follow, with isError true
// (after an isError already written, the last one is the one JSON
// readers keep). It returns nil if errResult has no content blocks.
func TextCloser(errResult []byte) []byte {
	var blocks []byte
	rawjson.Object(errResult, func(key, val []byte) {
		if string(key) == "content" && len(val) > 2 && val[0] == '[' {
			blocks = bytes.TrimSpace(val[1 : len(val)-1])
		}
	})
	if len(blocks) == 0 {
		return nil
	}
	out := append([]byte(`"},`), blocks...)
	return append(out, `],"isError":true}}`+"\n"...)
}

// streamHead reads the head of a long line: the id of the raw call it
// answers, and where its result object starts. ok is false for anything
// else (a request, an error, an id after the result).
func streamHead(head []byte) (id []byte, start int, ok bool) {
	i := rawjson.SkipSpace(head, 0)
	if i >= len(head) || head[i] != '{' {
		return nil, 0, false
	}
	i++
	for {
		i = rawjson.SkipSpace(head, i)
		if i >= len(head) || head[i] != '"' {
			return nil, 0, false
		}
		e := rawjson.SkipString(head, i+1)
		if e < 0 {
			return nil, 0, false
		}
		key := head[i+1 : e]
		i = rawjson.SkipSpace(head, e+1)
		if i >= len(head) || head[i] != ':' {
			return nil, 0, false
		}
		v := rawjson.SkipSpace(head, i+1)
		if v >= len(head) {
			return nil, 0, false
		}
		switch string(key) {
		case "result":
			if id == nil || head[v] != '{' {
				return nil, 0, false
			}
			return id, v, true
		case "error", "method":
			return nil, 0, false
		}
		end := rawjson.SkipValue(head, v)
		if end < 0 || end >= len(head) {
			return nil, 0, false
		}
		if string(key) == "id" {
			if !bytes.HasPrefix(head[v:end], []byte(`"jr-`)) {
				return nil, 0, false
			}
			id = head[v:end]
		}
		i = rawjson.SkipSpace(head, end)
		if i >= len(head) || head[i] != ',' {
			return nil, 0, false
		}
		i++
	}
}

// Where a cutter is in the answer.
const (
	cutResult  = iota // before the result's '{'
	cutMember         // in the result object, between members
	cutValue          // in a value, passed through (see scan)
	cutContent        // in a content array, between blocks
	cutBlock          // at a content block whose type is not known yet: held
	cutInBlock        // in a content block of a known type, between members
	cutRest           // after the result: the rest of the message
	cutDone
)

// A cutter rewrites a result piece by piece as SanitizeContent and then
// rawjson.FixText rewrite it whole, and writes the pieces out. Its feed
// is given the answer's bytes not consumed yet; it consumes what it can
// decide on.
type cutter struct {
	emitTo func(p []byte) error

	stage  int
	parent int // the stage a value passed through returns to
	// A value passed through: its depth in brackets, whether the scan is
	// in a string, and whether it is a literal (true, 12).
	depth int
	inStr bool
	lit   bool

	// sep is where each level (the result, its content array, a block in
	// it) is between its members or elements: as rawjson's walks, a
	// cutter takes them separated by exactly one comma.
	sep [3]uint8

	// rw is how the result's members change on the way (see Rewrite);
	// st what it has seen of them; held what is read of the result
	// between its members and not written yet.
	rw   Rewrite
	st   rewriteState
	held []byte

	isErrorSeen, isError bool
	size                 int // bytes of the result written
	replaced             int // content blocks replaced
	scratch              []byte
	err                  error // the sink's
}

// Levels of a cutter's sep, and where a level is.
const (
	lvResult, lvContent, lvBlock = 0, 1, 2
	sepOpen, sepValue, sepComma  = 0, 1, 2
)

// level is the level of the stages between members or elements.
func level(stage int) int {
	switch stage {
	case cutContent, cutBlock:
		return lvContent
	case cutInBlock:
		return lvBlock
	}
	return lvResult
}

// next checks the byte ch, at level l between members or elements (a
// closing bracket, a comma, or the start of the next one), against what
// came before it, and notes where the level is then.
func (c *cutter) next(l int, ch byte) bool {
	switch ch {
	case '}', ']':
		return c.sep[l] != sepComma
	case ',':
		ok := c.sep[l] == sepValue
		c.sep[l] = sepComma
		return ok
	}
	return c.sep[l] != sepValue
}

// emitMin is the size from which a piece is written on its own rather
// than gathered with the small ones around it.
const emitMin = 4 << 10

// emit writes seg, fixed as FixText fixes it: seg starts and ends where
// FixText's reading of the whole result would (see rawjson.TextCut).
func (c *cutter) emit(seg []byte) {
	if len(seg) == 0 {
		return
	}
	seg = rawjson.FixText(seg)
	c.size += len(seg)
	if len(seg) < emitMin {
		c.scratch = append(c.scratch, seg...)
		return
	}
	c.flush()
	if c.err == nil {
		c.err = c.emitTo(seg)
	}
}

// flush writes the small pieces gathered.
func (c *cutter) flush() {
	if len(c.scratch) > 0 && c.err == nil {
		c.err = c.emitTo(c.scratch)
	}
	c.scratch = c.scratch[:0]
}

// raw writes bytes that are not part of the result (the envelope).
func (c *cutter) raw(p []byte) {
	c.scratch = append(c.scratch, p...)
}

// feed consumes what it can of b, the answer's bytes not consumed yet
// (final: there are no more), and returns how many it consumed and
// whether the answer is complete. A malformed answer is an error.
func (c *cutter) feed(b []byte, final bool) (used int, done bool, err error) {
	i := 0
	defer c.flush()
	for {
		switch c.stage {
		case cutResult:
			j := rawjson.SkipSpace(b, i)
			if j >= len(b) {
				return c.more(i, final)
			}
			if b[j] != '{' {
				return i, false, errStreamMalformed
			}
			c.emit(b[i : j+1])
			i, c.stage = j+1, cutMember
		case cutMember:
			// Between the result's members, what is read is held (in
			// c.held) until the next member shows whether it goes (see
			// Rewrite).
			j := rawjson.SkipSpace(b, i)
			c.held = append(c.held, b[i:j]...)
			i = j
			if j >= len(b) {
				return c.more(i, final)
			}
			if !c.next(lvResult, b[j]) {
				return i, false, errStreamMalformed
			}
			switch b[j] {
			case '}':
				c.emit(c.held)
				c.emit(c.rw.tail(&c.st))
				c.emit(b[j : j+1])
				c.held = c.held[:0]
				i, c.stage = j+1, cutRest
				continue
			case ',':
				if c.st.skipComm {
					c.held, c.st.skipComm = c.held[:0], false
				} else {
					c.held = append(c.held, ',')
				}
				i = j + 1
				continue
			case '"':
			default:
				return i, false, errStreamMalformed
			}
			key, v, ok := memberAt(b, j)
			if !ok {
				return c.more(i, final)
			}
			if b[v] == ',' || b[v] == '}' || b[v] == ']' {
				return i, false, errStreamMalformed // a member without a value
			}
			if c.rw.active() && (string(key) == "_meta" || string(key) == "resultType") {
				e := valueEnd(b, v, final)
				if e == scanBad {
					return i, false, errStreamMalformed
				}
				if e < 0 {
					return c.more(i, final)
				}
				if c.rw.OnlyComplete && string(key) == "resultType" && string(b[v:e]) != `"complete"` {
					return i, false, fmt.Errorf("%w: a result of type %s, which the hub must act on, too long to be held", errStreamMalformed, b[v:e])
				}
				c.held = append(c.held, b[j:v]...)
				var keep bool
				c.held, keep = c.rw.member(c.held, key, b[v:e], &c.st)
				i, c.sep[lvResult] = e, sepValue
				if !keep {
					c.held = c.held[:0]
					if c.st.members == 0 {
						c.st.skipComm = true
					}
					continue
				}
				c.emit(c.held)
				c.held = c.held[:0]
				c.st.members++
				continue
			}
			c.emit(c.held)
			c.held = c.held[:0]
			c.st.members++
			i = j
			if isContentKey(key) && b[v] == '[' {
				c.emit(b[i : v+1])
				i, c.stage, c.sep[lvContent] = v+1, cutContent, sepOpen
				continue
			}
			if string(key) == "isError" && !c.isErrorSeen {
				e := valueEnd(b, v, final)
				if e == scanBad {
					return i, false, errStreamMalformed
				}
				if e < 0 {
					return c.more(i, final)
				}
				c.isErrorSeen, c.isError = true, string(b[v:e]) == "true"
				c.emit(b[i:e])
				i, c.sep[lvResult] = e, sepValue
				continue
			}
			c.emit(b[i:v])
			i = c.pass(b, v, cutMember)
		case cutInBlock:
			j := rawjson.SkipSpace(b, i)
			if j >= len(b) {
				return c.more(i, final)
			}
			if !c.next(lvBlock, b[j]) {
				return i, false, errStreamMalformed
			}
			switch b[j] {
			case '}':
				c.emit(b[i : j+1])
				i, c.stage, c.sep[lvContent] = j+1, cutContent, sepValue
				continue
			case ',':
				c.emit(b[i : j+1])
				i = j + 1
				continue
			case '"':
			default:
				return i, false, errStreamMalformed
			}
			key, v, ok := memberAt(b, j)
			if !ok {
				return c.more(i, final)
			}
			if b[v] == ',' || b[v] == '}' || b[v] == ']' {
				return i, false, errStreamMalformed // a member without a value
			}
			if bytes.IndexByte(key, '\\') >= 0 || bytes.EqualFold(key, []byte("type")) {
				// A second type, after bytes already forwarded: the
				// whole line would have been rewritten.
				return i, false, fmt.Errorf("%w: a content block with a type member after its text", errStreamMalformed)
			}
			c.emit(b[i:v])
			i = c.pass(b, v, cutInBlock)
		case cutValue:
			n := i + rawjson.TextCut(b[i:], final)
			e := c.scan(b, i, n)
			if e == scanBad {
				return i, false, errStreamMalformed
			}
			if e < 0 {
				c.emit(b[i:n])
				return c.more(n, final)
			}
			c.emit(b[i:e])
			i, c.stage = e, c.parent
			c.sep[level(c.parent)] = sepValue
		case cutContent:
			j := rawjson.SkipSpace(b, i)
			if j >= len(b) {
				return c.more(i, final)
			}
			if !c.next(lvContent, b[j]) {
				return i, false, errStreamMalformed
			}
			switch b[j] {
			case ']':
				c.emit(b[i : j+1])
				i, c.stage, c.sep[lvResult] = j+1, cutMember, sepValue
			case ',':
				c.emit(b[i : j+1])
				i = j + 1
			default:
				c.emit(b[i:j])
				i, c.stage = j, cutBlock
			}
		case cutBlock:
			if e := valueEnd(b, i, final); e >= 0 {
				// The whole block is here: decide it as SanitizeContent does.
				if repl, ok := replaceBlock(b[i:e]); ok {
					c.replaced++
					c.emit(repl)
				} else {
					c.emit(b[i:e])
				}
				i, c.stage, c.sep[lvContent] = e, cutContent, sepValue
				continue
			}
			v, ok := knownBlockHead(b, i)
			if !ok {
				return c.more(i, final) // held until the block is whole
			}
			c.emit(b[i:v])
			i = c.pass(b, v, cutInBlock)
		case cutRest:
			if !final {
				return i, false, nil
			}
			if !restOK(b[i:]) {
				return i, false, fmt.Errorf("%w: after its result", errStreamMalformed)
			}
			c.stage = cutDone
			return len(b), true, c.err
		}
		if c.err != nil {
			return i, false, c.err
		}
	}
}

// more ends a feed that needs more bytes than b holds: an error if there
// are none.
func (c *cutter) more(i int, final bool) (int, bool, error) {
	if final {
		return i, false, fmt.Errorf("%w: it ends in the middle", errStreamMalformed)
	}
	return i, false, c.err
}

// pass starts passing through the value at b[v:], and returns v: the
// cutValue stage goes on from there, back to parent at its end.
func (c *cutter) pass(b []byte, v int, parent int) int {
	c.stage, c.parent = cutValue, parent
	c.depth, c.inStr, c.lit = 0, false, false
	switch b[v] {
	case '"', '{', '[':
	default:
		c.lit = true
	}
	return v
}

// scanBad is what scan returns for a value that is not one.
const scanBad = -2

// scan goes on with the value passed through, over b[i:n], and returns
// the index just past its end, or -1 if it goes on after n (the state is
// then kept for n), or scanBad. A backslash and the byte after it are stepped over
// together, as FixText steps over them (a byte from 0x80 on is stepped
// over on its own), so n, which TextCut chose, never splits one.
func (c *cutter) scan(b []byte, i, n int) int {
	for i < n {
		if c.inStr {
			rest := b[i:n]
			q := bytes.IndexByte(rest, '"')
			limit := rest
			if q >= 0 {
				limit = rest[:q]
			}
			if bs := bytes.IndexByte(limit, '\\'); bs >= 0 {
				i += bs
				if i+1 < n && b[i+1] >= 0x80 {
					i++
				} else {
					i += 2
				}
				continue
			}
			if q < 0 {
				return -1
			}
			i += q + 1
			c.inStr = false
			if c.depth == 0 {
				return i
			}
			continue
		}
		switch ch := b[i]; {
		case c.lit:
			if rawjson.IsSpace(ch) || ch == ',' || ch == '}' || ch == ']' {
				return i
			}
			if !literalByte(ch) {
				return scanBad // a bracket or a quote in a literal
			}
		case ch == '"':
			c.inStr = true
		case ch == '{' || ch == '[':
			c.depth++
		case ch == '}' || ch == ']':
			c.depth--
			if c.depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// memberAt reads the key of the member at b[j] (a quote) and where its
// value starts; ok is false if b ends first.
func memberAt(b []byte, j int) (key []byte, v int, ok bool) {
	e := rawjson.SkipString(b, j+1)
	if e < 0 {
		return nil, 0, false
	}
	k := rawjson.SkipSpace(b, e+1)
	if k >= len(b) || b[k] != ':' {
		return nil, 0, false
	}
	v = rawjson.SkipSpace(b, k+1)
	if v >= len(b) {
		return nil, 0, false
	}
	return b[j+1 : e], v, true
}

// valueEnd returns the index just past the value at b[v:], or -1 if it
// goes on after b (a literal at the very end may, unless final), or
// scanBad for a literal with a bracket or a quote in it (which a reader
// counting brackets, as the whole line's is, would read otherwise).
func valueEnd(b []byte, v int, final bool) int {
	e := rawjson.SkipValue(b, v)
	switch b[v] {
	case '"', '{', '[':
		return e
	}
	if e == len(b) && !final {
		return -1
	}
	if e < 0 {
		return e
	}
	for _, ch := range b[v:e] {
		if !literalByte(ch) {
			return scanBad
		}
	}
	return e
}

// literalByte reports whether ch may be part of a literal (true, -1.5e3).
func literalByte(ch byte) bool {
	return 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '.' || ch == '+' || ch == '-'
}

// knownBlockHead reads the head of the content block at b[i] (an object
// that does not end in b) and returns where the value of its first
// member that does not end in b starts, if the members before it show
// the block's type, one go-sdk knows, as SanitizeContent reads it (see
// knownBlockAt): then the block may go on while it arrives.
func knownBlockHead(b []byte, i int) (int, bool) {
	if b[i] != '{' {
		return 0, false
	}
	known := false
	j := i + 1
	for {
		j = rawjson.SkipSpace(b, j)
		if j >= len(b) || b[j] != '"' {
			return 0, false
		}
		key, v, ok := memberAt(b, j)
		if !ok || bytes.IndexByte(key, '\\') >= 0 {
			return 0, false
		}
		e := valueEnd(b, v, false)
		if bytes.EqualFold(key, []byte("type")) {
			if e < 0 {
				return 0, false
			}
			val := b[v:e]
			if len(val) < 2 || val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 || !knownContent(val[1:len(val)-1]) {
				return 0, false
			}
			known = true
		}
		if e < 0 {
			return v, known
		}
		j = rawjson.SkipSpace(b, e)
		if j >= len(b) || b[j] != ',' {
			return 0, false
		}
		j++
	}
}

// restOK reports whether b, what follows the result in the server's
// line, ends the message without a member that would have changed how
// the whole line was read (a second id or result, an error, a method).
func restOK(b []byte) bool {
	i := 0
	for {
		i = rawjson.SkipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		key, v, ok := memberAt(b, i)
		if !ok {
			return false
		}
		switch string(key) {
		case "id", "result", "error", "method":
			return false
		}
		if i = rawjson.SkipValue(b, v); i < 0 {
			return false
		}
	}
}

// A Forward is one answer forwarded to the host while it arrives, as a
// server's reader starts it once the call has let it: see the top of
// this file.
type Forward struct {
	// Link is the call's: its Stream takes the answer, its Stamp goes
	// in the result for a host at 2026-07-28 or later.
	Link *Link
	// Rewrite is what changes in the result's members on the way.
	Rewrite Rewrite
	// Fail turns the cause of a failure in the middle of the answer (the
	// server stalled, ended, or sent a line too long or malformed) into
	// the error the call ends with.
	Fail func(cause error) error
	// Stall bounds a pause of the server in the middle of the answer.
	Stall time.Duration
	// EndError says why the server's output ended, if it ends in the
	// middle of the answer.
	EndError func() error
}

// StreamHead reports whether the line r has begun to return as head (a
// long line, not ended: LineReader.Partial) may be forwarded while it
// arrives: its head came in at most maxHeadReads reads, and shows an id
// before a "result" whose value is an object. It returns the id, as
// sent, and where the result begins in head.
func StreamHead(r *LineReader, head []byte) (id []byte, start int, ok bool) {
	if r.HeadReads() > maxHeadReads {
		return nil, 0, false
	}
	return streamHead(head)
}

// A cutStream is one answer being forwarded while it arrives: the
// server's reader feeds it, and the stall timer may cut it short.
type cutStream struct {
	to   *StreamTo
	fail func(error) error

	mu       sync.Mutex // held while writing; guards the fields below
	ended    bool
	cut      cutter
	replaced int // content blocks replaced in a whole answer
}

// abort cuts the answer short, once, and fails the call with cause: the
// host's side ends the line (see StreamTo.Done).
func (s *cutStream) abort(cause error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	s.cut.flush()
	c := &s.cut
	s.to.InText = c.stage == cutValue && c.parent == cutInBlock && c.inStr && c.depth == 0
	s.mu.Unlock()
	s.to.Done.StreamDone(0, false, s.fail(cause))
}

// finish ends the host's line after a whole answer and finishes the
// call. Called with s.mu held, which it releases.
func (s *cutStream) finish() {
	s.ended = true
	s.cut.raw([]byte("}\n"))
	s.cut.flush()
	err := s.cut.err
	s.to.Out.EndLine()
	s.replaced = s.cut.replaced
	s.mu.Unlock()
	if err != nil {
		// The host's side failed to take the answer: its writer says so to
		// every later write; the call ends with the failure.
		s.to.Done.StreamDone(0, false, s.fail(err))
		return
	}
	s.to.Done.StreamDone(s.cut.size, s.cut.isError, nil)
}

// Run forwards the answer whose head r returned (head[start:] is its
// result, see StreamHead) to f.Link's Stream, and finishes the call
// through it, however the answer ends. It returns the content blocks of
// unknown types it replaced in a whole answer, for the caller's log, and
// r's error if the input ended in the middle of the line.
func (f *Forward) Run(r *LineReader, head []byte, start int) (replaced int, err error) {
	s := &cutStream{to: f.Link.Stream, fail: f.Fail}
	rw := f.Rewrite
	rw.stamp = f.Link.Stamp
	s.cut.rw = rw
	s.cut.emitTo = s.to.Out.LinePart
	if err := s.to.Out.BeginLine(); err != nil {
		r.Skip()
		s.ended = true
		s.to.Done.StreamDone(0, false, s.fail(err))
		return 0, nil
	}
	s.to.Begun = true
	s.cut.raw(AnswerHead(s.to.ID))
	stall := f.Stall
	timer := time.AfterFunc(stall, func() {
		s.abort(fmt.Errorf("%w: no bytes for %v", errStreamStalled, stall))
	})
	defer timer.Stop()
	b, off, final := head[start:], start, false
	for {
		s.mu.Lock()
		if s.ended {
			s.mu.Unlock()
			if !final {
				r.Skip()
			}
			return s.replaced, nil
		}
		used, done, err := s.cut.feed(b, final)
		if done {
			s.finish()
			return s.replaced, nil
		}
		s.mu.Unlock()
		if err != nil {
			if !final {
				r.Skip()
			}
			s.abort(err)
			return 0, nil
		}
		timer.Reset(stall)
		chunk, ended, rerr := r.Rest(off + used)
		timer.Stop() // if it fired while Rest read, the stream has ended: see the top
		switch {
		case errors.Is(rerr, errLineTooLong):
			s.abort(fmt.Errorf("%w: its answer is longer than %d bytes", errStreamMalformed, r.limit))
			return 0, nil
		case rerr != nil && !ended:
			// The input ended: what was read is all there is.
			s.mu.Lock()
			if !s.ended {
				if _, done, _ := s.cut.feed(chunk, true); done {
					s.finish()
					return s.replaced, rerr
				}
			}
			s.mu.Unlock()
			s.abort(f.EndError())
			return 0, rerr
		}
		b, off, final = chunk, 0, ended
	}
}
