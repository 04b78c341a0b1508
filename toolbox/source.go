package toolbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/toolbox/plugin"
	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
	"github.com/junction-mcp/junction/toolbox/v1/toolboxv1connect"
)

// Options configure a [Source]. A nil *Options is the same as a zero one.
type Options struct {
	// Name labels the source in log records; empty means "toolbox".
	Name string
	// Logger receives the source's records and, for a spawned plugin, its
	// stderr lines. Nil discards them.
	Logger *slog.Logger

	// Protocol is the Connect-RPC protocol for a URL source: "connect"
	// (the default), "grpc" (h2c or TLS HTTP/2) or "grpcweb". A spawned
	// plugin names its own in the handshake.
	Protocol string
	// Token, if non-empty, is sent to a URL source as
	// "Authorization: Bearer <token>". Spawned plugins get a fresh random
	// token through JUNCTION_TOOLBOX_TOKEN.
	Token string

	// ReadyTimeout bounds how long a call waits for a plugin that is
	// starting or restarting before it fails with junction.ErrSourceDown.
	// Zero means 15s.
	ReadyTimeout time.Duration
	// HandshakeTimeout bounds the wait for a spawned plugin's handshake
	// line. Zero means 10s.
	HandshakeTimeout time.Duration
	// HealthInterval is the period of a spawned plugin's health check (an
	// Identity call); zero means 10s, negative disables it. After
	// HealthFailures consecutive failures (zero means 3) the plugin is
	// killed and restarted.
	HealthInterval time.Duration
	HealthFailures int
	// StopTimeout is how long a spawned plugin has to exit after SIGTERM
	// before SIGKILL. Zero means 5s.
	StopTimeout time.Duration
	// MinBackoff and MaxBackoff bound the delay before restarting a plugin
	// that died, doubling from MinBackoff (zero means 200ms) up to
	// MaxBackoff (zero means 30s), with jitter.
	MinBackoff, MaxBackoff time.Duration
	// UnixSocket asks spawned plugins to listen on a unix socket in a
	// private temporary directory instead of a loopback TCP port. A
	// sandboxed plugin (Command.Sandbox) always does.
	UnixSocket bool
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Name == "" {
		c.Name = "toolbox"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	setDefault(&c.ReadyTimeout, 15*time.Second)
	setDefault(&c.HandshakeTimeout, 10*time.Second)
	setDefault(&c.HealthInterval, 10*time.Second)
	setDefault(&c.StopTimeout, 5*time.Second)
	setDefault(&c.MinBackoff, 200*time.Millisecond)
	setDefault(&c.MaxBackoff, 30*time.Second)
	if c.HealthFailures <= 0 {
		c.HealthFailures = 3
	}
	return c
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d == 0 {
		*d = v
	}
}

// A Source serves a toolbox plugin's tools, resources and prompts to a
// [junction.Hub]. Create one with [NewURL] or [NewPlugin]; Close it when
// done.
type Source struct {
	opts   Options
	logger *slog.Logger

	mu       sync.Mutex // guards the fields below
	conn     *conn      // nil while the plugin is down
	ready    chan struct{}
	closed   bool
	listener junction.Listener

	done chan struct{} // closed by Close, to wake calls waiting for ready

	first     chan struct{} // closed once the first start has finished, connected or failed (junction.Readier)
	firstOnce sync.Once

	cancel context.CancelFunc
	wg     sync.WaitGroup // the supervisor or watcher goroutine
}

// conn is one live connection to a plugin: a client and the lifetime of
// the process (or URL) behind it.
type conn struct {
	client toolboxv1connect.ToolboxServiceClient
	http   *http.Client
	ident  *toolboxv1.IdentityResponse
	// gone is closed when the plugin process behind a spawned source has
	// exited; nil for URL sources.
	gone chan struct{}
}

var (
	_ junction.Source   = (*Source)(nil)
	_ junction.Notifier = (*Source)(nil)
	_ junction.Readier  = (*Source)(nil)
)

// Ready implements [junction.Readier]: the channel is closed once the
// first start of a spawned plugin has finished (handshake done, or the
// plugin failed to start), at once for a URL source, and at Close.
func (s *Source) Ready() <-chan struct{} { return s.first }

func (s *Source) markFirst() { s.firstOnce.Do(func() { close(s.first) }) }

// NewURL returns a source for a toolbox service at rawURL (http:// or
// https://; a path prefix is kept). It does not fail when the service is
// down: calls then fail with [junction.ErrSourceDown] until it is back
// (Connect-RPC clients reconnect on their own), and the Watch stream is
// retried with backoff. There is no health check or restart: the service
// has its own lifecycle.
func NewURL(rawURL string, opts *Options) (*Source, error) {
	o := opts.withDefaults()
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("toolbox %s: URL %q: want http://host:port or https://host:port", o.Name, rawURL)
	}
	proto := o.Protocol
	if proto == "" {
		proto = plugin.ProtocolConnect
	}
	hc, err := httpClient(proto, u.Scheme == "https", nil)
	if err != nil {
		return nil, fmt.Errorf("toolbox %s: %w", o.Name, err)
	}
	s := newSource(o)
	c := &conn{http: hc, client: newClient(hc, strings.TrimRight(rawURL, "/"), proto, o.Token)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.setConn(c)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchLoop(ctx, c)
	}()
	return s, nil
}

