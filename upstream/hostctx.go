package upstream

import "context"

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
