package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/httpguard"
	"github.com/junction-mcp/junction/internal/statuspage"
)

// HTTPConfig configures [Daemon.ServeHTTP].
type HTTPConfig struct {
	// Addr is the listen address, host:port. Port 0 picks a free port; the
	// chosen address is passed to Ready.
	Addr string
	// Tokens are the accepted API tokens (Authorization: Bearer or
	// X-API-Key). At least one is required unless InsecureNoAuth.
	Tokens []string
	// OAuth, if non-nil, also accepts an authorization server's access
	// tokens (docs/auth.md); Tokens may then be empty.
	OAuth *FrontAuth
	// InsecureNoAuth serves without authentication; refused unless Addr is
	// a loopback address.
	InsecureNoAuth bool
	// AllowedHosts are extra Host header values accepted besides loopback
	// names and the listen host (for a hub behind a reverse proxy).
	AllowedHosts []string
	// AllowedOrigins are extra Origin values accepted (scheme://host:port)
	// besides http(s)://localhost and the hub's own address.
	AllowedOrigins []string

	MCP dataplane.HTTPOptions
	// Guard bounds slow clients (see package httpguard); the zero value is
	// its defaults.
	Guard httpguard.ServerOptions

	// Ready, if non-nil, is called with the bound address once listening.
	Ready func(addr net.Addr)
	// ShutdownTimeout bounds how long in-flight requests may take to finish
	// after ctx is done; zero means 10s.
	ShutdownTimeout time.Duration
}

// Handler returns the hub's HTTP front:
//
//	/mcp       Streamable HTTP (stateful, stateless or both)
//	/mcp/info  DiPeO-style server info: capabilities, tools, resources (GET)
//	/mcp/messages  DiPeO-style plain JSON-RPC: one request in, one JSON response out
//	/sse       legacy HTTP+SSE (protocol 2024-11-05); POSTs go to /sse?sessionid=…
//	/healthz   liveness, no auth
//	/readyz    readiness, no auth: 200 once startup is over (every upstream
//	           and plugin connected or failed, or the startup budget ran out)
//	/metrics   Prometheus metrics
//
// Everything but /healthz requires a token unless cfg.InsecureNoAuth, and
// every request's Host and Origin are checked against DNS rebinding.
func (d *Daemon) Handler(cfg HTTPConfig, listenHost string) http.Handler {
	mcpOpts := cfg.MCP
	if d.shared != nil {
		mcpOpts.SessionKey = d.shared.SessionKey // sessions any replica can take up
		mcpOpts.SessionLedger = d.shared.Sessions
	}
	if mcpOpts.Logger == nil {
		mcpOpts.Logger = d.logger
	}
	mux := http.NewServeMux()
	profiles := &profileHandlers{d: d, opts: mcpOpts, handlers: map[*junction.View]http.Handler{}}
	defaultMCP := d.Plane(d.View).HTTPHandler(&mcpOpts)
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// By its canonical key, as net/http stores it: Get would
		// canonicalize ProfileHeader again on every request.
		if name := r.Header[ProfileHeader]; len(name) > 0 && name[0] != "" {
			profiles.serve(w, r, name[0])
			return
		}
		defaultMCP.ServeHTTP(w, r)
	})
	mux.Handle("/mcp", mcp)
	mux.HandleFunc("/mcp/p/{profile}", func(w http.ResponseWriter, r *http.Request) {
		profiles.serve(w, r, r.PathValue("profile"))
	})
	mux.HandleFunc("/status", d.statusHandler)
	mux.Handle("/mcp/info", d.plainInfo(cfg))
	mux.Handle("/mcp/messages", d.plainMessages(mcpOpts))
	sse := d.Plane(d.View).SSEHandler(mcpOpts.MaxRequestBytes)
	mux.Handle("/sse", sse)
	mux.Handle("/metrics", d.Metrics.Handler())
	mux.HandleFunc("/auth/tokens", d.tokensHandler)
	mux.HandleFunc("/auth/tokens/{server}", d.tokensHandler)
	mux.HandleFunc("/", d.page(!cfg.InsecureNoAuth, frontIndex))
	return d.protect(byPath("/mcp", mcp, mux), cfg, listenHost)
}

