// Package plugin is the Go side of a junction toolbox plugin: register
// tools, resources and prompts, then call [Plugin.Serve] (or [Main]). It
// serves the junction.toolbox.v1 contract over Connect-RPC (Connect, gRPC
// and gRPC-Web on one h2c handler), on a loopback port or a unix socket,
// and prints the handshake line the hub waits for.
//
// A complete plugin:
//
//	func main() {
//		p := plugin.New(plugin.Info{Name: "greeter", Version: "1.0.0"})
//		plugin.AddTool(p, &toolboxv1.Tool{Name: "greet", Description: "say hello"},
//			func(ctx context.Context, call *plugin.Call, in struct{ Name string `json:"name"` }) (*toolboxv1.CallToolResult, error) {
//				return plugin.TextResult("hello, " + in.Name), nil
//			})
//		plugin.Main(p)
//	}
//
// This package links neither the hub nor the MCP SDK, so plugin binaries
// stay small. See docs/plugins.md for the contract and the handshake.
//
//	hub (toolbox.Source) ──spawn──▶ plugin process
//	        ◀── stdout: JUNCTION_TOOLBOX|1|tcp|127.0.0.1:PORT|grpc
//	        ──── Connect-RPC (Authorization: Bearer $JUNCTION_TOOLBOX_TOKEN) ──▶ Plugin handlers
package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/junction-mcp/junction/internal/httpguard"
	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
	"github.com/junction-mcp/junction/toolbox/v1/toolboxv1connect"
)

// Info identifies a plugin (the Identity RPC).
type Info struct {
	Name         string
	Version      string
	Title        string
	Instructions string
}

// A ToolHandler runs one tool call. A returned error becomes a tool
// failure (isError) whose text is the error's message; return a
// *connect.Error to fail the RPC itself instead.
type ToolHandler func(ctx context.Context, call *Call) (*toolboxv1.CallToolResult, error)

// A ResourceHandler reads the resource at uri.
type ResourceHandler func(ctx context.Context, uri string) ([]*toolboxv1.ResourceContents, error)

// A PromptHandler renders a prompt from its arguments.
type PromptHandler func(ctx context.Context, args map[string]string) (*toolboxv1.GetPromptResponse, error)

// A Plugin holds the handlers of one toolbox plugin. Register everything
// before Serve; the Notify methods may be called at any time.
type Plugin struct {
	info Info

	mu        sync.Mutex // guards the maps and watchers
	tools     map[string]*tool
	resources map[string]*resource
	prompts   map[string]*prompt
	watchers  map[chan *toolboxv1.WatchResponse]struct{}
}

type tool struct {
	def *toolboxv1.Tool
	run ToolHandler
}

type resource struct {
	def  *toolboxv1.Resource
	read ResourceHandler
}

type prompt struct {
	def *toolboxv1.Prompt
	get PromptHandler
}

// New returns a plugin with nothing registered.
func New(info Info) *Plugin {
	return &Plugin{
		info:      info,
		tools:     make(map[string]*tool),
		resources: make(map[string]*resource),
		prompts:   make(map[string]*prompt),
		watchers:  make(map[chan *toolboxv1.WatchResponse]struct{}),
	}
}

// HandleTool registers a tool with a raw handler. An empty input schema
// means {"type":"object"}. Registering a name twice replaces the tool.
func (p *Plugin) HandleTool(def *toolboxv1.Tool, run ToolHandler) {
	if def == nil || def.Name == "" {
		panic("plugin: HandleTool needs a tool with a name")
	}
	p.mu.Lock()
	p.tools[def.Name] = &tool{def: def, run: run}
	p.mu.Unlock()
	p.NotifyCatalogChanged()
}

// AddTool registers a tool whose arguments decode into In. When def has no
// input schema, one is inferred from In (field tags `json` and
// `jsonschema` as in github.com/google/jsonschema-go). Arguments that do
// not decode are a tool failure with code INVALID_ARGUMENT.
func AddTool[In any](p *Plugin, def *toolboxv1.Tool, run func(ctx context.Context, call *Call, in In) (*toolboxv1.CallToolResult, error)) {
	if def.GetInputSchemaJson() == "" {
		s, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("plugin: tool %q: inferring the input schema: %v", def.GetName(), err))
		}
		b, err := json.Marshal(s)
		if err != nil {
			panic(fmt.Sprintf("plugin: tool %q: %v", def.GetName(), err))
		}
		def.InputSchemaJson = string(b)
	}
	p.HandleTool(def, func(ctx context.Context, call *Call) (*toolboxv1.CallToolResult, error) {
		var in In
		if err := call.Bind(&in); err != nil {
			return ErrorResult(toolboxv1.ErrorCode_ERROR_CODE_INVALID_ARGUMENT, err.Error()), nil
		}
		return run(ctx, call, in)
	})
}

