package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// knownContent reports whether t is a content block type go-sdk's client
// decodes. A switch: it is asked of every block of every result.
func knownContent[T string | []byte](t T) bool {
	switch string(t) {
	case "text", "image", "audio", "resource_link", "resource":
		return true
	}
	return false
}

// Content blocks of types go-sdk does not know. go-sdk's client fails a
// whole tool call on one such block, so results from servers are
// rewritten where they are read (a stdio server's stdout, an HTTP
// server's responses, a raw call's result): such a block becomes a text
// block naming the type, with the original kept in its _meta.

// SanitizeContent replaces content blocks of a type go-sdk does not know
// in a result's top-level "content" array with a text block naming the
// type (the original block is kept in its _meta). It returns the new
// result and how many blocks it replaced; with none replaced the result
// is returned unchanged, after a scan that costs one pass over it.
func SanitizeContent(result json.RawMessage) (json.RawMessage, int) {
	if !rawjson.Contains(result, []byte(`"content"`)) || !unknownTypes(result) {
		return result, 0
	}
	return sanitizeFull(result)
}

// ResultAt reads the value at b[i] (its first byte, past any white space)
// as the result of a tools/call, where the reader of an answer line would
// skip it. It returns where the value ends, as rawjson.SkipValue finds it
// (-1: it has none), and the result's shape: what the one walk that finds
// the end learned of it, so that the result needs no second one: whether
// SanitizeContent could change it (Unknown), and where ServerResult finds
// the members a server of 2026-07-28 adds. seen, if not nil, is the
// reader's memory of the server's _meta (see [ServerMeta]).
func ResultAt(b []byte, i int, seen *ServerMeta) (end int, shape ResultShape) {
	end = rawjson.WalkObject(b, i, func(key []byte, v int) int {
		var end int
		drop := false
		switch string(key) {
		case "content":
			var u bool
			end, u = contentAt(b, v)
			shape.unknown = shape.unknown || u
		case "resultType":
			end = rawjson.SkipValue(b, v)
			drop = end >= 0 && string(b[v:end]) == `"complete"`
			shape.typed = shape.typed || !drop
			shape.named, shape.namedKept = true, shape.namedKept || !drop
		case "isError":
			end = rawjson.SkipValue(b, v)
			if !shape.sawIsError && end >= 0 {
				shape.sawIsError, shape.isError = true, string(b[v:end]) == "true"
			}
		case "_meta":
			shape.named = true
			if n := seen.match(b[v:]); n > 0 {
				end, drop = v+n, true
				break
			}
			var mixed bool
			end, drop, mixed = serverMetaAt(b, v)
			if mixed {
				shape.members = -1
			}
			if drop && end > v {
				seen.keep(b[v:end])
			}
			shape.namedKept = shape.namedKept || !drop
		default:
			if bytes.IndexByte(key, '\\') >= 0 {
				shape.unknown = true
				shape.named, shape.namedKept = true, true
			}
			end = rawjson.SkipValue(b, v)
			// encoding/json takes a key for a field whatever its case.
			if len(key) == len("resultType") && bytes.EqualFold(key, []byte("resultType")) && (end < 0 || string(b[v:end]) != `"complete"`) {
				shape.typed = true
			}
		}
		shape.add(end-i, drop)
		return end
	})
	if end < 0 {
		return rawjson.SkipValue(b, i), UnknownShape // not an object: SanitizeContent says
	}
	shape.walked = true
	return end, shape
}

// A ResultShape is what the reader of an answer line learned of a
// tools/call result while it found the result's end (ResultAt). The zero
// ResultShape knows nothing (UnknownShape).
type ResultShape struct {
	// walked: ResultAt walked the result, an object, to its end; the
	// fields below say what it found.
	walked bool
	// unknown: the result may hold content blocks that SanitizeContent
	// replaces.
	unknown bool
	// members is how many of the result's members ends holds, in
	// order; -1 when ServerResult must walk the result again (more
	// members than that, or an _meta that holds more than the server's
	// serverInfo).
	members int8
	// drop has bit k set when member k is one that Rewrite's Strip
	// takes out: a resultType of "complete", or an _meta that holds the
	// server's serverInfo and nothing else.
	drop uint8
	// ends[k] is where member k's value ends, from the result's start.
	ends [6]int32
	// typed: a member's key is resultType, in any case (as
	// encoding/json matches a field), and its value is not "complete".
	typed bool
	// isError: the first member whose key is isError, as sent, is true
	// (sawIsError: there is one).
	isError, sawIsError bool
	// named: a member's key is _meta or resultType as sent, or has an
	// escape; namedKept: one of those is not a member strip takes out.
	named, namedKept bool
}

