package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// targetFlags choose the MCP server a client command talks to: a stdio
// command after "--", a URL, or (neither) the hub the hub flags describe,
// run in-process.
type targetFlags struct {
	url        string
	transport  string
	headers    stringList
	token      string
	timeout    time.Duration
	reconnects int
	elicit     string
	hub        hubFlags
	// built is the in-process hub dial made (neither -url nor --), or nil.
	built *daemon.Daemon
}

// defaultReconnects bounds how often a client command resumes a dropped
// Streamable HTTP stream in a row without receiving anything new. go-sdk
// waits between attempts (the server's SSE retry delay, or 1 to 2 s,
// growing 1.5 times per attempt), so three attempts give up within about
// ten seconds on a server that keeps dropping, well inside -timeout.
const defaultReconnects = 3

func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "talk to the MCP server at `URL` (Streamable HTTP, or legacy SSE with -transport sse)")
	fs.StringVar(&f.transport, "transport", "http", "`kind` of the -url server: http (Streamable HTTP) or sse (legacy HTTP+SSE)")
	fs.Var(&f.headers, "header", "send this HTTP `header` (\"Name: value\"; repeatable)")
	fs.StringVar(&f.token, "token", "", "send Authorization: Bearer `token` (default: $JUNCTION_TOKEN)")
	fs.DurationVar(&f.timeout, "timeout", 60*time.Second, "give up after this long")
	fs.StringVar(&f.elicit, "elicit", elicitAsk, "answer the server's requests for input: `mode` ask (on the terminal), defaults, decline or cancel")
	fs.IntVar(&f.reconnects, "reconnects", defaultReconnects, "with -url over Streamable HTTP: resume a dropped stream up to `n` times in a row without progress (0: never)")
	f.hub.register(fs)
	// A client command's own hub should stay quiet unless asked.
	fs.Lookup("log-level").DefValue = "warn"
	f.hub.logLevel = "warn"
	f.hub.quiet = true
}

const targetAbout = `
The server is one of:
  -- COMMAND [ARGS...]   an MCP server run as a child process over stdio
  -url URL              an MCP server over Streamable HTTP (or -transport sse)
  (neither)             the hub that junction itself would serve with the
                        same -pack/-preset/-tool flags, run in-process

Over Streamable HTTP, when the server closes or loses a response stream
before the answer arrives, the client reconnects and asks for the events it
missed (Last-Event-ID), after the server's retry delay or 1 to 2 s, growing;
-reconnects bounds the attempts in a row that bring nothing new, and
-timeout bounds the whole command.
` + elicitAbout

// connect opens a client session to the target. args are the command's
// positional arguments after flag parsing. The caller calls the returned
// function to close the session.
func (f *targetFlags) connect(ctx context.Context, env *Env, args []string, dashDash bool) (*mcp.ClientSession, func(), error) {
	switch f.elicit {
	case elicitAsk, elicitDefaults, elicitDecline, elicitCancel:
	default:
		return nil, nil, usageErrorf("-elicit %q: use ask, defaults, decline or cancel", f.elicit)
	}
	if f.reconnects < 0 {
		return nil, nil, usageErrorf("-reconnects %d: want 0 or more", f.reconnects)
	}
	el := newElicitor(f.elicit, env.Stdin, env.Stderr)
	client := mcp.NewClient(&mcp.Implementation{Name: "junction-cli", Version: buildinfo.Version()}, &mcp.ClientOptions{
		// Show upstream log messages on stderr, as a human would want.
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			fmt.Fprintf(env.Stderr, "[%s] %v\n", req.Params.Level, req.Params.Data)
		},
		// Declares the elicitation capability (form mode).
		ElicitationHandler: el.handle,
	})
	cs, closeFn, err := f.dial(ctx, env, client, args, dashDash)
	if err != nil {
		el.stop()
		return nil, nil, err
	}
	return cs, func() { closeFn(); el.stop() }, nil
}

