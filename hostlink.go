package junction

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A source sends the host of a call a log message or progress with [Log]
// and [NotifyProgress], which reach the host one of three ways:
//
//   - through the call's [HostLink], when the data plane answers the
//     host's request itself and the request needs what no session
//     carries: a 2026-07-28 request names its own log level in its _meta,
//     and over HTTP a request may have no session at all (2026-07-28, or
//     an older client's in stateless mode);
//   - otherwise through the session's own HostLink ([LinkSession]), when
//     the data plane reaches the session itself and keeps its log level
//     (a stdio connection);
//   - otherwise through the host's go-sdk session (the request's Session,
//     or [HostSession] of a raw call's context).

// HostLink reaches a host that the data plane serves itself: the host of
// one request, in the request's context ([WithHostLink]), or a host
// session ([LinkSession]).
type HostLink interface {
	// Notify sends the host a notification (notifications/message,
	// notifications/progress): a request's link where the host reads the
	// request's answer (the connection over stdio, the call's response
	// stream over HTTP), and fails once the request is answered; a
	// session's, on the session's connection.
	Notify(method string, params mcp.Params) error
	// LogLevel returns the log level the request named in its _meta
	// (io.modelcontextprotocol/logLevel), or the session's the host set,
	// and false when there is none.
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

// sessionLinks holds the links of the host sessions whose front reaches
// them itself outside a request (see LinkSession), by session.
var sessionLinks sync.Map // Host → HostLink

// LinkSession records l as host session ss's own link: what [Log] and
// [NotifyProgress] send ss with a context that carries no link of a
// request (a source's message when no call of the host is in flight, say,
// or from a request go-sdk's server answers) goes through l, until
// unlink is called, as the session ends. The data plane links its stdio
// connections' sessions, whose log level it keeps (logging/setLevel).
func LinkSession(ss Host, l HostLink) (unlink func()) {
	sessionLinks.Store(ss, l)
	return func() { sessionLinks.CompareAndDelete(ss, l) }
}

// sessionLinkOf returns ss's own link (LinkSession), or nil.
func sessionLinkOf(ss Host) HostLink {
	if ss == nil {
		return nil
	}
	l, _ := sessionLinks.Load(ss)
	hl, _ := l.(HostLink)
	return hl
}

// Log sends the log message p, about the call whose context is ctx, to
// its host:
//
//   - when the request named its own log level (the call's HostLink's
//     LogLevel), or else the host set one on a session linked with
//     [LinkSession], through that link, if p's level is that level or
//     above it (a level MCP does not name lets nothing through);
//   - otherwise through ss, the host's go-sdk session (nil: none), which
//     sends it if p's level is at or above the level the host set;
//   - with neither, nowhere: the host asked for no log messages.
func Log(ctx context.Context, ss Host, p *mcp.LoggingMessageParams) error {
	for _, l := range [...]HostLink{HostLinkOf(ctx), sessionLinkOf(ss)} {
		if l == nil {
			continue
		}
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
// through ss's own link ([LinkSession]) or ss, the host's session; with
// none (nil ss), nowhere.
func NotifyProgress(ctx context.Context, ss Host, p *mcp.ProgressNotificationParams) error {
	if l := HostLinkOf(ctx); l != nil {
		return l.Notify("notifications/progress", p)
	}
	if l := sessionLinkOf(ss); l != nil {
		return l.Notify("notifications/progress", p)
	}
	if ss == nil {
		return nil
	}
	return ss.NotifyProgress(ctx, p)
}