func newSource(o Options) *Source {
	return &Source{opts: o, logger: o.Logger.With(junction.LogKeySource, o.Name), ready: make(chan struct{}), done: make(chan struct{}), first: make(chan struct{})}
}

// httpClient returns an HTTP client for protocol. gRPC needs HTTP/2: over
// plain http that is h2c with prior knowledge. dial, if non-nil, replaces
// the network dialer (unix sockets).
func httpClient(protocol string, tls bool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if dial != nil {
		t.DialContext = dial
	}
	switch protocol {
	case plugin.ProtocolGRPC:
		t.Protocols = new(http.Protocols)
		if tls {
			t.Protocols.SetHTTP2(true)
		} else {
			t.Protocols.SetUnencryptedHTTP2(true)
		}
	case plugin.ProtocolConnect, plugin.ProtocolGRPCWeb:
	default:
		return nil, fmt.Errorf("unknown protocol %q (want connect, grpc or grpcweb)", protocol)
	}
	return &http.Client{Transport: t}, nil
}

func newClient(hc *http.Client, baseURL, protocol, token string) toolboxv1connect.ToolboxServiceClient {
	var opts []connect.ClientOption
	switch protocol {
	case plugin.ProtocolGRPC:
		opts = append(opts, connect.WithGRPC())
	case plugin.ProtocolGRPCWeb:
		opts = append(opts, connect.WithGRPCWeb())
	}
	if token != "" {
		opts = append(opts, connect.WithInterceptors(bearer(token)))
	}
	return toolboxv1connect.NewToolboxServiceClient(hc, baseURL, opts...)
}

// bearer adds the token to every request, unary or streaming.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		c := next(ctx, spec)
		c.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return c
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func randomToken() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// SetListener implements [junction.Notifier].
func (s *Source) SetListener(l junction.Listener) {
	s.mu.Lock()
	s.listener = l
	s.mu.Unlock()
}

func (s *Source) notifyCatalog() {
	s.mu.Lock()
	l := s.listener
	s.mu.Unlock()
	if l != nil {
		l.CatalogChanged()
	}
}

// setConn makes c the live connection (nil: the plugin is down).
func (s *Source) setConn(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = c
	if c != nil {
		s.markFirst()
		select {
		case <-s.ready:
		default:
			close(s.ready)
		}
		return
	}
	select {
	case <-s.ready:
		s.ready = make(chan struct{})
	default:
	}
}

// client returns the live connection, waiting up to ReadyTimeout (or ctx)
// for a plugin that is starting.
func (s *Source) client(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	c, ready, closed := s.conn, s.ready, s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("toolbox %s: closed: %w", s.opts.Name, junction.ErrSourceDown)
	}
	if c != nil {
		return c, nil
	}
	t := time.NewTimer(s.opts.ReadyTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return s.client(ctx)
	case <-s.done:
		return nil, fmt.Errorf("toolbox %s: closed: %w", s.opts.Name, junction.ErrSourceDown)
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, fmt.Errorf("toolbox %s: plugin not ready after %v: %w", s.opts.Name, s.opts.ReadyTimeout, junction.ErrSourceDown)
	}
}

