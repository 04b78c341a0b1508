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
//   - otherwise through the host's session, the [Host] the request's
//     context names ([HostSession]): go-sdk's session, or a front's own
//     (over stdio, the data plane's, which keeps the log level the host
//     set and writes the connection's lines itself).

// HostLink reaches the host of one request that the data plane serves
// itself, from the request's context ([WithHostLink]).
type HostLink interface {
	// Notify sends the host a notification (notifications/message,
	// notifications/progress) where the host reads the request's answer
	// (the connection over stdio, the call's response stream over HTTP),
	// and fails once the request is answered.
	Notify(method string, params mcp.Params) error
	// LogLevel returns the log level the request named in its _meta
	// (io.modelcontextprotocol/logLevel), or else the one its session
	// set, and false when there is none.
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
//     LogLevel), through that link, if p's level is that level or above
//     it (a level MCP does not name lets nothing through);
//   - otherwise through ss, the host's session (nil: none), which sends it
//     if p's level is at or above the level the host set;
//   - with neither, nowhere: the host asked for no log messages.
func Log(ctx context.Context, ss Host, p *mcp.LoggingMessageParams) error {
	if l := HostLinkOf(ctx); l != nil {
		if level, ok := l.LogLevel(); ok {
			if !LevelPasses(p.Level, level) {
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

// LevelPasses reports whether a log message at level passes a host's
// filter at want: level is want or less verbose. A level MCP does not
// name passes nothing, and nothing passes a filter at such a level.
func LevelPasses(level, want mcp.LoggingLevel) bool {
	w, wantKnown := levelRank[want]
	r, known := levelRank[level]
	return known && wantKnown && r >= w
}

// NotifyProgress sends the progress p, about the call whose context is
// ctx, to its host: through the call's HostLink if it has one, otherwise
// through ss, the host's session; with none (nil ss), nowhere.
func NotifyProgress(ctx context.Context, ss Host, p *mcp.ProgressNotificationParams) error {
	if l := HostLinkOf(ctx); l != nil {
		return l.Notify("notifications/progress", p)
	}
	if ss == nil {
		return nil
	}
	return ss.NotifyProgress(ctx, p)
}