// dial connects client to the target.
func (f *targetFlags) dial(ctx context.Context, env *Env, client *mcp.Client, args []string, dashDash bool) (*mcp.ClientSession, func(), error) {
	switch {
	case dashDash && f.url != "":
		return nil, nil, usageErrorf("give either -url or -- COMMAND, not both")
	case dashDash:
		if len(args) == 0 {
			return nil, nil, usageErrorf("nothing after --: give the server command to run")
		}
		return connectCommand(ctx, env, client, args)
	case f.url != "":
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, nil, usageErrorf("-url %q: want an http:// or https:// URL", f.url)
		}
		hc, err := f.httpClient(ctx, env)
		if err != nil {
			return nil, nil, err
		}
		var t mcp.Transport
		switch strings.ToLower(f.transport) {
		case "http", "streamable", "streamable-http", "":
			// go-sdk reads MaxRetries 0 as its default (5) and a negative
			// value as "never".
			retries := f.reconnects
			if retries == 0 {
				retries = -1
			}
			// The standalone stream (a GET opened after initialize) stays
			// on: servers send requests there that belong to no request
			// of ours, elicitation among them (the TypeScript SDK's
			// Server.elicitInput does).
			t = &mcp.StreamableClientTransport{Endpoint: f.url, HTTPClient: hc, MaxRetries: retries}
		case "sse":
			t = &mcp.SSEClientTransport{Endpoint: f.url, HTTPClient: hc}
		default:
			return nil, nil, usageErrorf("-transport %q: use http or sse", f.transport)
		}
		cs, err := connectWithin(ctx, client, t)
		if err != nil {
			return nil, nil, fmt.Errorf("connect to %s: %w%s", f.url, err, connectHint(hc, u, f.transport))
		}
		return cs, func() { cs.Close() }, nil
	default:
		if len(args) > 0 {
			return nil, nil, usageErrorf("unexpected arguments %q (put a server command after --)", args)
		}
		d, err := f.hub.buildAll(ctx, env)
		if err != nil {
			return nil, nil, err
		}
		f.built = d
		cs, err := d.Connect(ctx, client)
		if err != nil {
			d.Close()
			return nil, nil, err
		}
		return cs, func() { cs.Close(); d.Close() }, nil
	}
}

// connectWithin is client.Connect, returning when ctx is done even if
// Connect has not: over Streamable HTTP, Connect waits for the standalone
// stream's GET on a context of its own, and retries it with pauses of
// seconds. An abandoned Connect ends by itself soon after (its requests
// fail at once, see [headerTransport]), and its goroutine closes the
// session it may still get.
func connectWithin(ctx context.Context, client *mcp.Client, t mcp.Transport) (*mcp.ClientSession, error) {
	type connected struct {
		cs  *mcp.ClientSession
		err error
	}
	result := make(chan connected)
	abandoned := make(chan struct{})
	go func() {
		cs, err := client.Connect(ctx, t, nil)
		select {
		case result <- connected{cs, err}:
		case <-abandoned:
			if cs != nil {
				cs.Close()
			}
		}
	}()
	select {
	case r := <-result:
		return r.cs, r.err
	case <-ctx.Done():
		close(abandoned)
		return nil, ctx.Err()
	}
}