// Identity returns the plugin's identity, waiting for it to be ready.
func (s *Source) Identity(ctx context.Context) (*toolboxv1.IdentityResponse, error) {
	c, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	if c.ident != nil {
		return c.ident, nil
	}
	res, err := c.client.Identity(ctx, connect.NewRequest(&toolboxv1.IdentityRequest{}))
	if err != nil {
		return nil, s.rpcError("Identity", err)
	}
	return res.Msg, nil
}

// Close stops the source: a spawned plugin gets SIGTERM, then SIGKILL
// after StopTimeout, and its process group is reaped. Close waits for
// that and is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	s.mu.Unlock()
	s.markFirst()
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	return nil
}

// maxPages bounds a paginated listing, against a plugin whose cursors
// never end.
const maxPages = 1000

// Catalog implements [junction.Source]: it lists tools, resources,
// resource templates and prompts, following pagination. An RPC the plugin
// does not implement lists nothing. A tool with a bad schema is logged and
// left out; the rest of the catalog is still served.
func (s *Source) Catalog(ctx context.Context) (*junction.Catalog, error) {
	select {
	case <-s.first:
	default:
		// Still starting: nothing yet, and no waiting (the hub waits for
		// Ready, and reads the catalog again then).
		return &junction.Catalog{}, nil
	}
	c, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	cat := &junction.Catalog{}
	err = paginate(ctx, func(cursor string) (string, error) {
		res, err := c.client.ListTools(ctx, connect.NewRequest(&toolboxv1.ListToolsRequest{Cursor: cursor}))
		if err != nil {
			return "", err
		}
		for _, t := range res.Msg.GetTools() {
			mt, err := toolFromProto(t)
			if err != nil {
				s.logger.Warn("plugin tool skipped", "error", err)
				continue
			}
			cat.Tools = append(cat.Tools, mt)
		}
		return res.Msg.GetNextCursor(), nil
	})
	if err != nil {
		return nil, s.rpcError("ListTools", err)
	}
	err = paginate(ctx, func(cursor string) (string, error) {
		res, err := c.client.ListResources(ctx, connect.NewRequest(&toolboxv1.ListResourcesRequest{Cursor: cursor}))
		if err != nil {
			return "", err
		}
		for _, r := range res.Msg.GetResources() {
			mr, err := resourceFromProto(r)
			if err != nil {
				s.logger.Warn("plugin resource skipped", "error", err)
				continue
			}
			cat.Resources = append(cat.Resources, mr)
		}
		return res.Msg.GetNextCursor(), nil
	})
	if err != nil {
		return nil, s.rpcError("ListResources", err)
	}
	err = paginate(ctx, func(cursor string) (string, error) {
		res, err := c.client.ListResourceTemplates(ctx, connect.NewRequest(&toolboxv1.ListResourceTemplatesRequest{Cursor: cursor}))
		if err != nil {
			return "", err
		}
		for _, r := range res.Msg.GetResourceTemplates() {
			mr, err := templateFromProto(r)
			if err != nil {
				s.logger.Warn("plugin resource template skipped", "error", err)
				continue
			}
			cat.ResourceTemplates = append(cat.ResourceTemplates, mr)
		}
		return res.Msg.GetNextCursor(), nil
	})
	if err != nil {
		return nil, s.rpcError("ListResourceTemplates", err)
	}
	err = paginate(ctx, func(cursor string) (string, error) {
		res, err := c.client.ListPrompts(ctx, connect.NewRequest(&toolboxv1.ListPromptsRequest{Cursor: cursor}))
		if err != nil {
			return "", err
		}
		for _, p := range res.Msg.GetPrompts() {
			mp, err := promptFromProto(p)
			if err != nil {
				s.logger.Warn("plugin prompt skipped", "error", err)
				continue
			}
			cat.Prompts = append(cat.Prompts, mp)
		}
		return res.Msg.GetNextCursor(), nil
	})
	if err != nil {
		return nil, s.rpcError("ListPrompts", err)
	}
	return cat, nil
}