// Facts returns what the walk learned of the result (see
// junction.ResultFacts), or of what strip makes of it when stripped is
// set.
func (s ResultShape) Facts(stripped bool) junction.ResultFacts {
	if !s.walked {
		return 0
	}
	f := junction.ResultRead
	if s.isError {
		f |= junction.ResultIsError
	}
	if stripped && !s.namedKept || !stripped && !s.named {
		f |= junction.ResultUntyped
	}
	return f
}

// Unknown reports whether the result may hold content blocks that
// SanitizeContent replaces; false: it holds none, and need not be looked
// at again for them.
func (s ResultShape) Unknown() bool { return !s.walked || s.unknown }

// MayAskInput reports whether the result may be one that asks for input
// (resultType "input_required"): false when no member that a decoding of
// it would take for its resultType has a value other than "complete"
// (the result of most calls of a 2026-07-28 server, and of every call of
// an older one, which has none).
func (s ResultShape) MayAskInput() bool { return s.Unknown() || s.typed }

// UnknownShape is the shape of a result nothing is known of, the zero
// ResultShape: ServerResult walks it, and looks at its content blocks.
var UnknownShape ResultShape

// add records the next member of the result, whose value ends at end
// (from the result's start; negative: the walk failed, and ResultAt
// says so). A seventh member, or an end past what ends holds, leaves the
// result to ServerResult's walk.
func (s *ResultShape) add(end int, drop bool) {
	switch k := s.members; {
	case k < 0 || end < 0:
	case int(k) == len(s.ends) || end > math.MaxInt32:
		s.members = -1
	default:
		s.ends[k] = int32(end)
		if drop {
			s.drop |= 1 << k
		}
		s.members++
	}
}

// strip returns res, the result s is the shape of, without the members
// s.drop marks, as Rewrite{Strip: true} writes it: a member that goes
// takes the comma before it with it, or, while no member was kept, the
// comma after it. It moves the bytes in res, and returns a prefix of it.
func (s *ResultShape) strip(res []byte) []byte {
	if s.drop == 0 {
		return res
	}
	// The common case, a 2026-07-28 server's: the members that go are
	// the last ones, after one that stays. They go with the comma before
	// the first of them, and the rest (the closing brace) moves up.
	if j := bits.TrailingZeros8(s.drop); j > 0 && int(s.drop>>j)+1 == 1<<(int(s.members)-j) {
		w, held := int(s.ends[j-1]), int(s.ends[s.members-1])
		return res[:w+copy(res[w:], res[held:])]
	}
	open := rawjson.SkipSpace(res, 0) + 1
	held, w, kept := open, open, false // res[held:] is still to go to res[w:]
	for k := range int(s.members) {
		end := int(s.ends[k])
		if s.drop&(1<<k) == 0 {
			if w != held { // members before the first that goes stay where they are
				copy(res[w:], res[held:end])
			}
			w += end - held
			held, kept = end, true
			continue
		}
		held = end
		if !kept {
			if c := rawjson.SkipSpace(res, end); res[c] == ',' {
				held = c + 1
			}
		}
	}
	if w != held {
		copy(res[w:], res[held:])
	}
	return res[:w+len(res)-held]
}

// serverMetaAt reads the value at b[v] of a result's _meta member and
// returns where it ends (-1: it has none), whether it is an object that
// holds the server's serverInfo and nothing else (Rewrite's Strip takes
// the member out), and whether it is one that holds that and more (the
// Strip rewrites it).
func serverMetaAt(b []byte, v int) (end int, gone, mixed bool) {
	if v >= len(b) || b[v] != '{' {
		return rawjson.SkipValue(b, v), false, false // not an object: kept as it is
	}
	had, others := false, false
	end = rawjson.WalkObject(b, v, func(k []byte, i int) int {
		if string(k) == mcp.MetaKeyServerInfo {
			had = true
		} else {
			others = true
		}
		return rawjson.SkipValue(b, i)
	})
	return end, had && !others, had && others
}

// A ServerMeta is what the reader of one server's answer lines
// remembers of their results' _meta: the last one it found to hold the
// server's serverInfo and nothing else (one ServerResult takes out). A
// server of 2026-07-28 sends the same one with every result, and a value
// that begins with the same bytes is that object, to its end, so
// ResultAt takes it by comparison instead of walking it again. The zero
// ServerMeta remembers nothing; a nil one is never used. It is the
// reader's own: not safe for concurrent use.
type ServerMeta struct {
	last []byte
}