// httpClient returns a client that adds -header and -token to every
// request, and ends every request when ctx (the command's) is done.
func (f *targetFlags) httpClient(ctx context.Context, env *Env) (*http.Client, error) {
	h := http.Header{}
	for _, kv := range f.headers {
		name, value, ok := strings.Cut(kv, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, usageErrorf("-header %q: want \"Name: value\"", kv)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	token := f.token
	if token == "" {
		if ts := strings.Split(env.Getenv(EnvToken), ","); len(ts) > 0 {
			token = strings.TrimSpace(ts[0])
		}
	}
	if token != "" && h.Get("Authorization") == "" {
		h.Set("Authorization", "Bearer "+token)
	}
	base := http.DefaultTransport
	if h.Get("Authorization") == "" {
		inner := base
		if oauth.Mode(env.Getenv(EnvOAuthMode)) == oauth.ModeAuto {
			inner = &tokenOnlyGuard{base: base}
		}
		base = oauthTransport(env, f.url, inner)
	}
	return &http.Client{Transport: &headerTransport{base: base, header: h, ctx: ctx}}, nil
}

// connectHint says what to do about a failed connection, from the HTTP
// status the server answered with (hc's transport keeps it): a 401 or 403
// wants a token, or another one; a 4xx from a path ending in /sse is the
// legacy SSE transport. Empty when there is nothing to add.
func connectHint(hc *http.Client, u *url.URL, transport string) string {
	ht, ok := hc.Transport.(*headerTransport)
	if !ok {
		return ""
	}
	status, sentAuth, reason := ht.last()
	said := ""
	if reason != "" {
		said = fmt.Sprintf(", saying %q", reason)
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		if sentAuth {
			return fmt.Sprintf(" (HTTP %d: the server refused the token%s; check -token or %s)", status, said, EnvToken)
		}
		return fmt.Sprintf(" (HTTP %d: the server wants a token%s; give it with -token or %s)", status, said, EnvToken)
	case status >= 400 && status < 500 && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse") && !strings.EqualFold(transport, "sse"):
		return fmt.Sprintf(" (HTTP %d: %s looks like a legacy SSE endpoint; add -transport sse)", status, u.Path)
	}
	return ""
}

// headerTransport adds header to each request and ties each request to
// ctx. go-sdk sends some requests on a context of its own, detached from
// the command's: the standalone stream's GET (opened inside Connect, which
// waits for its response headers), reconnections and the closing DELETE.
// Without the tie, a server that never answers that GET would hold the
// command past -timeout and past Ctrl-C.
type headerTransport struct {
	base   http.RoundTripper
	header http.Header
	ctx    context.Context

	mu       sync.Mutex
	status   int    // the last response's status
	sentAuth bool   // whether the last request carried Authorization
	reason   string // what the server said when it refused the last request (401, 403)
}

// last returns the status of the last response, whether its request
// carried an Authorization header, and, for a refusal, the server's
// reason.
func (t *headerTransport) last() (int, bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status, t.sentAuth, t.reason
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(t.ctx, cancel)
	end := func() { stop(); cancel() }
	r = r.Clone(ctx)
	for k, v := range t.header {
		r.Header[k] = v
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		end()
		if t.ctx.Err() != nil {
			return nil, t.ctx.Err() // say why: -timeout or an interrupt
		}
		return nil, err
	}
	reason := ""
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		reason = refusalReason(resp)
	}
	t.mu.Lock()
	t.status, t.sentAuth, t.reason = resp.StatusCode, r.Header.Get("Authorization") != "", reason
	t.mu.Unlock()
	resp.Body = &endingBody{ReadCloser: resp.Body, end: end}
	return resp, nil
}

// endingBody calls end once the body is closed, releasing the request's
// tie to the command's context.
type endingBody struct {
	io.ReadCloser
	end  func()
	once sync.Once
}

func (b *endingBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.end)
	return err
}

// splitDashDash splits args at the first "--", which flag parsing would
// otherwise swallow.
func splitDashDash(args []string) (before, after []string, found bool) {
	for i, a := range args {
		if a == "--" {
			return args[:i], args[i+1:], true
		}
	}
	return args, nil, false
}

// clientRun is a connected client command.
type clientRun struct {
	ctx        context.Context // bounded by -timeout
	cs         *mcp.ClientSession
	args       []string // positional arguments before "--"
	json       bool     // -json output
	streamable bool     // the target is a -url over Streamable HTTP
	// hub is the hub run in-process when the target is neither -url nor
	// a command, else nil.
	hub  *daemon.Daemon
	done func()
}