// paginate calls page with each cursor until one returns an empty next
// cursor. CodeUnimplemented ends the listing without an error.
func paginate(ctx context.Context, page func(cursor string) (string, error)) error {
	seen := make(map[string]bool)
	cursor := ""
	for range maxPages {
		next, err := page(cursor)
		if connect.CodeOf(err) == connect.CodeUnimplemented {
			return nil
		}
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if seen[next] {
			return fmt.Errorf("pagination: cursor %q repeated", next)
		}
		seen[next] = true
		cursor = next
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return fmt.Errorf("pagination: more than %d pages", maxPages)
}

// CallTool implements [junction.Source]. Progress events from the plugin
// are sent to the host as notifications/progress when the host asked for
// them; cancelling ctx (the host cancelled) cancels the RPC. A Connect
// error becomes a tool error whose message names the plugin and the code.
func (s *Source) CallTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	name := req.Params.Name
	args := string(req.Params.Arguments)
	if strings.TrimSpace(args) == "" || strings.TrimSpace(args) == "null" {
		args = "{}"
	}
	token := req.Params.GetProgressToken()
	in := &toolboxv1.CallToolRequest{Name: name, ArgumentsJson: args, ProgressRequested: token != nil && junction.HostSession(ctx) != nil, MetaJson: metaJSON(req.Params.Meta)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.client.CallTool(ctx, connect.NewRequest(in))
	if err != nil {
		return nil, s.callError(ctx, c, name, err)
	}
	defer stream.Close()
	var result *toolboxv1.CallToolResult
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *toolboxv1.CallToolResponse_Progress:
			if !in.ProgressRequested {
				continue
			}
			p := ev.Progress
			n := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.GetProgress(), Total: p.GetTotal(), Message: p.GetMessage()}
			if err := junction.NotifyProgress(ctx, junction.HostSession(ctx), n); err != nil {
				s.logger.Debug("progress not delivered", junction.LogKeyTool, name, "error", err)
			}
		case *toolboxv1.CallToolResponse_Result:
			if result != nil {
				return nil, &junction.ToolError{Code: junction.CodeInternal, Message: fmt.Sprintf("plugin %s sent two results for %q", s.opts.Name, name)}
			}
			result = ev.Result
		}
	}
	if err := stream.Err(); err != nil {
		return nil, s.callError(ctx, c, name, err)
	}
	if result == nil {
		return nil, &junction.ToolError{Code: junction.CodeInternal, Message: fmt.Sprintf("plugin %s ended the call of %q without a result", s.opts.Name, name)}
	}
	out, err := callResultFromProto(name, result)
	if err != nil {
		return nil, &junction.ToolError{Code: junction.CodeInternal, Message: fmt.Sprintf("plugin %s returned a bad result for %q: %v", s.opts.Name, name, err)}
	}
	return out, nil
}

// metaJSON returns the request's _meta without the progress token (the
// hub owns that), as JSON text; "" when nothing is left.
func metaJSON(m mcp.Meta) string {
	if len(m) == 0 {
		return ""
	}
	rest := make(map[string]any, len(m))
	for k, v := range m {
		if k != "progressToken" {
			rest[k] = v
		}
	}
	if len(rest) == 0 {
		return ""
	}
	b, err := json.Marshal(rest)
	if err != nil {
		return ""
	}
	return string(b)
}

// callError turns a CallTool RPC failure into a tool error with a clear
// message. The codes the hub knows (unavailable, timeout, cancelled) keep
// their meaning; any other Connect code is reported as it is.
func (s *Source) callError(ctx context.Context, c *conn, tool string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("toolbox %s: call of %q: %w", s.opts.Name, tool, ctxErr)
	}
	code := connect.CodeOf(err)
	msg := errorMessage(err)
	if c.gone != nil && !connect.IsWireError(err) {
		// An error the plugin did not send (a stream cut short) is how a
		// crash looks from here; the supervisor notices the exit a moment
		// later.
		select {
		case <-c.gone:
			return fmt.Errorf("toolbox %s: plugin died during the call of %q (%s): %w", s.opts.Name, tool, msg, junction.ErrSourceDown)
		case <-time.After(time.Second):
		}
	}
	switch code {
	case connect.CodeUnavailable:
		return fmt.Errorf("toolbox %s: plugin unavailable during the call of %q: %s: %w", s.opts.Name, tool, msg, junction.ErrSourceDown)
	case connect.CodeDeadlineExceeded:
		return fmt.Errorf("toolbox %s: call of %q: %s: %w", s.opts.Name, tool, msg, context.DeadlineExceeded)
	case connect.CodeCanceled:
		return fmt.Errorf("toolbox %s: call of %q: %s: %w", s.opts.Name, tool, msg, context.Canceled)
	}
	return &junction.ToolError{Code: strings.ToUpper(code.String()), Message: fmt.Sprintf("plugin %s failed the call of %q: %s", s.opts.Name, tool, msg), Err: err}
}