// maxServerMeta bounds the _meta a ServerMeta keeps: a serverInfo is a
// name, a version and perhaps a title or a few icons.
const maxServerMeta = 1 << 10

// match returns the length of the _meta s remembers if b begins with it,
// else 0.
func (s *ServerMeta) match(b []byte) int {
	if s == nil || len(s.last) == 0 || !bytes.HasPrefix(b, s.last) {
		return 0
	}
	return len(s.last)
}

// keep remembers meta, an _meta that holds the server's serverInfo and
// nothing else, in place of the one before (in a copy: meta is in a line
// that ServerResult may move bytes in).
func (s *ServerMeta) keep(meta []byte) {
	if s == nil || len(meta) > maxServerMeta || bytes.Equal(meta, s.last) {
		return
	}
	s.last = append(s.last[:0], meta...)
}

// unknownTypes reports whether the result b may hold a content block
// that sanitizeContent rewrites. It looks only at the blocks' members,
// skipping string contents with IndexByte, and walks the content array
// once (a megabyte of text is one IndexByte pass); true only means the
// full check must run (it is also the answer for anything unusual: escapes
// in keys, a block that is not an object, a result that does not parse).
func unknownTypes(b []byte) bool {
	_, shape := ResultAt(b, 0, nil) // the reader's own check, on a result alone
	return shape.Unknown()
}

// contentAt reads the value at b[v] of a result's content member: it
// returns where the value ends (-1 if it has no end) and whether it may
// hold a block that SanitizeContent would replace (the check
// unknownTypes makes of it: true too for a value that is not an array of
// objects).
func contentAt(b []byte, v int) (end int, unknown bool) {
	if v < len(b) && b[v] == '[' {
		end = rawjson.WalkArray(b, v, func(e int) int {
			end, known := knownBlockAt(b, e)
			if !known {
				unknown = true
				if end < 0 {
					end = rawjson.SkipValue(b, e) // not an object
				}
			}
			return end
		})
		if end >= 0 {
			return end, unknown
		}
	}
	return rawjson.SkipValue(b, v), true
}

// knownBlockAt reports whether the value at b[i:] is an object whose type
// (matched as encoding/json matches a field name) is a known content type,
// and returns the index just past it (-1 if it is not well-formed).
func knownBlockAt(b []byte, i int) (int, bool) {
	known, seen := true, false
	end := rawjson.WalkObject(b, i, func(key []byte, v int) int {
		e := rawjson.SkipValue(b, v)
		if e < 0 {
			return -1
		}
		switch {
		case string(key) == "text":
			// The commonest key besides type, told apart at once.
		case string(key) != "type" && bytes.IndexByte(key, '\\') >= 0:
			known = false
		case string(key) == "type" || bytes.EqualFold(key, []byte("type")):
			seen = true
			val := b[v:e]
			if len(val) < 2 || val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 || !knownContent(val[1:len(val)-1]) {
				known = false
			}
		}
		return e
	})
	return end, end >= 0 && seen && known
}

// sanitizeFull is SanitizeContent without the quick scan. It changes
// nothing but the blocks it replaces (see replaceBlock), in place: the
// other bytes stay as they were, so that an answer forwarded while it
// arrives (see cutthrough.go) can be rewritten block by block and come
// out the same. A result the scanner cannot walk is returned unchanged.
func sanitizeFull(result json.RawMessage) (json.RawMessage, int) {
	type span struct {
		start, end int
		repl       []byte
	}
	var spans []span
	end := rawjson.WalkObject(result, 0, func(key []byte, v int) int {
		if !isContentKey(key) || result[v] != '[' {
			return rawjson.SkipValue(result, v)
		}
		return rawjson.WalkArray(result, v, func(e int) int {
			end := rawjson.SkipValue(result, e)
			if end < 0 {
				return -1
			}
			if repl, ok := replaceBlock(result[e:end]); ok {
				spans = append(spans, span{e, end, repl})
			}
			return end
		})
	})
	if end < 0 || len(spans) == 0 {
		return result, 0
	}
	size := len(result)
	for _, s := range spans {
		size += len(s.repl) - (s.end - s.start)
	}
	out := make([]byte, 0, size)
	last := 0
	for _, s := range spans {
		out = append(out, result[last:s.start]...)
		out = append(out, s.repl...)
		last = s.end
	}
	return append(out, result[last:]...), len(spans)
}