// byPath serves the requests for path with h, where mux sends them, and
// all others with mux. Nearly every request is for the MCP endpoint:
// they skip the mux's cleaning of their path and walk of its patterns.
func byPath(path string, h http.Handler, mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path && r.URL.RawPath == "" && r.Method != http.MethodConnect {
			h.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// protect puts in front of routes what every listener has: the token
// check (a header, or for the status page, /status and /metrics the
// browser session cookie of the login form), the login and logout, the
// page's stylesheet, /healthz and /readyz without auth, the Host and
// Origin checks, and the request counts.
func (d *Daemon) protect(routes http.Handler, cfg HTTPConfig, listenHost string) http.Handler {
	protected := routes
	root := http.NewServeMux()
	if cfg.OAuth != nil {
		cfg.OAuth.seen = d.frontTokens.remember
		for _, p := range cfg.OAuth.Resource.MetadataPaths() {
			root.Handle(p, cfg.OAuth.metadataHandler())
		}
	}
	if cfg.InsecureNoAuth {
		root.HandleFunc("/login", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/", http.StatusSeeOther) // no auth, no login
		})
	} else {
		tokens := httpguard.NewTokens(cfg.Tokens...)
		login := statuspage.NewAuth(tokens, cfg.AllowedOrigins...)
		login.Logger = d.logger
		protected = requireToken(protected, tokens, login)
		protected = cfg.OAuth.front(protected, routes, cfg.Tokens, d.logger)
		root.HandleFunc("/login", login.Login)
		root.HandleFunc("/logout", login.Logout)
	}
	root.HandleFunc(statuspage.CSSPath, statuspage.ServeCSS)
	root.HandleFunc("/healthz", d.healthz)
	// A user's browser signs in to a per-user server here, without the
	// front's token (usercreds.go).
	root.HandleFunc("/auth/connect/{flow}", d.signInStart)
	root.HandleFunc("/auth/callback", d.signInCallback)
	root.HandleFunc("/readyz", d.readyz)
	root.Handle("/", protected)
	return d.Metrics.countRequests(checkHostOrigin(byPath("/mcp", protected, root), listenHost, cfg.AllowedHosts, cfg.AllowedOrigins))
}

// failedSources returns the upstreams in state failed, and how many
// upstreams there are.
func (d *Daemon) failedSources() (failed []string, upstreams int) {
	failed = []string{}
	for _, s := range d.Status().Sources {
		if s.Kind != KindUpstream || s.State == StateQuarantined {
			continue // a server in quarantine is not started: neither up nor failed
		}
		upstreams++
		if s.State == "failed" {
			failed = append(failed, s.Name)
		}
	}
	return failed, upstreams
}

// healthz is liveness: 200 while the process serves, whatever its sources
// do (restarting junction mends no upstream). The body says "degraded"
// and names the failed upstreams when there are any.
func (d *Daemon) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	failed, _ := d.failedSources()
	body := struct {
		Status string   `json:"status"`
		Tools  int      `json:"tools"`
		Failed []string `json:"failed"`
	}{Status: "ok", Tools: len(d.View.ToolNames()), Failed: failed}
	if len(failed) > 0 {
		body.Status = "degraded"
	}
	json.NewEncoder(w).Encode(body)
}

// readyz answers 200 once the hub's startup is over (see
// junction.Hub.Started) and 503 before, with the sources still
// connecting, so a load balancer sends no host to a replica whose first
// lists would wait; and 503 again while every upstream has failed (a
// replica with none of its servers is no use to a host; another may
// have them).
func (d *Daemon) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	failed, upstreams := d.failedSources()
	body := struct {
		Status     string   `json:"status"`
		Connecting []string `json:"connecting"`
		Failed     []string `json:"failed"`
	}{Status: "ready", Connecting: d.Hub.Connecting(), Failed: failed}
	if body.Connecting == nil {
		body.Connecting = []string{}
	}
	switch {
	case !d.Hub.Started():
		body.Status = "starting"
		w.WriteHeader(http.StatusServiceUnavailable)
	case upstreams > 0 && len(failed) == upstreams:
		body.Status = "unavailable"
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(body)
}

