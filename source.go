package junction

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Source provides MCP features (tools, resources, resource templates,
// prompts and completions) to a [Hub]. The hub does not know what kind of
// source it talks to: an in-process [Pack], an upstream MCP server, or a
// toolbox plugin all look the same from here.
//
// Names and URIs a source uses are local to it. The hub renames tools and
// prompts on the way out (see [PrefixMode]) and hands the source its own
// names back on the way in: the Params.Name of a CallTool or GetPrompt
// request is always the source-local name.
//
// The context of every request a source receives names the host that
// caused it ([HostSession]), so a source can send it progress, log
// messages ([Log], [NotifyProgress]), and sampling and elicitation
// requests. The request's own Session is go-sdk's, which no front of
// junction's sets; sources do not read it.
//
// A Source must be safe for concurrent use.
type Source interface {
	// Catalog returns what the source offers now. The hub caches the result
	// and asks again when the source reports a change (see [Notifier]).
	Catalog(ctx context.Context) (*Catalog, error)

	// CallTool calls one of the source's tools. A tool failure is a result
	// with IsError set; a returned error is a failure to call at all, and
	// the hub reports it to the host as a tool error (or, for a
	// *jsonrpc.Error, as that protocol error).
	CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error)

	// ReadResource reads a resource or a resource-template instance.
	ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error)

	// GetPrompt renders one of the source's prompts.
	GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error)

	// Complete answers completion/complete for one of the source's prompts
	// or resource templates. A source without completions returns an empty
	// result, not an error.
	Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error)
}

// Catalog is a snapshot of what a [Source] offers. Names are source-local.
// The hub treats a Catalog as immutable once returned.
type Catalog struct {
	Tools             []*mcp.Tool
	Resources         []*mcp.Resource
	ResourceTemplates []*mcp.ResourceTemplate
	Prompts           []*mcp.Prompt

	// Presets are named tool sets, by source-local tool name. A hub merges
	// the presets of all its sources; see [Selection].
	Presets map[string][]string

	// Title and Instructions are what the source says of itself (an
	// upstream server's title and instructions from initialize). Tool
	// search indexes them: a query may name the server or use the words
	// of its instructions.
	Title        string
	Instructions string
}

// MetaAnnotations is the _meta key under which a [Source] may give a
// tool's annotations object byte for byte, as a JSON string (a source
// that relays another server's tools, which it decoded into
// [mcp.ToolAnnotations], loses absent hints and unknown members
// otherwise). The hub lists the object as the tool's annotations, in
// place of Tool.Annotations, and never lists the key itself. A value
// that is not a string holding a JSON object is ignored.
const MetaAnnotations = "dev.junction/annotations"

// A Subscriber is a [Source] that supports resources/subscribe. Sources
// that do not implement it accept subscriptions silently and never send
// updates.
type Subscriber interface {
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(ctx context.Context, uri string) error
}

// A Notifier is a [Source] whose catalog or resources change over time. The
// hub calls SetListener once, when the source is added, before it reads the
// catalog.
type Notifier interface {
	SetListener(Listener)
}

// A Listener receives a source's changes. The [Hub] gives one to every
// source that implements [Notifier]. Its methods may be called from any
// goroutine and never block for long.
type Listener interface {
	// CatalogChanged tells the hub to read the source's catalog again.
	CatalogChanged()
	// ResourceUpdated forwards notifications/resources/updated for a URI
	// the source owns to the host sessions subscribed to it.
	ResourceUpdated(uri string)
}

// A Readier is a [Source] that connects in the background (an upstream
// server, a plugin). Ready returns a channel that is closed once the
// source's first connection attempt has finished, connected or failed;
// its catalog is current from then on. A hub answers a host's first lists
// only once every Readier has got there (bounded by
// [Options.StartupBudget]), and a call to a tool it does not know yet
// waits for the sources that are not ready, so a host that lists or calls
// at once does not see a hub with half its tools.
type Readier interface {
	Ready() <-chan struct{}
}

// A LevelSetter is a [Source] that forwards log messages from somewhere
// else (an upstream server). The hub calls SetLogLevel with the most
// verbose level any host session asked for (logging/setLevel), or "info"
// while no host has asked, and again whenever that changes; each host
// still receives only the messages at or above its own level. It must not
// block.
type LevelSetter interface {
	SetLogLevel(level mcp.LoggingLevel)
}

// A HostWatcher is a [Source] whose server may turn to a host outside
// any call: a server before protocol 2026-07-28 asks roots/list (or for
// sampling or elicitation) when it likes, and sends log messages that
// name no request. Over stdio, and on an HTTP front with one session,
// there is only one host it can mean. The hub calls SetSoleHost with
// that host session whenever it changes: the only host session, of the
// views that serve the source, that has initialized (so one before
// 2026-07-28: later revisions do not initialize); nil when there is none
// or more than one. It calls HostRootsChanged when a host session of
// such a view says its roots changed (notifications/roots/list_changed).
// Neither may block.
type HostWatcher interface {
	SetSoleHost(ss Host)
	HostRootsChanged(ss Host)
}

// A RawCaller is a [Source] that can forward a tools/call without decoding
// its arguments or its result: the hub's data plane (package dataplane)
// hands it the params object as the host sent it, with the source-local
// tool name, and writes the result it returns to the host as it is.
//
// CallToolRaw returns the JSON of the result object. Errors mean what they
// mean for CallTool: a *jsonrpc.Error is answered as that protocol error,
// anything else becomes a tool error. The params may carry _meta (a
// progress token, a 2026-07-28 host's per-request protocol fields) and
// multi-round-trip fields (inputResponses, requestState), as the host
// sent them; the data plane sends other calls (tasks, ...) through
// CallTool.
//
// ctx names the host session the call is made for ([HostSession]), and
// may carry the request's [HostLink]. Log messages and progress that the
// source has for the host during the call should be sent with [Log] and
// [NotifyProgress]; sampling, elicitation or roots requests with the
// session's methods (CreateMessage, Elicit, ListRoots); each with a
// context derived from ctx: the data plane then delivers them as the
// typed path would (over HTTP, on the call's own response stream).
//
// A RawCaller that is also a [RawChooser] is asked before each call.
type RawCaller interface {
	CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error)
}

