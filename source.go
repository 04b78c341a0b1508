package junction

import (
	"context"
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
// The request a source receives carries the host's session
// (req.Session), so a source can send progress, log messages, sampling
// and elicitation requests back to the host that caused the call.
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
}

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
)