// paramHeaders reports whether the session sends SEP-2243's HTTP headers
// (Mcp-Method, Mcp-Name, and Mcp-Param-* for a tool's x-mcp-header
// arguments): Streamable HTTP at protocol 2026-07-28 or later.
func (r *clientRun) paramHeaders() bool {
	res := r.cs.InitializeResult()
	return r.streamable && res != nil && junction.ParseRevision(res.ProtocolVersion).ParamHeaders()
}

// clientCommand parses flags for a client command and connects to its
// target. The caller calls run.done.
func clientCommand(ctx context.Context, env *Env, name, synopsis, about string, args []string, extra func(*flag.FlagSet)) (*clientRun, error) {
	fs := newFlagSet(env, name, synopsis, strings.TrimSpace(about)+"\n"+targetAbout)
	var tf targetFlags
	tf.register(fs)
	run := &clientRun{}
	// -json means JSON output, but in tools call, where it was the old
	// name of -args.
	out := outputFlags(fs, name != "tools call")
	if name == "tools list" {
		fs.StringVar(&tf.hub.vet, "server", "", "list the tools of this `source` of the config file alone (a server, plugin or pack): the hub run in-process starts only it, and starts a server in quarantine too, for you to vet it before \"junction approve\"")
	}
	if extra != nil {
		extra(fs)
	}
	before, after, dash := splitDashDash(args)
	positional, err := parseInterspersed(env, fs, before)
	if err != nil {
		return nil, err
	}
	if tf.hub.vet != "" {
		if dash || tf.url != "" {
			return nil, usageErrorf("-server picks a source of the hub run in-process; it does not go with -url or --")
		}
		tf.hub.only = true
	}
	tf.hub.noteSet(fs)
	run.args = positional
	run.json = out.json
	ctx, cancel := context.WithTimeout(ctx, tf.timeout)
	cs, closeFn, err := tf.connect(ctx, env, after, dash)
	if err != nil {
		cancel()
		return nil, err
	}
	run.ctx, run.cs, run.hub = ctx, cs, tf.built
	run.streamable = tf.url != "" && strings.ToLower(tf.transport) != "sse"
	run.done = func() { closeFn(); cancel() }
	return run, nil
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments ("tools call NAME -arg k=v"), returning the
// positional ones.
func parseInterspersed(env *Env, fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := parseFlags(env, fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// connectCommand runs args as a stdio MCP server as the hub runs its
// upstreams (daemon.StartServerCommand) and serves it in-process: the
// client gets the hub's tolerance (junk lines on the server's stdout are
// skipped, odd schemas are fixed, the process tree is reaped), and the
// server's stderr is passed through to ours.
func connectCommand(ctx context.Context, env *Env, client *mcp.Client, args []string) (*mcp.ClientSession, func(), error) {
	logger := slog.New(&passStderr{w: env.Stderr})
	srv, err := daemon.StartServerCommand(args, env.Environ(), logger)
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	if err := srv.WaitReady(ctx); err != nil {
		srv.Close()
		return nil, nil, fmt.Errorf("connect to %s: %w", args[0], err)
	}
	cs, closeSession, err := srv.Connect(ctx, client)
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return cs, func() { closeSession(); srv.Close() }, nil
}

// passStderr is the slog handler for a command target: the server's
// stderr lines are written as they are, other records only from Warn up.
type passStderr struct {
	w  io.Writer
	mu sync.Mutex
}

func (h *passStderr) Enabled(_ context.Context, l slog.Level) bool { return true }
func (h *passStderr) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *passStderr) WithGroup(string) slog.Handler                { return h }

func (h *passStderr) Handle(_ context.Context, r slog.Record) error {
	var line string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			line = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case r.Message == "stderr":
		fmt.Fprintln(h.w, line)
	case r.Message == "upstream connection failed":
		// The command's own error says it, once.
	case r.Level >= slog.LevelWarn:
		var b strings.Builder
		r.Attrs(func(a slog.Attr) bool {
			if a.Key != junction.LogKeySource {
				fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			}
			return true
		})
		fmt.Fprintf(h.w, "junction: %s%s\n", r.Message, b.String())
	}
	return nil
}
