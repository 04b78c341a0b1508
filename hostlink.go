package junction

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A source sends the host of a call a log message or progress with [Log]
// and [NotifyProgress], which reach the host one of two ways:
//
//   - through the call's [HostLink], when the data plane answers the
//     host's request itself and the request needs what no session
//     carries: a 2026-07-28 request names its own log level in its _meta,
//     and over HTTP a request may have no session at all (2026-07-28, or
//     an older client's in stateless mode);
//   - otherwise through the host's go-sdk session (the request's Session,
//     or [HostSession] of a raw call's context), as before.

// HostLink reaches the host of one request that the data plane answers
// itself. The data plane puts it in the call's context ([WithHostLink]).
type HostLink interface {
	// Notify sends the host a notification about the request
	// (notifications/message, notifications/progress) where the host
	// reads the request's answer: the connection over stdio, the call's
	// response stream over HTTP. It fails once the request is answered.
	Notify(method string, params mcp.Params) error
	// LogLevel returns the log level the request named in its _meta
	// (io.modelcontextprotocol/logLevel), and false when it named none.
	LogLevel() (mcp.LoggingLevel, bool)
}

type hostLinkKey struct{}

// WithHostLink returns ctx carrying l, the link to the host of the
// request ctx is the call's context of.
func WithHostLink(ctx context.Context, l HostLink) context.Context {
	return context.WithValue(ctx, hostLinkKey{}, l)
}

// HostLinkOf returns the host link ctx carries, or nil.
func HostLinkOf(ctx context.Context) HostLink {
	l, _ := ctx.Value(hostLinkKey{}).(HostLink)
	return l
}

// Log sends the log message p, about the call whose context is ctx, to
// its host:
//
//   - when the request named its own log level (the call's HostLink's
//     LogLevel), on the request's answer if p's level is that level or
//     above it (a level MCP does not name lets nothing through);
//   - otherwise through ss, the host's session (nil: none), which sends
//     it if p's level is at or above the level the host set;
//   - with neither, nowhere: the host asked for no log messages.
func Log(ctx context.Context, ss *mcp.ServerSession, p *mcp.LoggingMessageParams) error {
	if l := HostLinkOf(ctx); l != nil {
		if level, ok := l.LogLevel(); ok {
			want, wantKnown := levelRank[level]
			rank, known := levelRank[p.Level]
			if !known || !wantKnown || rank < want {
				return nil
			}
			return l.Notify("notifications/message", p)
		}
	}
	if ss == nil {
		return nil
	}
	return ss.Log(ctx, p)
}

// NotifyProgress sends the progress p, about the call whose context is
// ctx, to its host: through the call's HostLink if it has one, otherwise
// through ss, the host's session; with neither (nil ss), nowhere.
func NotifyProgress(ctx context.Context, ss *mcp.ServerSession, p *mcp.ProgressNotificationParams) error {
	if l := HostLinkOf(ctx); l != nil {
		return l.Notify("notifications/progress", p)
	}
	if ss == nil {
		return nil
	}
	return ss.NotifyProgress(ctx, p)
}
