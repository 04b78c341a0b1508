package junction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A host's prompts/get, resources/read and completion/complete, and its
// calls of the view's own tools, are answered here, whichever path they
// came on: the data plane calls [View.GetPrompt], [View.ReadResource],
// [View.Complete] and [View.CallOwnTool].
//
// Each answers only for what the view serves (its selection's sources;
// code mode's declarations), calls the source under its own name for
// the item, and, for a host before 2026-07-28, which cannot read an
// input-required result, puts the source's questions to the host and
// asks again (answerAsking), as go-sdk's server does for its handlers.
//
// What the hub says of itself is made here too: [View.Discover] answers
// server/discover on the plane, and the describeServer middleware puts
// the same result, and the same capabilities in an initialize result,
// in go-sdk's answers.

// Discover answers a host's server/discover (2026-07-28 and later): the
// revisions the hub speaks (versions, those the host's transport
// carries; nil: every revision go-sdk speaks), what v offers
// (capabilities) and the hub's instructions, with the cacheScope go-sdk
// writes when a server sets none.
func (v *View) Discover(versions []string) *mcp.DiscoverResult {
	if versions == nil {
		versions = mcp.SupportedProtocolVersions()
	}
	return &mcp.DiscoverResult{
		Cacheable:         mcp.Cacheable{CacheScope: "public"},
		SupportedVersions: versions,
		Capabilities:      v.capabilities(Revision20260728),
		Instructions:      v.hub.opts.Instructions,
	}
}

// Initialize answers a host's initialize on v, as go-sdk's server
// answers it: the version negotiated ([NegotiateVersion]), v's
// capabilities at that revision, and the hub's instructions and
// serverInfo.
func (v *View) Initialize(p *mcp.InitializeParams) *mcp.InitializeResult {
	return v.initializeResult(NegotiateVersion(p.ProtocolVersion))
}

// initializeResult is v's answer to an initialize that negotiated version.
func (v *View) initializeResult(version string) *mcp.InitializeResult {
	return &mcp.InitializeResult{
		ProtocolVersion: version,
		Capabilities:    v.capabilities(ParseRevision(version)),
		Instructions:    v.hub.opts.Instructions,
		ServerInfo:      v.Implementation(),
	}
}

// capabilities returns what v offers a host at revision rev: tools,
// prompts and resources that change, subscriptions, completions and
// logging, and, for a revision that has tasks (2026-07-28 on), the
// tasks extension once a data plane takes its requests for v
// (OfferTasks; without one, go-sdk alone serves the view, which knows no
// tasks).
func (v *View) capabilities(rev Revision) *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{
		Logging:     &mcp.LoggingCapabilities{},
		Completions: &mcp.CompletionCapabilities{},
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
	}
	if rev.Tasks() && v.tasksOffered.Load() {
		c.AddExtension(TasksExtension, map[string]any{})
	}
	return c
}

// GetPrompt answers a host's prompts/get on v: the prompt of that name
// from its source. req.Session is the host's session (nil: a request
// that stands alone, of 2026-07-28 or later). A prompt v does not serve
// is invalid params, as from go-sdk.
func (v *View) GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	v.mu.RLock()
	e := v.prompts[req.Params.Name]
	v.mu.RUnlock()
	if e == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	params := *req.Params
	params.Name = e.local
	ctx, host := withRequestHost(ctx, req.Session)
	return answerAsking(ctx, host, func(answers mcp.InputResponseMap, state string) (*mcp.GetPromptResult, error) {
		if answers != nil {
			params.InputResponses, params.RequestState = answers, state
		}
		return e.source.src.GetPrompt(ctx, &mcp.GetPromptRequest{Session: req.Session, Params: &params, Extra: req.Extra})
	}, func(r *mcp.GetPromptResult) (mcp.InputRequestMap, string, bool) {
		if r == nil {
			return nil, "", false
		}
		return r.InputRequests, r.RequestState, len(r.Messages) > 0
	})
}