// isContentKey reports whether a member's key (as sent) is "content".
// A key spelled with escapes is not: SanitizeContent's quick check looks
// for the plain spelling, and both ways of forwarding a result must
// agree.
func isContentKey(key []byte) bool { return string(key) == "content" }

// replaceBlock decides one content block b: if go-sdk would not know its
// type (decoded as encoding/json decodes it), it returns the text block
// that replaces it, naming the type and keeping b in its _meta.
func replaceBlock(b []byte) ([]byte, bool) {
	if _, known := knownBlockAt(b, 0); known {
		return nil, false
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(b, &head) != nil || knownContent(head.Type) {
		return nil, false
	}
	text, err := json.Marshal(map[string]any{
		"type":  "text",
		"text":  fmt.Sprintf("[unsupported content type %q]", head.Type),
		"_meta": map[string]any{"junction/original": json.RawMessage(b)},
	})
	if err != nil {
		return nil, false
	}
	return text, true
}

// sanitizeMessage applies sanitizeContent to a JSON-RPC response (or a
// batch of them) in wire form. ok is false when nothing changed.
func sanitizeMessage(b []byte) (out []byte, n int) {
	if !rawjson.Contains(b, []byte(`"content"`)) {
		return b, 0
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return b, 0
		}
		total := 0
		for i, m := range batch {
			fixed, k := sanitizeMessage(m)
			batch[i] = fixed
			total += k
		}
		if total == 0 {
			return b, 0
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return b, 0
		}
		return out, total
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(trimmed, &msg) != nil || msg["result"] == nil {
		return b, 0
	}
	fixed, k := SanitizeContent(msg["result"])
	if k == 0 {
		return b, 0
	}
	msg["result"] = fixed
	out, err := json.Marshal(msg)
	if err != nil {
		return b, 0
	}
	return out, k
}

// maxFixedBody bounds the JSON bodies contentTransport reads whole; larger
// ones pass through untouched.
const maxFixedBody = 32 << 20

// A ContentTransport rewrites HTTP responses from a server so that
// go-sdk can decode tool results holding content of types it does not
// know (see [SanitizeContent]): in application/json bodies and in
// text/event-stream events alike.
type ContentTransport struct {
	Base http.RoundTripper
	// Warn, if not nil, is told how many blocks a response had replaced.
	Warn func(n int)
	// Observe, if not nil, sees every notification read from an event
	// stream, before go-sdk does, as a stdio server's reader observes them
	// (package upstream). stream
	// is the progress token of the request whose response the event
	// stream is (a tools/call's, say), or "" for a stream that answers no
	// request with one (the GET stream) or whose request's body was not
	// read (larger than [maxObservedBody]).
	Observe func(stream, method string, params json.RawMessage)
}

// maxObservedBody bounds the request bodies ContentTransport reads again
// to find their progress token.
const maxObservedBody = 64 << 10

func (t *ContentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 || resp.Body == nil {
		return resp, err
	}
	list := isToolsList(req)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxFixedBody+1))
		if err != nil {
			resp.Body.Close()
			return nil, err
		}
		if len(b) > maxFixedBody {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
			return resp, nil
		}
		resp.Body.Close()
		fixed, n := sanitizeMessage(b)
		if n > 0 {
			t.warned(n)
		}
		if list {
			var k int
			fixed, k = keepAnnotationsMessage(fixed)
			n += k
		}
		if n > 0 {
			b = fixed
			resp.ContentLength = int64(len(b))
			resp.Header.Del("Content-Length")
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	case "text/event-stream":
		f := &sseFixer{body: resp.Body, r: bufio.NewReader(resp.Body), warn: t.warned, list: list}
		if t.Observe != nil {
			stream := requestProgressToken(req)
			f.observe = func(method string, params json.RawMessage) { t.Observe(stream, method, params) }
		}
		resp.Body = f
	}
	return resp, nil
}

// maxListRequest bounds the request bodies isToolsList reads again: a
// tools/list request (a cursor, a progress token) is far smaller.
const maxListRequest = 4 << 10

// isToolsList reports whether req carries a JSON-RPC tools/list request,
// whose response keeps its tools' annotations (see KeepAnnotations).
func isToolsList(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return false
	}
	if m := req.Header.Get("Mcp-Method"); m != "" {
		return m == "tools/list" // 2026-07-28 names it: no body to read again
	}
	if req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxListRequest {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxListRequest))
	if err != nil || !rawjson.Contains(b, []byte(`"tools/list"`)) {
		return false
	}
	var msg struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	return json.Unmarshal(b, &msg) == nil && msg.Method == "tools/list" && msg.ID != nil
}