// AddResource registers a resource.
func (p *Plugin) AddResource(def *toolboxv1.Resource, read ResourceHandler) {
	if def == nil || def.Uri == "" {
		panic("plugin: AddResource needs a resource with a URI")
	}
	p.mu.Lock()
	p.resources[def.Uri] = &resource{def: def, read: read}
	p.mu.Unlock()
	p.NotifyCatalogChanged()
}

// AddPrompt registers a prompt.
func (p *Plugin) AddPrompt(def *toolboxv1.Prompt, get PromptHandler) {
	if def == nil || def.Name == "" {
		panic("plugin: AddPrompt needs a prompt with a name")
	}
	p.mu.Lock()
	p.prompts[def.Name] = &prompt{def: def, get: get}
	p.mu.Unlock()
	p.NotifyCatalogChanged()
}

// NotifyCatalogChanged tells connected hubs to list the plugin's tools,
// resources and prompts again.
func (p *Plugin) NotifyCatalogChanged() {
	p.broadcast(&toolboxv1.WatchResponse{Event: &toolboxv1.WatchResponse_CatalogChanged{CatalogChanged: &toolboxv1.CatalogChanged{}}})
}

// NotifyResourceUpdated tells connected hubs that the resource at uri
// changed.
func (p *Plugin) NotifyResourceUpdated(uri string) {
	p.broadcast(&toolboxv1.WatchResponse{Event: &toolboxv1.WatchResponse_ResourceUpdated{ResourceUpdated: &toolboxv1.ResourceUpdated{Uri: uri}}})
}

func (p *Plugin) broadcast(ev *toolboxv1.WatchResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch := range p.watchers {
		select {
		case ch <- ev:
		default: // a slow watcher misses an event; the next one still reaches it
		}
	}
}

// A Call is one tool call in progress.
type Call struct {
	// Name is the tool's name.
	Name string
	// Args is the arguments object as JSON ({} when the host sent none).
	Args json.RawMessage
	// ProgressRequested says the host asked for progress reports.
	ProgressRequested bool
	// Meta is the host request's _meta object as JSON (without the
	// progress token), or nil.
	Meta json.RawMessage

	send func(*toolboxv1.CallToolResponse) error
}