// ReadResource answers a host's resources/read on v: the resource of
// that URI, or the first template in key order that matches it, as
// go-sdk's server looks them up; contents without a URI or MIME type get
// the request's URI and the resource's or template's MIME type. A URI v
// serves neither way is "resource not found".
func (v *View) ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	read, mime := v.resourceReader(uri)
	if read == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	params := *req.Params
	ctx, host := withRequestHost(ctx, req.Session)
	res, err := answerAsking(ctx, host, func(answers mcp.InputResponseMap, state string) (*mcp.ReadResourceResult, error) {
		if answers != nil {
			params.InputResponses, params.RequestState = answers, state
		}
		return read(ctx, &mcp.ReadResourceRequest{Session: req.Session, Params: &params, Extra: req.Extra})
	}, func(r *mcp.ReadResourceResult) (mcp.InputRequestMap, string, bool) {
		if r == nil {
			return nil, "", false
		}
		return r.InputRequests, r.RequestState, len(r.Contents) > 0
	})
	switch {
	case err != nil:
		return nil, err
	case res == nil || res.InputRequests == nil && res.Contents == nil:
		return nil, fmt.Errorf("reading resource %s: read handler returned nil information", uri)
	}
	if res.CacheScope == "" {
		res.CacheScope = "public" // as go-sdk's server writes it
	}
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		if c.URI == "" {
			c.URI = uri
		}
		if c.MIMEType == "" {
			c.MIMEType = mime
		}
	}
	return res, nil
}

// resourceReader returns what reads uri on v, and the MIME type its
// contents default to: a resource's source, code mode's declarations,
// or the source of the first template in key order that matches it; nil
// if v serves none.
func (v *View) resourceReader(uri string) (mcp.ResourceHandler, string) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if e := v.resources[uri]; e != nil {
		return e.source.src.ReadResource, e.resource.MIMEType
	}
	for _, r := range v.disc.decls {
		if r.URI == uri {
			return v.readDeclarations, r.MIMEType
		}
	}
	if e := v.templateLocked(uri); e != nil {
		return e.source.src.ReadResource, e.template.MIMEType
	}
	return nil, ""
}

// Complete answers a host's completion/complete on v: from the source of
// the prompt or resource the reference names, if v serves it (a
// resource's URI, a template's URI template, or a URI one of its
// templates matches), under the source's own name. Anything else gets
// no values. A request without a reference or an argument name is
// refused as invalid, in go-sdk's server's words.
func (v *View) Complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	empty := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	switch {
	case req.Params == nil || req.Params.Ref == nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: missing required 'ref' field"}
	case req.Params.Argument.Name == "":
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: missing required 'argument.name' field"}
	}
	params := *req.Params
	ref := *params.Ref
	params.Ref = &ref
	var src Source
	v.mu.RLock()
	switch ref.Type {
	case "ref/prompt":
		if e := v.prompts[ref.Name]; e != nil {
			src, ref.Name = e.source.src, e.local
		}
	case "ref/resource":
		if e := v.resources[ref.URI]; e != nil {
			src = e.source.src
		} else if e := v.templates[ref.URI]; e != nil {
			src = e.source.src
		} else if e := v.templateLocked(ref.URI); e != nil {
			src = e.source.src
		}
	}
	v.mu.RUnlock()
	if src == nil {
		return empty, nil
	}
	ctx, _ = withRequestHost(ctx, req.Session)
	res, err := src.Complete(ctx, &mcp.CompleteRequest{Session: req.Session, Params: &params, Extra: req.Extra})
	if err == nil && res != nil && res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return res, err
}

// CallOwnTool answers a host's tools/call of one of v's own tools
// ([View.OwnTool]: the meta-tools of discovery and code mode) as
// go-sdk's server answers a call of a tool it holds: the tool's handler,
// with the source's questions put to an older host (answerAsking), and
// content that is never null. A name that is none of them is "unknown
// tool", as from go-sdk.
func (v *View) CallOwnTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	h := v.ownHandler(req.Params.Name)
	if h == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", req.Params.Name)}
	}
	// They answer from the catalog, as a list does: a search, or a script,
	// sent right after the host starts the hub waits, as a list would,
	// for the sources still connecting.
	v.hub.WaitStartup(ctx)
	params := *req.Params
	ctx, host := withRequestHost(ctx, req.Session)
	res, err := answerAsking(ctx, host, func(answers mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
		if answers != nil {
			params.InputResponses, params.RequestState = answers, state
		}
		return h(ctx, &mcp.CallToolRequest{Session: req.Session, Params: &params, Extra: req.Extra})
	}, toolAsks)
	if err == nil && res != nil && res.Content == nil && res.InputRequests == nil {
		done := *res
		done.Content = []mcp.Content{} // not null, as go-sdk writes it
		res = &done
	}
	return res, err
}

