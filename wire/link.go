package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// A Link is what a host connection tells a server connection about one
// call it forwards: the batches its lines belong to, and how the host
// takes an answer while it arrives. It rides in the call's context: a
// host connection's record of a call embeds a Link and is the call's
// context itself (one allocation for both), answering [Link.Value] for
// the Link's key; [LinkOf] finds it.
type Link struct {
	// From is the batch of the goroutine that read the host's request,
	// while it starts the call: the request to the server is queued
	// there. Via is the batch of the goroutine that read the server's
	// answer, while it hands the answer over: the answer to the host is
	// queued there. Each is set only while its goroutine runs the call's
	// code (a call finished elsewhere, on a timer say, writes at once).
	// Only code that goroutine runs may use them: a RawStarter's done
	// called within the delivery may, a goroutine that the delivery
	// wakes (a caller blocked in CallToolRaw) must not; one that then
	// answers the host for a started call clears Via first, as the host's
	// side cannot tell which goroutine it runs on.
	From, Via atomic.Pointer[Batch]

	// Stream, if not nil, takes the call's answer while it arrives (see
	// cutthrough.go); set before the call starts.
	Stream *StreamTo

	// Stamp is the hub's serverInfo as JSON when the host is at
	// 2026-07-28 or later, for the answer (see Rewrite); nil for an older
	// host. Set before the call starts. A server connection that rewrites
	// the result anyway (a server of 2026-07-28 names itself in it) puts
	// the stamp in with the same pass, and sets Stamped: the host's side
	// stamps a result only if it is not.
	Stamp   []byte
	Stamped atomic.Bool

	// Request is what the host's side read of the host's request, so
	// that the server's side need not read the params again (see
	// RequestOf); nil if it kept nothing. Set before the call starts.
	Request *HostRequest
}

// HostRequest is what the host's side read of a tools/call it forwards.
// It holds for the params it was read from and no others: a layer on the
// way that rewrites them (the tasks extension's members taken out, say)
// hands on a copy, for which [RequestOf] finds none.
type HostRequest struct {
	// Params are the call's params as the host's side handed them on:
	// an object whose first member is not _meta.
	Params []byte
	// Meta is their _meta (ReadMeta), its values bytes of Params or of
	// an equal _meta that nothing changes, and OtherMeta whether it has
	// members Meta does not name. MetaAt, if not zero, is where the
	// _meta member is in Params, its leading comma included.
	Meta      Meta
	OtherMeta bool
	MetaAt    [2]int
	// Retry: the params answer input requests (inputResponses,
	// requestState).
	Retry bool
	// Clean: Params, but for the _meta member at MetaAt, are clean text
	// as they are (rawjson.CleanText), as the host's side learned while
	// checking them.
	Clean bool
}

// RawMeta returns the request's _meta as sent, or nil if it has none.
func (r *HostRequest) RawMeta() []byte {
	if r.MetaAt == [2]int{} {
		return nil
	}
	return r.Params[r.MetaAt[0]+len(`,"_meta":`) : r.MetaAt[1]]
}

// RequestOf returns what the host's side read of the request whose
// params a server's side was handed, from the Link ctx carries: nil if
// there is none, or if params are not the Request's Params (the same
// bytes, not an equal copy).
func RequestOf(ctx context.Context, params []byte) *HostRequest {
	return LinkOf(ctx).RequestFor(params)
}

// RequestFor is RequestOf for the Link l (nil: none), for a caller that
// has it.
func (l *Link) RequestFor(params []byte) *HostRequest {
	if l == nil || l.Request == nil {
		return nil
	}
	r := l.Request
	if len(params) == 0 || len(params) != len(r.Params) || &params[0] != &r.Params[0] {
		return nil
	}
	return r
}

type linkKey struct{}

// Value returns l when key is the key a context carries a Link under,
// else nil: the Value method of a context type that carries a Link
// calls it first.
func (l *Link) Value(key any) any {
	if _, ok := key.(linkKey); ok {
		return l
	}
	return nil
}

// WithLink returns a child of ctx that carries l, for a caller whose
// context is not a Link's own.
func WithLink(ctx context.Context, l *Link) context.Context {
	return context.WithValue(ctx, linkKey{}, l)
}

// LinkOf returns the Link ctx carries, or nil.
func LinkOf(ctx context.Context) *Link {
	l, _ := ctx.Value(linkKey{}).(*Link)
	return l
}

// AppendParams appends params with its _meta member replaced by one
// holding meta (no _meta if meta is empty). hr, if not nil, is what the
// host's side read of params (RequestOf): its _meta member, if it has
// one, is cut out where hr says, without reading params again.
func AppendParams(line []byte, params json.RawMessage, meta []byte, hr *HostRequest) []byte {
	if hr != nil {
		// params are an object whose first member is not _meta.
		line = append(line, '{')
		if len(meta) > 0 {
			line = append(line, `"_meta":{`...)
			line = append(line, meta...)
			line = append(line, "},"...)
		}
		if at := hr.MetaAt; at != [2]int{} {
			line = append(line, params[1:at[0]]...)
			return append(line, params[at[1]:]...)
		}
		return append(line, params[1:]...)
	}
	params = bytes.TrimSpace(params)
	if !rawjson.Contains(params, []byte(`"_meta"`)) && len(params) >= 2 {
		// The common case: splice the _meta in front of the members.
		if len(meta) == 0 {
			return append(line, params...)
		}
		line = append(line, `{"_meta":{`...)
		line = append(line, meta...)
		line = append(line, '}')
		if rest := bytes.TrimSpace(params[1:]); len(rest) > 0 && rest[0] != '}' {
			line = append(line, ',')
		}
		return append(line, params[1:]...)
	}
	line = append(line, '{')
	first := true
	if len(meta) > 0 {
		line = append(line, `"_meta":{`...)
		line = append(line, meta...)
		line = append(line, '}')
		first = false
	}
	rawjson.ObjectSpans(params, func(key []byte, start, end int) {
		if string(key) == "_meta" {
			return
		}
		if !first {
			line = append(line, ',')
		}
		first = false
		line = append(line, '"')
		line = append(line, key...)
		line = append(line, `":`...)
		line = append(line, params[start:end]...)
	})
	return append(line, '}')
}