// Bind decodes the arguments into v, rejecting unknown fields.
func (c *Call) Bind(v any) error {
	dec := json.NewDecoder(strings.NewReader(string(c.Args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid arguments for %q: %v", c.Name, err)
	}
	return nil
}

// Progress reports progress to the host. total <= 0 means unknown. It is
// a no-op when the host did not ask for progress.
func (c *Call) Progress(progress, total float64, message string) error {
	if !c.ProgressRequested {
		return nil
	}
	pr := &toolboxv1.Progress{Progress: progress, Message: message}
	if total > 0 {
		pr.Total = &total
	}
	return c.send(&toolboxv1.CallToolResponse{Event: &toolboxv1.CallToolResponse_Progress{Progress: pr}})
}

// TextResult returns a successful result with one text block.
func TextResult(text string) *toolboxv1.CallToolResult {
	return &toolboxv1.CallToolResult{Content: []*toolboxv1.Content{Text(text)}}
}

// JSONResult returns a successful result whose structured content is v,
// with the same JSON in a text block for hosts that do not read
// structured content.
func JSONResult(v any) (*toolboxv1.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("plugin: JSONResult: %w", err)
	}
	return &toolboxv1.CallToolResult{Content: []*toolboxv1.Content{Text(string(b))}, StructuredContentJson: string(b)}, nil
}

// ErrorResult returns a tool failure with a structured error.
func ErrorResult(code toolboxv1.ErrorCode, message string) *toolboxv1.CallToolResult {
	return &toolboxv1.CallToolResult{IsError: true, Error: &toolboxv1.Error{Code: code, Message: message}}
}

// Text returns a text content block.
func Text(s string) *toolboxv1.Content {
	return &toolboxv1.Content{Kind: &toolboxv1.Content_Text{Text: &toolboxv1.TextContent{Text: s}}}
}

// Handler returns the Connect handler of p and the path it serves under,
// for embedding a plugin in an existing HTTP server (a URL source). token,
// if non-empty, is required as "Authorization: Bearer <token>".
func (p *Plugin) Handler(token string) (string, http.Handler) {
	path, h := toolboxv1connect.NewToolboxServiceHandler(&service{p: p})
	if token == "" {
		return path, h
	}
	accepted := httpguard.NewTokens(token)
	return path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accepted.Match(httpguard.Bearer(r)) {
			http.Error(w, "junction toolbox: bad or missing token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ServeOptions configure [Plugin.Serve]. A nil *ServeOptions is the same
// as a zero one.
type ServeOptions struct {
	// Stdout receives the handshake line; nil means os.Stdout.
	Stdout io.Writer
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Protocol is the protocol named in the handshake; empty means grpc.
	// The handler serves all three either way.
	Protocol string
	// Ready, if non-nil, is called with the handshake once the listener is
	// open, before the line is printed.
	Ready func(Handshake)
}

// Serve listens on a loopback port (or, when the hub set
// JUNCTION_TOOLBOX_UNIX_DIR, a unix socket), prints the handshake and
// serves until ctx is done. Then it stops accepting requests, gives
// running calls a few seconds, and returns nil.
func (p *Plugin) Serve(ctx context.Context, opts *ServeOptions) error {
	var o ServeOptions
	if opts != nil {
		o = *opts
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Protocol == "" {
		o.Protocol = ProtocolGRPC
	}
	hs := Handshake{Version: ContractVersion, Protocol: o.Protocol}
	var ln net.Listener
	var err error
	if dir := o.Getenv(EnvUnixDir); dir != "" {
		hs.Network = "unix"
		hs.Address, err = filepath.Abs(filepath.Join(dir, fmt.Sprintf("plugin-%d.sock", os.Getpid())))
		if err != nil {
			return fmt.Errorf("plugin: socket path: %w", err)
		}
		ln, err = net.Listen("unix", hs.Address)
	} else {
		hs.Network = "tcp"
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if ln != nil {
			hs.Address = ln.Addr().String()
		}
	}
	if err != nil {
		return fmt.Errorf("plugin: listen: %w", err)
	}
	mux := http.NewServeMux()
	path, h := p.Handler(o.Getenv(EnvToken))
	mux.Handle(path, h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if o.Ready != nil {
		o.Ready(hs)
	}
	if _, err := fmt.Fprintln(o.Stdout, hs.String()); err != nil {
		srv.Close()
		<-errc
		return fmt.Errorf("plugin: writing the handshake: %w", err)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("plugin: serve: %w", err)
	case <-ctx.Done():
	}
	p.closeWatchers()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

// closeWatchers ends every Watch stream, so Shutdown need not wait for them.
func (p *Plugin) closeWatchers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ch := range p.watchers {
		close(ch)
		delete(p.watchers, ch)
	}
}

// Main serves p until SIGINT or SIGTERM and exits the process: the whole
// main function of a typical plugin. It explains itself and exits 2 when
// run by hand outside a hub (without JUNCTION_TOOLBOX=1), unless the
// first argument is -serve.
func Main(p *Plugin) {
	if os.Getenv(EnvMagic) != "1" && (len(os.Args) < 2 || os.Args[1] != "-serve") {
		fmt.Fprintf(os.Stderr, "%s is a junction toolbox plugin; run it through junction:\n\n    junction toolbox mcp -- %s\n\n(or pass -serve to serve it anyway)\n", p.info.Name, os.Args[0])
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Serve(ctx, nil); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.info.Name, err)
		os.Exit(1)
	}
}

// service implements the generated handler interface over a Plugin.
type service struct {
	p *Plugin
}

var _ toolboxv1connect.ToolboxServiceHandler = (*service)(nil)

func (s *service) Identity(context.Context, *connect.Request[toolboxv1.IdentityRequest]) (*connect.Response[toolboxv1.IdentityResponse], error) {
	i := s.p.info
	return connect.NewResponse(&toolboxv1.IdentityResponse{Name: i.Name, Version: i.Version, Title: i.Title, Instructions: i.Instructions, ContractVersion: ContractVersion}), nil
}

func (s *service) ListTools(context.Context, *connect.Request[toolboxv1.ListToolsRequest]) (*connect.Response[toolboxv1.ListToolsResponse], error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	out := &toolboxv1.ListToolsResponse{}
	for _, n := range sortedKeys(s.p.tools) {
		out.Tools = append(out.Tools, s.p.tools[n].def)
	}
	return connect.NewResponse(out), nil
}

func (s *service) CallTool(ctx context.Context, req *connect.Request[toolboxv1.CallToolRequest], stream *connect.ServerStream[toolboxv1.CallToolResponse]) error {
	name := req.Msg.GetName()
	s.p.mu.Lock()
	t := s.p.tools[name]
	s.p.mu.Unlock()
	if t == nil {
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown tool %q", name))
	}
	args := req.Msg.GetArgumentsJson()
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("tool %q: arguments_json is not valid JSON", name))
	}
	var mu sync.Mutex // Progress may be called from the handler's goroutines
	call := &Call{
		Name:              name,
		Args:              json.RawMessage(args),
		ProgressRequested: req.Msg.GetProgressRequested(),
		Meta:              metaOrNil(req.Msg.GetMetaJson()),
		send: func(r *toolboxv1.CallToolResponse) error {
			mu.Lock()
			defer mu.Unlock()
			return stream.Send(r)
		},
	}
	res, err := t.run(ctx, call)
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return ce
		}
		res = &toolboxv1.CallToolResult{IsError: true, Content: []*toolboxv1.Content{Text(err.Error())}}
	}
	if res == nil {
		res = &toolboxv1.CallToolResult{}
	}
	return call.send(&toolboxv1.CallToolResponse{Event: &toolboxv1.CallToolResponse_Result{Result: res}})
}

func (s *service) ListResources(context.Context, *connect.Request[toolboxv1.ListResourcesRequest]) (*connect.Response[toolboxv1.ListResourcesResponse], error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	out := &toolboxv1.ListResourcesResponse{}
	for _, u := range sortedKeys(s.p.resources) {
		out.Resources = append(out.Resources, s.p.resources[u].def)
	}
	return connect.NewResponse(out), nil
}

func (s *service) ListResourceTemplates(context.Context, *connect.Request[toolboxv1.ListResourceTemplatesRequest]) (*connect.Response[toolboxv1.ListResourceTemplatesResponse], error) {
	return connect.NewResponse(&toolboxv1.ListResourceTemplatesResponse{}), nil
}

func (s *service) ReadResource(ctx context.Context, req *connect.Request[toolboxv1.ReadResourceRequest]) (*connect.Response[toolboxv1.ReadResourceResponse], error) {
	uri := req.Msg.GetUri()
	s.p.mu.Lock()
	r := s.p.resources[uri]
	s.p.mu.Unlock()
	if r == nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown resource %q", uri))
	}
	contents, err := r.read(ctx, uri)
	if err != nil {
		return nil, asConnectError(err)
	}
	return connect.NewResponse(&toolboxv1.ReadResourceResponse{Contents: contents}), nil
}

