package wire

import (
	"bytes"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// A Rewrite is what a tools/call result needs on its way from a server to
// a host where one of them is at protocol 2026-07-28 or later: results of
// that revision name the server that produced them (the
// io.modelcontextprotocol/serverInfo member of _meta) and say their type
// ("resultType"). The hub strips the server's and, for a host of that
// revision, puts its own. Only members of the result object change, and
// everything else, white space included, stays as it is: a result
// rewritten whole (StripServerFields, ModernResult) and one rewritten
// while it arrives (cutthrough.go) read the same, byte for byte.
//
// A member that goes takes the comma before it with it, or, for the
// first member, the comma after it; the white space between them goes
// too. Members the hub adds come last, just before the closing brace.
type Rewrite struct {
	// Strip is set when the server is at 2026-07-28 or later: its
	// serverInfo goes from _meta (and an _meta left empty goes), and so
	// does a resultType of "complete", which hosts before 2026-07-28 do
	// not know. Other result types ("input_required") stay.
	Strip bool
	// OnlyComplete is set when only a complete result can go to the host
	// as it is: one of another type is for the hub to act on (it asks a
	// host before 2026-07-28 for the input the server wants), so it
	// cannot be forwarded while it arrives.
	OnlyComplete bool
	// stamp is the hub's serverInfo as JSON, for a host at 2026-07-28 or
	// later: it goes first in _meta (replacing the server's), and a
	// result without a resultType gets "complete". The data plane's
	// front sets it.
	stamp []byte
	// content: the walk also looks for content blocks that
	// SanitizeContent would replace (ServerResult), so that a result
	// from a server is walked once.
	content bool
}

// active reports whether rw changes anything.
func (rw *Rewrite) active() bool { return rw.Strip || rw.stamp != nil }

// rewriteState is what a rewrite has seen of a result's members.
type rewriteState struct {
	members  int  // members written
	meta     bool // an _meta object was written
	typed    bool // a resultType was written
	skipComm bool // the first member went: so does the comma after it
	unknown  bool // with Rewrite.content: a content block may need replacing (see unknownTypes)
}

// member appends to dst the value of the result's member key (as sent):
// val itself or val rewritten; keep is false if the member goes.
func (rw *Rewrite) member(dst, key, val []byte, st *rewriteState) (out []byte, keep bool) {
	out, _, keep = rw.memberAt(dst, key, val, 0, st)
	return out, keep
}

// memberAt is member for the value that starts at b[v], read once: its
// end (past it; -1 if it has none) is found by the walk that reads it.
func (rw *Rewrite) memberAt(dst, key, b []byte, v int, st *rewriteState) (out []byte, end int, keep bool) {
	if rw.content && !st.unknown && bytes.IndexByte(key, '\\') >= 0 {
		st.unknown = true
	}
	switch string(key) {
	case "resultType":
		if end = rawjson.SkipValue(b, v); end < 0 {
			return dst, -1, false
		}
		if rw.Strip && string(b[v:end]) == `"complete"` {
			return dst, end, false
		}
		st.typed = true
		return append(dst, b[v:end]...), end, true
	case "_meta":
		if v >= len(b) || b[v] != '{' {
			break // not an object: kept as it is
		}
		out, end, state := rw.meta(dst, b, v)
		switch state {
		case metaGone:
			return dst, end, false
		case metaKept:
			st.meta = true
			return out, end, true
		}
	case "content":
		if rw.content && !st.unknown {
			end, st.unknown = contentAt(b, v)
			if end < 0 {
				return dst, -1, false
			}
			return append(dst, b[v:end]...), end, true
		}
	}
	if end = rawjson.SkipValue(b, v); end < 0 {
		return dst, -1, false
	}
	return append(dst, b[v:end]...), end, true
}

// How meta leaves an _meta.
const (
	metaKept = iota
	metaGone
	metaMalformed
)

// meta appends to dst the object at b[v], the value of a result's _meta,
// without the server's serverInfo and with the hub's first (rw.stamp),
// and returns where the object ends. If the server's serverInfo was all
// it held, the member goes (metaGone), and the hub's comes in tail, as it
// would after StripServerFields; if the value is not a well-formed object
// (metaMalformed), it is kept as it is.
func (rw *Rewrite) meta(dst, b []byte, v int) ([]byte, int, int) {
	mark := len(dst)
	out := append(dst, '{')
	if rw.stamp != nil {
		out = append(out, `"`+mcp.MetaKeyServerInfo+`":`...)
		out = append(out, rw.stamp...)
	}
	n, had := 0, false // the members kept of the value's; whether it named the server
	end := rawjson.WalkObject(b, v, func(k []byte, i int) int {
		e := rawjson.SkipValue(b, i)
		if e < 0 {
			return -1
		}
		if string(k) == mcp.MetaKeyServerInfo {
			had = true
			return e
		}
		if n > 0 || rw.stamp != nil {
			out = append(out, ',')
		}
		n++
		out = append(out, '"')
		out = append(out, k...)
		out = append(out, `":`...)
		out = append(out, b[i:e]...)
		return e
	})
	switch {
	case end < 0:
		return out[:mark], end, metaMalformed
	case !had && rw.stamp == nil:
		return append(out[:mark], b[v:end]...), end, metaKept // nothing to change
	case n == 0 && had && rw.Strip:
		return out[:mark], end, metaGone
	}
	return append(out, '}'), end, metaKept
}

// tail returns the members the hub adds at the end of the result, after
// st's members: for a host at 2026-07-28 or later, its serverInfo in an
// _meta and a resultType of "complete" where the result has none.
func (rw *Rewrite) tail(st *rewriteState) []byte { return rw.appendTail(nil, st) }

// appendTail appends tail's members to dst.
func (rw *Rewrite) appendTail(dst []byte, st *rewriteState) []byte {
	if rw.stamp == nil || st.meta && st.typed {
		return dst
	}
	out := dst
	if !st.meta {
		if st.members > 0 {
			out = append(out, ',')
		}
		out = append(out, `"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
		out = append(out, rw.stamp...)
		out = append(out, '}')
		st.members++
	}
	if !st.typed {
		if st.members > 0 {
			out = append(out, ',')
		}
		out = append(out, `"resultType":"complete"`...)
		st.members++
	}
	return out
}

// apply returns the result res rewritten, or res itself if it is not a
// well-formed object. Its walk of the members is cutter.feed's at the
// result's level, done over the whole result at once.
func (rw *Rewrite) apply(res []byte) []byte {
	out, _ := rw.walk(res)
	return out
}

// walk is apply, and with rw.content it also reports whether a content
// block may need replacing (as unknownTypes does; true too for a result
// it cannot walk).
func (rw *Rewrite) walk(res []byte) (_ []byte, unknown bool) {
	i := rawjson.SkipSpace(res, 0)
	if i >= len(res) || res[i] != '{' {
		return res, true
	}
	out := make([]byte, 0, len(res)+len(rw.stamp)+96)
	out = append(out, res[:i+1]...)
	var st rewriteState
	i++
	held := i      // res[held:] is not written yet: what is between members
	sep := sepOpen // where the object is between members
	for {
		j := rawjson.SkipSpace(res, i)
		if j >= len(res) {
			return res, true
		}
		switch res[j] {
		case '}':
			if sep == sepComma {
				return res, true
			}
			out = append(out, res[held:j]...)
			out = rw.appendTail(out, &st)
			return append(out, res[j:]...), st.unknown
		case ',':
			if sep != sepValue {
				return res, true
			}
			sep, i = sepComma, j+1
			if st.skipComm {
				held, st.skipComm = i, false
			}
			continue
		case '"':
			if sep == sepValue {
				return res, true
			}
		default:
			return res, true
		}
		key, v, ok := memberAt(res, j)
		if !ok {
			return res, true
		}
		mark := len(out)
		out = append(out, res[held:v]...)
		var end int
		var keep bool
		out, end, keep = rw.memberAt(out, key, res, v, &st)
		if end < 0 {
			return res, true
		}
		sep, i, held = sepValue, end, end
		if !keep {
			out = out[:mark]
			if st.members == 0 {
				st.skipComm = true
			}
			continue
		}
		st.members++
	}
}

// StripServerFields returns a tools/call result from a server at
// 2026-07-28 or later as a host before it reads it (see [Rewrite.Strip]).
// res is returned as it is when there is nothing to strip.
func StripServerFields(res []byte) []byte {
	if !rawjson.Contains(res, []byte(`"resultType"`)) && !rawjson.Contains(res, []byte(`"`+mcp.MetaKeyServerInfo+`"`)) {
		return res
	}
	rw := Rewrite{Strip: true}
	return rw.apply(res)
}

// ServerResult returns a whole tools/call result from a server at
// 2026-07-28 or later as the host of the call l links reads it (l nil:
// no host link): the server's own members out, as StripServerFields
// takes them, and, for a host of that revision too (l.Stamp), the hub's
// in, as ModernResult puts them. Content blocks of unknown types are
// replaced as SanitizeContent replaces them (the count is returned). The
// two rewrites touch different members, so their order does not matter.
//
// shape is what the reader of the answer line learned of res (ResultAt;
// UnknownShape when nothing is). For the common result (no blocks to
// replace, and an _meta that holds the server's serverInfo alone) the
// server's members go in place, with the bytes of res moved, and no
// walk; the hub's stamp is then left to the host's side, as for an older
// server's result (ModernResult). Otherwise res is walked once, for all
// three, and l.Stamped is set when the stamp went in. The facts are
// those that hold of what it returns (zero after a walk).
func ServerResult(res []byte, l *Link, shape ResultShape) ([]byte, int, junction.ResultFacts) {
	if !shape.Unknown() && shape.members >= 0 {
		return shape.strip(res), 0, shape.Facts(true)
	}
	rw := Rewrite{Strip: true, content: shape.Unknown()}
	if l != nil && l.Stamp != nil {
		l.Stamped.Store(true)
		rw.stamp = l.Stamp
	}
	out, unknown := rw.walk(res)
	if !unknown {
		return out, 0, 0
	}
	out, n := sanitizeFull(out)
	return out, n, 0
}

// ModernResult returns a tools/call result for a host at 2026-07-28 or
// later: with impl, the hub's serverInfo, in its _meta, and a resultType.
// facts are what the source learned of res (zero: nothing).
func ModernResult(res []byte, impl []byte, facts junction.ResultFacts) []byte {
	if out, ok := stampPlain(res, impl, facts); ok {
		return out
	}
	rw := Rewrite{stamp: impl}
	return rw.apply(res)
}

// ModernAnswerLine is AnswerLine(id, ModernResult(res, impl), nil), the
// answer line for a host at 2026-07-28 or later, made in one allocation
// for the common result (see stampPlain).
func ModernAnswerLine(id, res, impl []byte, facts junction.ResultFacts) []byte {
	return AppendModernAnswer(make([]byte, 0, ModernAnswerSize(id, res, impl)), id, res, impl, facts)
}

// AppendModernAnswer appends ModernAnswerLine's line to dst.
func AppendModernAnswer(dst, id, res, impl []byte, facts junction.ResultFacts) []byte {
	head := len(dst)
	dst = appendAnswerHead(dst, id)
	if out, ok := appendStampPlain(dst, res, impl, facts); ok {
		return append(out, "}\n"...)
	}
	return AppendAnswer(dst[:head], id, ModernResult(res, impl, 0), nil)
}

// ModernAnswerSize is the length of ModernAnswerLine's line, about.
func ModernAnswerSize(id, res, impl []byte) int {
	return AnswerSize(id, res) + len(impl) + stampRoom
}

// stampRoom is what stampPlain adds to a result besides impl.
const stampRoom = len(`,"_meta":{"` + mcp.MetaKeyServerInfo + `":},"resultType":"complete"`)

// stampPlain is ModernResult for the common result, an object in which
// neither "_meta" nor "resultType" appears at all, or, as its source
// found (junction.ResultUntyped), none of whose members is named so: the
// two members go before its closing brace, found from the end, without
// a walk of its members. For a well-formed object the bytes are those
// of the walk (apply); false for any other result, which the walk takes.
func stampPlain(res, impl []byte, facts junction.ResultFacts) ([]byte, bool) {
	return appendStampPlain(make([]byte, 0, len(res)+len(impl)+stampRoom), res, impl, facts)
}

// appendStampPlain is stampPlain appending to dst; on false, dst is
// returned as it was.
func appendStampPlain(dst, res, impl []byte, facts junction.ResultFacts) ([]byte, bool) {
	if !facts.Has(junction.ResultUntyped) && (rawjson.Contains(res, []byte(`"_meta"`)) || rawjson.Contains(res, []byte(`"resultType"`))) {
		return dst, false
	}
	start, end := rawjson.SkipSpace(res, 0), len(res)
	for end > start && rawjson.IsSpace(res[end-1]) {
		end--
	}
	if end-start < 2 || res[start] != '{' || res[end-1] != '}' {
		return dst, false
	}
	closing := end - 1
	out := append(dst, res[:closing]...)
	if rawjson.SkipSpace(res, start+1) < closing {
		out = append(out, ',') // after the result's own members
	}
	out = append(out, `"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
	out = append(out, impl...)
	out = append(out, `},"resultType":"complete"`...)
	return append(out, res[closing:]...), true
}
