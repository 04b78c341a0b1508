package upstream

import (
	"context"

	"github.com/junction-mcp/junction"
)

// streamOf is the parent of the context of a request junction makes to a
// host (sampling, elicitation) on behalf of an upstream: it is the host
// call's context, whose values tell go-sdk's Streamable HTTP server to
// send the request on the response stream of the host's call, as the
// spec asks of a request related to a call.
//
// Once the host's call is over, its values are gone. A host that
// cancelled its call has closed that stream (go-sdk's client does, with
// the POST), and when the request to the host is then cancelled, go-sdk
// sends its notifications/cancelled with the values of the request's
// context, so to the closed stream: the server drops it, and the host's
// handler never learns (docs/reports/go-sdk-cancel.md). Without the
// values, the notification goes on the host session's standalone stream,
// which the host reads. Cancellation and deadline are the host call's.
type streamOf struct {
	context.Context // the host call's context
}

func (c streamOf) Value(key any) any {
	if c.Context.Err() != nil {
		return nil
	}
	return c.Context.Value(key)
}

// hostsCalls returns, for each host session with calls in flight that
// pass include, the one to reach that host through: the best by better.
// s.mu must be held.
func (s *Server) hostsCalls(include func(*call) bool) []*call {
	best := make(map[junction.Host]*call)
	var order []junction.Host
	for _, c := range s.calls.all() {
		if c.host == nil || !include(c) {
			continue
		}
		if b, ok := best[c.host]; !ok {
			order = append(order, c.host)
			best[c.host] = c
		} else if better(c, b) {
			best[c.host] = c
		}
	}
	out := make([]*call, len(order))
	for i, h := range order {
		out[i] = best[h]
	}
	return out
}

// better reports whether a message the upstream sends about no call in
// particular (a log message, a request under protocols before
// 2026-07-28) should reach their common host through a rather than b: a
// call the host has not ended rather than one it has, then the later
// one. A go-sdk host closes a cancelled call's stream at once and tells
// the hub afterwards, and may start its next call in between; the later
// call's stream is the one it still reads.
func better(a, b *call) bool {
	if aLive, bLive := a.hostCtx.Err() == nil, b.hostCtx.Err() == nil; aLive != bLive {
		return aLive
	}
	return a.seq > b.seq
}
