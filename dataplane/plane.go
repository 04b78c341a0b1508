package dataplane

import (
	"log/slog"

	"github.com/junction-mcp/junction"
)

// Options configure a [Plane]. A nil *Options is the same as a zero one.
type Options struct {
	// NoRaw sends every request through go-sdk's server, tools/call
	// included: hosts get the same answers, at several times the cost
	// (junction serve -fast-path=false). For comparison and as a way out.
	NoRaw bool

	// Logger receives the plane's records (frames from hosts that were
	// rejected). Nil discards them.
	Logger *slog.Logger
}

// A Plane serves one [junction.View] to hosts: over stdio
// ([Plane.ServeStdio]), Streamable HTTP ([Plane.HTTPHandler]) and the
// legacy HTTP+SSE transport ([Plane.SSEHandler]). Make one per view; it
// is safe for concurrent use, and serves any number of connections.
type Plane struct {
	v      *junction.View
	raw    bool
	logger *slog.Logger
}

// New returns the plane of v. It installs on v's go-sdk server the
// sending middleware that puts log messages and requests for a raw call's
// host on that call's own HTTP response (see [Plane.HTTPHandler]).
func New(v *junction.View, opts *Options) *Plane {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	v.Server().AddSendingMiddleware(divertToStream)
	return &Plane{v: v, raw: !o.NoRaw, logger: o.Logger}
}

// View returns the view the plane serves.
func (p *Plane) View() *junction.View { return p.v }