// toolAsks reads a tool result's questions for answerAsking.
func toolAsks(r *mcp.CallToolResult) (mcp.InputRequestMap, string, bool) {
	if r == nil {
		return nil, "", false
	}
	return r.InputRequests, r.RequestState, len(r.Content) > 0 || r.StructuredContent != nil
}

// ownHandler returns the handler of v's own tool name, or nil.
func (v *View) ownHandler(name string) mcp.ToolHandler {
	v.mu.RLock()
	key := v.metaKeyLocked(name)
	v.mu.RUnlock()
	switch key {
	case "search":
		return v.searchHandler
	case "describe":
		return v.describeHandler
	case "call":
		return v.callHandler
	case "script":
		return v.scriptHandler
	}
	return nil
}

// templateLocked returns the first template of v, in key order (as
// go-sdk's server tries them), that matches uri, or nil. Called with
// v.mu held.
func (v *View) templateLocked(uri string) *templateEntry {
	var match *templateEntry
	for key, e := range v.templates {
		if (match == nil || key < match.template.URITemplate) && e.matcher.Match(uri) != nil {
			match = e
		}
	}
	return match
}

// answerAsking makes a request whose result may ask the host something
// (SEP-2322's input requests: a tool call, a prompt, a resource read),
// with call, which the first time gets no answers. asks reads a result's
// questions, its request state and whether it has content besides (none
// of a nil result).
//
// For a host that reads questions in results (2026-07-28 on; ss nil is a
// request that stands alone), the result is returned as it is. For an
// older host, the questions are put to it as requests of its session
// (askHost) and the request is made again with its answers and the
// request state, once, as go-sdk's server does. A result with both
// questions and content, an empty set of questions to an older host, and
// a host that refuses, are protocol errors, as go-sdk's server makes
// them.
func answerAsking[R any](ctx context.Context, ss Host, call func(mcp.InputResponseMap, string) (R, error), asks func(R) (mcp.InputRequestMap, string, bool)) (R, error) {
	var zero R
	res, err := call(nil, "")
	if err != nil {
		return res, err
	}
	questions, state, content := asks(res)
	if questions != nil && !asksInResults(ss) {
		if len(questions) == 0 {
			return zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server is busy, retry later"}
		}
		answers, err := askHost(ctx, ss, questions)
		if err != nil {
			werr := &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "multi-round-trip: " + err.Error()}
			var host *jsonrpc.Error
			if errors.As(err, &host) {
				werr.Code = host.Code // the host's refusal, as go-sdk passes it on
			}
			return zero, werr
		}
		if res, err = call(answers, state); err != nil {
			return res, err
		}
		questions, _, content = asks(res)
	}
	if questions != nil && content {
		return zero, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
	}
	return res, nil
}

// MarshalResult returns res as go-sdk's server writes it to the host of
// session ss (nil: a request that stands alone): "<", ">" and "&" as they
// are, and, for a tools/call, prompts/get or resources/read result that
// asks the host something, with "resultType":"input_required" (which
// go-sdk keeps unexported) if that host reads questions in results
// (2026-07-28 on; see answerAsking).
func MarshalResult(res mcp.Result, ss Host) ([]byte, error) {
	e := resultEncoders.Get().(*resultEncoder)
	defer resultEncoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(res); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))
	if inputRequired(res) && asksInResults(ss) {
		return markInputRequired(b), nil // a copy
	}
	return bytes.Clone(b), nil
}

// resultEncoder is an encoder that writes "<", ">" and "&" as they are,
// with its buffer, pooled: results are encoded once per request.
type resultEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var resultEncoders = sync.Pool{New: func() any {
	e := &resultEncoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// inputRequired reports whether res asks the host something.
func inputRequired(res mcp.Result) bool {
	switch r := res.(type) {
	case *mcp.CallToolResult:
		return r != nil && r.InputRequests != nil
	case *mcp.GetPromptResult:
		return r != nil && r.InputRequests != nil
	case *mcp.ReadResourceResult:
		return r != nil && r.InputRequests != nil
	}
	return false
}

// markInputRequired returns a copy of b, the JSON object of a result
// that asks the host something, with "resultType":"input_required" added.
func markInputRequired(b []byte) []byte {
	if len(b) < 2 || b[len(b)-1] != '}' {
		return bytes.Clone(b)
	}
	if bytes.Equal(b, []byte("{}")) {
		return []byte(`{"resultType":"input_required"}`)
	}
	return append(append(bytes.Clone(b[:len(b)-1]), `,"resultType":"input_required"`...), '}')
}