// keepAnnotationsMessage applies KeepAnnotations to the result of a
// JSON-RPC response in wire form; n is how many tools it marked.
func keepAnnotationsMessage(b []byte) (out []byte, n int) {
	if !rawjson.Contains(b, []byte(`"annotations"`)) {
		return b, 0
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(b, &msg) != nil || msg["result"] == nil {
		return b, 0
	}
	fixed, n := KeepAnnotations(msg["result"])
	if n == 0 {
		return b, 0
	}
	msg["result"] = fixed
	out, err := json.Marshal(msg)
	if err != nil {
		return b, 0
	}
	return out, n
}

// requestProgressToken returns the progress token (a string) in the _meta
// of req's JSON-RPC request, or "".
func requestProgressToken(req *http.Request) string {
	if req.Method != http.MethodPost || req.GetBody == nil || req.ContentLength <= 0 || req.ContentLength > maxObservedBody {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxObservedBody))
	if err != nil {
		return ""
	}
	for _, key := range []string{"params", "_meta", "progressToken"} {
		s, e, ok := rawjson.Member(b, key)
		if !ok {
			return ""
		}
		b = b[s:e]
	}
	var token string
	if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &token) != nil {
		return ""
	}
	return token
}

func (t *ContentTransport) warned(n int) {
	if t.Warn != nil {
		t.Warn(n)
	}
}

// sseFixer rewrites the data of server-sent events as it reads them. An
// event passes through byte for byte unless its data is a JSON-RPC
// response that needs fixing; then it is re-emitted with one data line.
type sseFixer struct {
	body    io.ReadCloser
	r       *bufio.Reader
	warn    func(n int)
	observe func(method string, params json.RawMessage) // nil: nothing to tell
	list    bool                                        // the stream answers a tools/list: keep its annotations
	out     bytes.Buffer                                // rewritten bytes not yet read
	err     error                                       // the underlying reader's error, after out drains
}

func (f *sseFixer) Read(p []byte) (int, error) {
	for f.out.Len() == 0 && f.err == nil {
		f.nextEvent()
	}
	if f.out.Len() > 0 {
		return f.out.Read(p)
	}
	return 0, f.err
}

func (f *sseFixer) Close() error { return f.body.Close() }

// nextEvent reads one event (up to and including its blank line) into out.
func (f *sseFixer) nextEvent() {
	var raw bytes.Buffer
	for {
		line, err := f.r.ReadBytes('\n')
		raw.Write(line)
		trimmed := bytes.TrimRight(line, "\r\n")
		if err != nil {
			f.err = err
			break
		}
		if len(trimmed) == 0 {
			break // end of event
		}
		if raw.Len() > maxFixedBody {
			break // too big to hold: pass it on unchanged
		}
	}
	if _, joined := EventFields(raw.Bytes()); len(joined) > 0 && f.err == nil {
		if f.observe != nil && rawjson.Contains(joined, []byte(`"notifications/`)) {
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(joined, &msg) == nil && msg.ID == nil && msg.Method != "" {
				f.observe(msg.Method, msg.Params)
			}
		}
		fixed, n := sanitizeMessage(joined)
		if n > 0 {
			f.warn(n)
		}
		if f.list {
			var k int
			fixed, k = keepAnnotationsMessage(fixed)
			n += k
		}
		if n > 0 {
			f.out.Write(rewriteEvent(raw.Bytes(), fixed))
			return
		}
	}
	f.out.Write(raw.Bytes())
}

// EventFields returns the name of one server-sent event, given as its
// lines ("message" when it names none), and its data: the values of its
// data lines, joined with LF.
func EventFields(event []byte) (name string, data []byte) {
	name = "message"
	var values [][]byte
	for line := range bytes.Lines(event) {
		field, value, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name = string(value)
		case "data":
			values = append(values, value)
		}
	}
	return name, bytes.Join(values, []byte("\n"))
}

// rewriteEvent returns the event's lines with its data lines replaced by
// one line holding data.
func rewriteEvent(event, data []byte) []byte {
	var out bytes.Buffer
	wrote := false
	for _, line := range bytes.SplitAfter(event, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if bytes.HasPrefix(line, []byte("data:")) {
			if !wrote {
				out.WriteString("data: ")
				out.Write(data)
				out.WriteString("\n")
				wrote = true
			}
			continue
		}
		out.Write(line)
	}
	return out.Bytes()
}
