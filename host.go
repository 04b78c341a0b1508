package junction

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Host is a host's session as the hub and its sources reach it: what the
// host said of itself when it initialized, the requests the hub may put
// to it (roots, sampling, elicitation), the notifications it may send it
// outside a request's link, and its end. A front keeps one per session
// and names it in each call's context ([WithHostSession]); go-sdk's
// server sessions are Hosts as they are (see [SessionHost]).
//
// A Host is compared by identity: the hub keys what it keeps per host
// session (its log level, its subscriptions, the sources' records of
// whose calls they serve) by the Host value.
type Host interface {
	// ID is the session's id ("" over stdio, where the connection is the
	// session).
	ID() string
	// InitializeParams returns what the host sent in initialize, or nil
	// before it has (and for a host of 2026-07-28, which does not
	// initialize).
	InitializeParams() *mcp.InitializeParams
	ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	CreateMessageWithTools(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// NotifyElicitationComplete tells the host that a URL elicitation it
	// was sent has been completed out of band.
	NotifyElicitationComplete(ctx context.Context, p *mcp.ElicitationCompleteParams) error
	// Log sends a log message if its level is at or above the level the
	// host set, and NotifyProgress a progress notification.
	Log(ctx context.Context, p *mcp.LoggingMessageParams) error
	NotifyProgress(ctx context.Context, p *mcp.ProgressNotificationParams) error
	// Wait blocks until the session ends.
	Wait() error
}

var _ Host = (*mcp.ServerSession)(nil)

// An EndNotifier is a [Host] that can call a func once its session ends
// (the data plane's connections are), so that no goroutine needs to wait
// in Wait to learn of it: a hub with many sessions would keep one per
// session and per thing that watches it.
type EndNotifier interface {
	// AfterEnd arranges for f to be called, on a goroutine of its own,
	// once the session has ended (at once if it has).
	AfterEnd(f func())
}

// AfterEnd calls f once host session h has ended: through h's
// [EndNotifier] when it is one, else from a goroutine that waits in Wait.
func AfterEnd(h Host, f func()) {
	if n, ok := h.(EndNotifier); ok {
		n.AfterEnd(f)
		return
	}
	go func() {
		h.Wait()
		f()
	}()
}

// SessionHost returns the [Host] that go-sdk's server session ss is: ss
// itself, or nil for a nil ss. An interface holding a nil pointer is not
// nil, so a session that may be nil becomes a Host through SessionHost,
// never by assignment.
//
// A front's own Host that answers the host's resource subscriptions
// itself ([View.SubscribeHost]) has a method Notify(method string,
// params mcp.Params) error, through which the hub sends it
// notifications/resources/updated.
func SessionHost(ss *mcp.ServerSession) Host {
	if ss == nil {
		return nil
	}
	return ss
}

// sdkSession returns the go-sdk session h is, or nil: what a go-sdk
// request handed to a source names as its Session (sources read their
// host from the context, [HostSession]).
func sdkSession(h Host) *mcp.ServerSession {
	ss, _ := h.(*mcp.ServerSession)
	return ss
}

// withRequestHost returns ctx naming the host a request from go-sdk's
// server is answered for ([HostSession]): the one ctx names already,
// else ss, the session the request came on (nil: none). Sources read
// their host from the context, whichever path the request took.
func withRequestHost(ctx context.Context, ss *mcp.ServerSession) (context.Context, Host) {
	if h := HostSession(ctx); h != nil {
		return ctx, h
	}
	h := SessionHost(ss)
	return WithHostSession(ctx, h), h
}

// ClientRequest is what a host's request says of its client: go-sdk's
// server requests ([mcp.CallToolRequest], [mcp.GetPromptRequest], …)
// have these methods. They read the request's _meta (2026-07-28 and
// later) and then the request's go-sdk session, which a request the data
// plane answers may not have; [RequestVersion] and
// [RequestCapabilities] read the request's [Host] instead.
type ClientRequest interface {
	ProtocolVersion() string
	ClientCapabilities() *mcp.ClientCapabilities
}

// RequestVersion returns the protocol version the client of req named:
// in the request's _meta, or in its host's initialize (the request's
// [Host] in ctx, [HostSession]); "" if neither names one. A source's
// handler reads it here, not from req alone, so that it finds the same
// whichever path the request took.
func RequestVersion(ctx context.Context, req ClientRequest) string {
	if v := req.ProtocolVersion(); v != "" {
		return v
	}
	if p := hostParams(ctx); p != nil {
		return p.ProtocolVersion
	}
	return ""
}

// RequestCapabilities returns the capabilities the client of req
// declared: in the request's _meta, or in its host's initialize (see
// [RequestVersion]); nil if neither has them.
func RequestCapabilities(ctx context.Context, req ClientRequest) *mcp.ClientCapabilities {
	if c := req.ClientCapabilities(); c != nil {
		return c
	}
	if p := hostParams(ctx); p != nil {
		return p.Capabilities
	}
	return nil
}

// hostParams returns what the host of the request answered under ctx
// sent in initialize, or nil.
func hostParams(ctx context.Context) *mcp.InitializeParams {
	if h := HostSession(ctx); h != nil {
		return h.InitializeParams()
	}
	return nil
}