func (s *service) ListPrompts(context.Context, *connect.Request[toolboxv1.ListPromptsRequest]) (*connect.Response[toolboxv1.ListPromptsResponse], error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	out := &toolboxv1.ListPromptsResponse{}
	for _, n := range sortedKeys(s.p.prompts) {
		out.Prompts = append(out.Prompts, s.p.prompts[n].def)
	}
	return connect.NewResponse(out), nil
}

func (s *service) GetPrompt(ctx context.Context, req *connect.Request[toolboxv1.GetPromptRequest]) (*connect.Response[toolboxv1.GetPromptResponse], error) {
	name := req.Msg.GetName()
	s.p.mu.Lock()
	pr := s.p.prompts[name]
	s.p.mu.Unlock()
	if pr == nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown prompt %q", name))
	}
	args := req.Msg.GetArguments()
	for _, a := range pr.def.GetArguments() {
		if a.GetRequired() && args[a.GetName()] == "" {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("prompt %q: missing required argument %q", name, a.GetName()))
		}
	}
	res, err := pr.get(ctx, args)
	if err != nil {
		return nil, asConnectError(err)
	}
	return connect.NewResponse(res), nil
}

func (s *service) Watch(ctx context.Context, _ *connect.Request[toolboxv1.WatchRequest], stream *connect.ServerStream[toolboxv1.WatchResponse]) error {
	ch := make(chan *toolboxv1.WatchResponse, 16)
	s.p.mu.Lock()
	s.p.watchers[ch] = struct{}{}
	s.p.mu.Unlock()
	defer func() {
		s.p.mu.Lock()
		delete(s.p.watchers, ch)
		s.p.mu.Unlock()
	}()
	// Send headers now, so the hub knows Watch is implemented.
	if err := stream.Conn().Send(nil); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
	}
}

func metaOrNil(s string) json.RawMessage {
	if s == "" || !json.Valid([]byte(s)) {
		return nil
	}
	return json.RawMessage(s)
}

// asConnectError keeps a *connect.Error and makes anything else an
// internal error.
func asConnectError(err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	return connect.NewError(connect.CodeInternal, err)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