// ServeHTTP listens on cfg.Addr and serves [Daemon.Handler] until ctx is
// done, then shuts down: new requests are refused, in-flight ones get
// cfg.ShutdownTimeout to finish, and open sessions are closed.
func (d *Daemon) ServeHTTP(ctx context.Context, cfg HTTPConfig) error {
	cfg, err := d.dipeoHTTP(cfg) // DiPeO's MCP_* variables, when the dipeo pack is served
	if err != nil {
		return err
	}
	if err := CheckListen(cfg.Addr, cfg.InsecureNoAuth); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(cfg.Addr)
	if !cfg.InsecureNoAuth && len(cfg.Tokens) == 0 && cfg.OAuth == nil {
		return errors.New("HTTP needs at least one token (-token, -token-file or JUNCTION_TOKEN), or -insecure-no-auth on a loopback address")
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Slow clients are bounded (httpguard): headers, bodies and writes that
	// stop making progress, idle connections. A tool call may run as long
	// as it needs, and an SSE stream may idle between events.
	srv := httpguard.NewServer(d.Handler(cfg, host), cfg.Guard)
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	d.shared.setAddress(ln.Addr())
	d.setPublicBase(cfg, ln.Addr())
	if cfg.Ready != nil {
		cfg.Ready(ln.Addr())
	}
	d.logger.Info("serving HTTP", "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "auth", !cfg.InsecureNoAuth)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	timeout := cfg.ShutdownTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	// Shutdown must finish even though ctx is done. In order: stop
	// accepting connections, let tool calls in flight finish, then close
	// host sessions (their open GET streams would otherwise keep Shutdown
	// waiting), then wait for the server.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	srv.SetKeepAlivesEnabled(false)
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	if n := d.Hub.InFlight(); n > 0 {
		d.logger.Info("waiting for calls in flight", "calls", n)
	}
	if err := d.Hub.WaitIdle(sctx); err != nil {
		d.logger.Warn("calls still in flight at shutdown timeout", "calls", d.Hub.InFlight())
	}
	d.Hub.Close()
	if err := <-shut; err != nil {
		srv.Close()
	}
	<-errc
	d.logger.Info("HTTP server stopped")
	return nil
}

// CheckListen reports whether addr is a usable listen address for -http,
// and whether serving it without auth is allowed (loopback only).
func CheckListen(addr string, insecureNoAuth bool) error {
	return checkListen("-http", addr, insecureNoAuth)
}

// checkListen is CheckListen for the listener of the flag named flag.
func checkListen(flag, addr string, insecureNoAuth bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q: %v (want host:port, for example 127.0.0.1:8080)", flag, addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%s %q: port must be a number from 0 to 65535", flag, addr)
	}
	if insecureNoAuth && !isLoopbackHost(host) {
		return fmt.Errorf("-insecure-no-auth is only allowed on a loopback address (127.0.0.1, ::1, localhost), not %q", host)
	}
	return nil
}