// errorMessage returns a Connect error's message, preferring a
// toolbox.v1.Error detail when the plugin attached one.
func errorMessage(err error) string {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err.Error()
	}
	for _, d := range ce.Details() {
		v, derr := d.Value()
		if derr != nil {
			continue
		}
		if te, ok := v.(*toolboxv1.Error); ok && te.GetMessage() != "" {
			return ErrorCodeName(te.GetCode()) + ": " + te.GetMessage()
		}
	}
	if ce.Message() == "" {
		return ce.Code().String()
	}
	return ce.Message()
}

// rpcError wraps the failure of a non-tool RPC. Unavailability wraps
// junction.ErrSourceDown.
func (s *Source) rpcError(op string, err error) error {
	if connect.CodeOf(err) == connect.CodeUnavailable {
		return fmt.Errorf("toolbox %s: %s: %s: %w", s.opts.Name, op, errorMessage(err), junction.ErrSourceDown)
	}
	return fmt.Errorf("toolbox %s: %s: %w", s.opts.Name, op, err)
}

// ReadResource implements [junction.Source]. CodeNotFound becomes MCP's
// resource-not-found error and CodeInvalidArgument an invalid-params
// error.
func (s *Source) ReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	c, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	uri := req.Params.URI
	res, err := c.client.ReadResource(ctx, connect.NewRequest(&toolboxv1.ReadResourceRequest{Uri: uri}))
	if err != nil {
		switch connect.CodeOf(err) {
		case connect.CodeNotFound:
			return nil, mcp.ResourceNotFoundError(uri)
		case connect.CodeInvalidArgument:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errorMessage(err)}
		}
		return nil, s.rpcError("ReadResource", err)
	}
	out := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}}
	for i, rc := range res.Msg.GetContents() {
		mc, err := resourceContentsFromProto(rc)
		if err != nil {
			return nil, fmt.Errorf("toolbox %s: ReadResource %q: contents[%d]: %v", s.opts.Name, uri, i, err)
		}
		out.Contents = append(out.Contents, mc)
	}
	return out, nil
}

// GetPrompt implements [junction.Source]. CodeNotFound and
// CodeInvalidArgument become invalid-params errors.
func (s *Source) GetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	c, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	res, err := c.client.GetPrompt(ctx, connect.NewRequest(&toolboxv1.GetPromptRequest{Name: req.Params.Name, Arguments: req.Params.Arguments}))
	if err != nil {
		switch connect.CodeOf(err) {
		case connect.CodeNotFound, connect.CodeInvalidArgument:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errorMessage(err)}
		}
		return nil, s.rpcError("GetPrompt", err)
	}
	out, err := promptResultFromProto(res.Msg)
	if err != nil {
		return nil, fmt.Errorf("toolbox %s: GetPrompt %q: %v", s.opts.Name, req.Params.Name, err)
	}
	return out, nil
}

// Complete implements [junction.Source]; the contract has no completions.
func (s *Source) Complete(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
}

// watchLoop follows the plugin's Watch stream on c until ctx ends,
// forwarding change events to the hub. It reconnects after a pause when
// the stream breaks, and stops for good when the plugin does not
// implement Watch.
func (s *Source) watchLoop(ctx context.Context, c *conn) {
	delay := s.opts.MinBackoff
	for {
		stream, err := c.client.Watch(ctx, connect.NewRequest(&toolboxv1.WatchRequest{}))
		if err == nil {
			for stream.Receive() {
				delay = s.opts.MinBackoff
				switch ev := stream.Msg().GetEvent().(type) {
				case *toolboxv1.WatchResponse_CatalogChanged:
					s.notifyCatalog()
				case *toolboxv1.WatchResponse_ResourceUpdated:
					s.mu.Lock()
					l := s.listener
					s.mu.Unlock()
					if l != nil {
						l.ResourceUpdated(ev.ResourceUpdated.GetUri())
					}
				}
			}
			err = stream.Err()
			stream.Close()
		}
		if ctx.Err() != nil {
			return
		}
		if connect.CodeOf(err) == connect.CodeUnimplemented {
			s.logger.Debug("plugin does not implement Watch")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, s.opts.MaxBackoff)
	}
}
