package dataplane

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a [Plane]. A nil *Options is the same as a zero one.
type Options struct {
	// Logger receives the plane's records (frames from hosts that were
	// rejected). Nil discards them.
	Logger *slog.Logger

	// Count, if set, is told of each request the plane answers other
	// than a tools/call (whose calls the hub observes), and of each
	// notification of the host's session it takes
	// (notifications/initialized, …/roots/list_changed, …/progress):
	// front is "stdio" or "http".
	Count func(front, method string)
}

// A View is what a plane needs of the view it serves: the contract
// between the core and the host front. [*junction.View] is the one
// implementation; the methods below are documented there.
//
//   - Implementation: the view's serverInfo; KeepAlive, how often the
//     plane pings a host's connection, and Ended, the end of the view,
//     which ends its connections.
//   - BeginRaw and AwaitRaw: a tools/call the plane answers itself begins
//     here, with the view's selection (AwaitRaw waits for the sources
//     still connecting, and gives the error of a tool still unknown); the
//     [junction.Call] they return is the one call sequence every call
//     takes (FinishRaw, FinishStreamed, StartToolRaw). OwnTool names the
//     view's own tools (meta-tools), which CallOwnTool answers;
//     Unwrap turns a call of its call meta-tool into the direct call it
//     stands for.
//   - ListPage: the answer to a host's tools/list, prompts/list,
//     resources/list and resources/templates/list, which the plane takes
//     wherever it takes a tools/call.
//   - GetPrompt, ReadResource, Complete, CallOwnTool, Discover and
//     Initialize: the answers to prompts/get, resources/read,
//     completion/complete, a call of a meta-tool, server/discover and
//     (over stdio) initialize (see requests.go).
//   - WatchLists: the changes of the view's lists, which a stdio host is
//     told of (notifications/tools/list_changed, …).
//   - HostState: a host session's log level and resource subscriptions,
//     kept across a parked HTTP session; SetHostLevel and SubscribeHost
//     answer a logging/setLevel and a resources/subscribe or unsubscribe
//     the plane takes (over stdio).
//   - The tasks extension (CallToolTask, TaskRequest, WatchTasks,
//     EndTasks, OfferTasks, TakesTaskCall, ServedTool): the requests of
//     hosts that declare it, which go-sdk does not know.
type View interface {
	Implementation() *mcp.Implementation
	KeepAlive() time.Duration
	Ended() <-chan struct{}
	BeginRaw(ctx context.Context, name string) (*junction.Call, junction.RawCaller)
	AwaitRaw(ctx context.Context, name string) (*junction.Call, junction.RawCaller, *jsonrpc.Error)
	OwnTool(name string) bool
	Unwrap(name string, args json.RawMessage) (string, json.RawMessage, bool)
	ListPage(ctx context.Context, method, cursor string) (mcp.Result, error)
	GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error)
	ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error)
	Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error)
	CallOwnTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)
	Discover(versions []string) *mcp.DiscoverResult
	Initialize(p *mcp.InitializeParams) *mcp.InitializeResult
	WatchLists(fn func(method string)) (stop func())
	HostState(h junction.Host) (level mcp.LoggingLevel, subscribed bool)
	SetHostLevel(h junction.Host, level mcp.LoggingLevel) *jsonrpc.Error
	SubscribeHost(ctx context.Context, h junction.Host, uri string, on bool) error
	HostInitialized(h junction.Host)
	HostRootsChanged(h junction.Host)
	CallToolTask(ctx context.Context, owner, name string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error, bool)
	TaskRequest(ctx context.Context, owner, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error)
	WatchTasks(owner string, fn func(params json.RawMessage)) (stop func())
	EndTasks(owner string)
	OfferTasks()
	TakesTaskCall(name string) bool
	ServedTool(name string) *mcp.Tool
}

var _ View = (*junction.View)(nil)

// A Plane serves one [View] to hosts: over stdio
// ([Plane.ServeStdio]), Streamable HTTP ([Plane.HTTPHandler]) and the
// legacy HTTP+SSE transport ([Plane.SSEHandler]). Make one per view; it
// is safe for concurrent use, and serves any number of connections.
type Plane struct {
	v      View
	logger *slog.Logger
	count  func(front, method string)
	impl   []byte // the view's serverInfo as JSON, for results to hosts at 2026-07-28

	bindings sync.Map // *mcp.Tool -> []paramBinding: the arguments its input schema binds to headers

	parked atomic.Int64 // HTTP sessions parked (see HTTPOptions.SessionPark)

	stdioHosts sync.Map // *stdioHost -> struct{}: the live line connections the plane answers (stdio, legacy SSE and Streamable HTTP sessions)
}

// Sessions calls fn with the protocol version of each live session of
// the plane's (a stdio host's connection, a legacy HTTP+SSE session, a
// Streamable HTTP session; a request without a session is none): the one
// it negotiated in initialize, or, for a host that does not initialize
// (2026-07-28 on), the one its first request named, as go-sdk's server
// takes it; "" before either.
func (p *Plane) Sessions(fn func(version string)) {
	p.stdioHosts.Range(func(k, _ any) bool {
		h := k.(*stdioHost)
		version := ""
		if ip := h.InitializeParams(); ip != nil {
			version = ip.ProtocolVersion
		} else if v := h.standalone.Load(); v != nil {
			version = *v
		}
		fn(version)
		return true
	})
}

// ParkedSessions returns how many of the plane's Streamable HTTP sessions
// are parked (see [HTTPOptions.SessionPark]): live to their hosts, but
// without their connection, so not among Sessions.
func (p *Plane) ParkedSessions() int { return int(p.parked.Load()) }

// New returns the plane of v.
func New(v View, opts *Options) *Plane {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	impl, _ := json.Marshal(v.Implementation()) // strings only: cannot fail
	if o.Count == nil {
		o.Count = func(string, string) {}
	}
	return &Plane{v: v, logger: o.Logger, count: o.Count, impl: impl}
}

// View returns the view the plane serves.
func (p *Plane) View() View { return p.v }