// A RawChooser is a [RawCaller] that forwards raw only some of its calls
// (an upstream whose transport is not stdio, say). CanCallRaw is asked
// before each call with the source-local tool name; false sends the call
// the typed way, through CallTool. It must not block.
type RawChooser interface {
	RawCaller
	CanCallRaw(tool string) bool
}

// A RawStarter is a [RawCaller] that can also start a call and return at
// once: StartToolRaw writes the call and ends it through done, exactly
// once, with what CallToolRaw would return, from whichever goroutine ends
// the call (typically the one reading the source's answers). It returns
// what cancels the call (never nil); ctx's own cancellation, if it has
// any, cancels it too. The data plane uses it where a host's connection
// would otherwise keep a goroutine waiting per call. done must not block
// for long.
type RawStarter interface {
	RawCaller
	StartToolRaw(ctx context.Context, name string, params json.RawMessage, done RawDone) RawCancel
}

// A RawCancel cancels a call a [RawStarter] started, with the cause the
// source passes on (the host cancelled). Like [RawDone], it is an
// interface so that the source's record of the call can be it.
type RawCancel interface {
	CancelRaw(cause error)
}

// RawCancelFunc is a func as a [RawCancel].
type RawCancelFunc func(cause error)

// CancelRaw calls f.
func (f RawCancelFunc) CancelRaw(cause error) { f(cause) }

// NoCancel is the RawCancel of a call that has nothing left to cancel
// (it ended as it started).
var NoCancel RawCancel = RawCancelFunc(func(error) {})

// A RawDone takes the outcome of a call a [RawStarter] started: the
// result, with what the source learned of it while reading it, or an
// error. It is an interface, not a func, so that whoever ends a call can
// be the record it already has of it (the core's record of a call
// started with [Call.StartToolRaw] is), with no closure made per call.
type RawDone interface {
	RawDone(res json.RawMessage, facts ResultFacts, err error)
}

// RawDoneFunc is a func as a [RawDone].
type RawDoneFunc func(res json.RawMessage, facts ResultFacts, err error)

// RawDone calls f.
func (f RawDoneFunc) RawDone(res json.RawMessage, facts ResultFacts, err error) { f(res, facts, err) }

// ResultFacts is what a source learned of a tools/call result object
// while it read it, so that the hub does not search the result again
// for them. The zero value knows nothing, and the hub then reads the
// result itself.
type ResultFacts uint8

const (
	// ResultRead: the source read the result's members; the facts below
	// hold, and the absence of one is a fact too.
	ResultRead ResultFacts = 1 << iota
	// ResultIsError: the result's first member whose key, as sent, is
	// isError has the value true.
	ResultIsError
	// ResultUntyped: no member's key, as sent, is _meta or resultType,
	// and none is written with an escape. For a host at 2026-07-28 or
	// later, both are added at the result's end.
	ResultUntyped
)

// Has reports whether the source read the result and found want (one
// of the facts after ResultRead).
func (f ResultFacts) Has(want ResultFacts) bool {
	return f&ResultRead != 0 && f&want != 0
}

type hostSessionKey struct{}

// WithHostSession returns a context that names ss as the host session a
// call is made for; see [HostSession]. A nil ss returns ctx. A front
// names the host in the context of each request it hands the hub.
func WithHostSession(ctx context.Context, ss Host) context.Context {
	if ss == nil {
		return ctx
	}
	return context.WithValue(ctx, hostSessionKey{}, ss)
}

// HostSession returns the host session a source's request is made for,
// raw or typed, or nil (a request outside any session: one of 2026-07-28
// or a stateless HTTP request, which stands alone, or a pack's
// [Hub.Call]).
func HostSession(ctx context.Context) Host {
	ss, _ := ctx.Value(hostSessionKey{}).(Host)
	return ss
}

var userKey rareKey[string]

// WithUser returns ctx naming the authenticated user of the request a
// call belongs to: the name of a static token, or an OAuth token's
// subject or client. A front that authenticates requests sets it; the
// hub binds what it hands out for a request to that user (sessions,
// tasks, the request state of a question asked on a call's behalf), so
// another user's credential cannot reach it (docs/security.md).
func WithUser(ctx context.Context, user string) context.Context {
	return userKey.with(ctx, user)
}

// User returns the authenticated user ctx names (see [WithUser]): ""
// for a request no front authenticated (stdio, a hub that asks for no
// credential), and for a pack's [Hub.Call].
func User(ctx context.Context) string {
	return userKey.of(ctx)
}

// Errors a hub reports. Sources may return them too, wrapped.
var (
	// ErrUnknownTool is returned for a tool name that no source provides or
	// the active selection does not include.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrSourceDown is returned by a source that cannot serve a call now
	// (an upstream that is reconnecting, a plugin that is restarting).
	ErrSourceDown = errors.New("source unavailable")
	// ErrDuplicateSource is returned by [Hub.Add] for a name already in use.
	ErrDuplicateSource = errors.New("duplicate source name")
	// ErrChangesRefused wraps the error of a [Hub.Apply] that changed
	// nothing: one of its changes is wrong.
	ErrChangesRefused = errors.New("changes refused")
)