// requireToken accepts a request carrying one of tokens as a bearer token
// or X-API-Key (see httpguard.Tokens: no timing leak of content or
// length), naming its user after the token (sessions are bound to it,
// see junction.WithUser), and a request for the status page, /status or /metrics
// carrying the session cookie of login (MCP endpoints take no cookie:
// docs/security.md says why). A browser asking for the page without
// either is sent to the login form.
func requireToken(next http.Handler, accepted httpguard.Tokens, login *statuspage.Auth) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		presented := r.Header.Get("X-API-Key")
		if presented == "" {
			presented = httpguard.Bearer(r)
		}
		if user, ok := accepted.Check(presented); ok {
			next.ServeHTTP(w, r.WithContext(junction.WithUser(r.Context(), user)))
			return
		}
		if presented == "" && cookiePath(r.URL.Path) {
			if login.Valid(r) {
				next.ServeHTTP(w, r)
				return
			}
			if r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && statuspage.WantsHTML(r) {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="junction"`)
		msg := "authentication required: send Authorization: Bearer <token> or X-API-Key: <token>"
		if presented != "" {
			msg = "invalid token"
		}
		httpError(w, http.StatusUnauthorized, msg)
	})
}

// cookiePath reports whether the browser session cookie is accepted for
// path.
func cookiePath(path string) bool {
	return path == "/" || path == "/status" || path == "/metrics"
}

// checkHostOrigin refuses requests whose Host is not one the hub answers
// to, or whose Origin is a foreign site: the DNS-rebinding defence the MCP
// specification asks of local servers.
func checkHostOrigin(next http.Handler, listenHost string, extraHosts, extraOrigins []string) http.Handler {
	// A client sends the same Host with each of its requests: the last
	// one allowed is recognised by comparison, not parsed again.
	var allowed atomic.Pointer[string]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if last := allowed.Load(); last == nil || *last != r.Host {
			if !hostAllowed(hostOnly(r.Host), listenHost, extraHosts) {
				http.Error(w, fmt.Sprintf("forbidden: Host %q is not allowed (see -allowed-host)", r.Host), http.StatusForbidden)
				return
			}
			host := r.Host
			allowed.Store(&host)
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, r.Host, extraOrigins) {
			http.Error(w, fmt.Sprintf("forbidden: Origin %q is not allowed (see -allowed-origin)", origin), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.Trim(h, "[]")
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackHost(h string) bool {
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func hostAllowed(host, listenHost string, extra []string) bool {
	if isLoopbackHost(host) {
		return true
	}
	if listenHost != "" && strings.EqualFold(host, strings.Trim(listenHost, "[]")) && !isUnspecified(listenHost) {
		return true
	}
	for _, e := range extra {
		if strings.EqualFold(host, e) || e == "*" {
			return true
		}
	}
	return false
}

func isUnspecified(h string) bool {
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return h == "" || (ip != nil && ip.IsUnspecified())
}

func originAllowed(origin, requestHost string, extra []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if isLoopbackHost(u.Hostname()) || strings.EqualFold(u.Host, requestHost) {
		return true
	}
	for _, e := range extra {
		if strings.EqualFold(strings.TrimRight(e, "/"), origin) || e == "*" {
			return true
		}
	}
	return false
}

// countRequests counts requests by endpoint and status class.
func (m *Metrics) countRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		endpoint := r.URL.Path
		switch {
		case endpoint == "/mcp", endpoint == "/sse", endpoint == "/metrics", endpoint == "/healthz", endpoint == "/readyz", endpoint == "/",
			endpoint == "/status", endpoint == "/login", endpoint == "/logout":
		case strings.HasPrefix(endpoint, "/mcp/"):
			endpoint = "/mcp/*"
		default:
			endpoint = "other"
		}
		m.requests.WithLabelValues(endpoint, statusClass(rec.status)).Inc()
	})
}

// statusClasses are the status classes of the statuses a server sends.
var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// statusClass is status's class, "2xx" for 204 say.
func statusClass(status int) string {
	if c := status/100 - 1; c >= 0 && c < len(statusClasses) {
		return statusClasses[c]
	}
	return fmt.Sprintf("%dxx", status/100)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Flush lets SSE streams through the recorder.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// ProfileHeader names a profile on a request to /mcp, as an alternative to
// the /mcp/p/NAME path.
const ProfileHeader = "X-Junction-Profile"

// profileHandlers serves each profile's view, making its handler on first
// use and again when a reload replaces the view.
type profileHandlers struct {
	d    *Daemon
	opts dataplane.HTTPOptions

	mu       sync.Mutex
	handlers map[*junction.View]http.Handler
}

func (p *profileHandlers) serve(w http.ResponseWriter, r *http.Request, name string) {
	v := p.d.Profile(name)
	if v == nil {
		http.Error(w, fmt.Sprintf("unknown profile %q", name), http.StatusNotFound)
		return
	}
	p.mu.Lock()
	h, ok := p.handlers[v]
	if !ok {
		h = p.d.Plane(v).HTTPHandler(&p.opts)
		p.handlers[v] = h
	}
	p.mu.Unlock()
	h.ServeHTTP(w, r)
}
