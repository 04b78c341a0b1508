package upstream

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Transport names how a [Server] reaches its upstream.
type Transport string

const (
	// TransportStdio runs Config.Command and speaks newline-delimited
	// JSON-RPC over its stdin and stdout.
	TransportStdio Transport = "stdio"
	// TransportSSE is the legacy HTTP+SSE transport (protocol 2024-11-05):
	// an event stream at Config.URL and POSTs to the endpoint it names.
	TransportSSE Transport = "sse"
	// TransportStreamableHTTP is the Streamable HTTP transport: one
	// endpoint at Config.URL.
	TransportStreamableHTTP Transport = "http"
)

// Defaults for the zero values of [Config] fields.
const (
	DefaultConnectTimeout = 30 * time.Second
	DefaultCallTimeout    = 60 * time.Second
	DefaultStopTimeout    = 2 * time.Second
	DefaultWithdrawAfter  = 60 * time.Second

	DefaultMaxHostSessions = 16
)

// Config describes one upstream MCP server. It is a plain value: the
// package never reads files or the environment to fill it in. The zero
// value of each field is documented; [Config.Validate] reports what is
// missing or contradictory.
type Config struct {
	// Transport selects the transport. Empty means TransportStdio when
	// Command is set and TransportStreamableHTTP when URL is set.
	Transport Transport

	// Command, Args, Env and Dir describe a stdio server. The process gets
	// the parent's environment without UnsetEnv, plus Env (Env wins); it
	// runs in Dir (empty: the current directory) and in its own process
	// group.
	Command  string
	Args     []string
	Env      map[string]string
	UnsetEnv []string
	Dir      string
	// Sandbox, if set with a level other than "off", confines a stdio
	// server: it then gets only PATH, HOME, LANG, LC_ALL, the variables
	// Sandbox.Env names, and Env (UnsetEnv does not apply: nothing else is
	// inherited). See [Sandbox].
	Sandbox *Sandbox

	// URL is the endpoint of an SSE or Streamable HTTP server.
	URL string
	// Headers are added to every HTTP request to the server.
	Headers map[string]string
	// BearerToken, if set, is sent as "Authorization: Bearer <token>".
	// It is never logged.
	BearerToken string
	// HTTPClient, if non-nil, is used for HTTP transports (its Transport is
	// wrapped to add Headers and BearerToken). Nil means a client with no
	// overall timeout, so event streams are not cut.
	HTTPClient *http.Client
	// Auth, if non-nil, wraps the HTTP transport of SSE and Streamable
	// HTTP connections, outside Headers and BearerToken: junction's OAuth
	// client (internal/oauth) adds the token and answers 401 and 403.
	Auth interface {
		WrapTransport(http.RoundTripper) http.RoundTripper
	}

	// ConnectTimeout bounds one connection attempt (spawn or dial,
	// initialize, and listing the catalog). Zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds a tool call that makes no progress: the timer
	// restarts whenever the upstream sends a progress notification for
	// the call. Zero means DefaultCallTimeout; negative means no timeout.
	CallTimeout time.Duration
	// ToolTimeouts overrides CallTimeout for single tools, by the
	// upstream's own tool name. Same meaning of zero and negative values.
	ToolTimeouts map[string]time.Duration
	// KeepAlive, if positive, pings the server at that interval; a failed
	// ping ends the session and starts a reconnect. Protocol 2026-07-28
	// has no ping, so sessions at that version ignore it.
	KeepAlive time.Duration
	// StopTimeout is how long each stage of stopping a stdio server may
	// take: after stdin is closed, after SIGTERM to the process group, and
	// after SIGKILL. Zero means DefaultStopTimeout. A change applied with
	// [Server.Update] counts from the next process the server starts.
	StopTimeout time.Duration
	// WithdrawAfter is how long the server may go without a working
	// session before its catalog is withdrawn. When a session ends, the
	// server's tools, resources and prompts stay listed while it
	// reconnects, and calls wait for the new session; once it has been
	// unable to get one for WithdrawAfter without a break, its catalog is
	// emptied (the listener is told, so hosts see the tools go), and calls
	// fail at once with [junction.ErrSourceDown] after a connection
	// attempt. The catalog comes back when the server reconnects. Zero
	// means DefaultWithdrawAfter; negative means never withdraw.
	WithdrawAfter time.Duration

	// ProtocolVersion, if set, is the MCP protocol version offered to the
	// server (for example "2025-06-18" for a server that mishandles newer
	// ones). Empty means the newest version go-sdk speaks.
	ProtocolVersion string

	// PerHost gives each host its own session with the server, so that
	// the sampling, elicitation and roots requests a server before
	// protocol 2026-07-28 sends reach the host whose call caused them
	// whatever else is in flight, and the server sees that host's
	// capabilities in initialize. A host session (stdio, or a stateful
	// HTTP session) keeps its server session until it ends; a host at
	// 2026-07-28 without a session gets one for each call, until the call
	// is over. For a stdio server each session is a process. The shared
	// session still serves the catalog and the calls made without a
	// host. A server that negotiates 2026-07-28 never needs this (it asks
	// inside its results) and is always shared. Default false: one
	// session for all hosts, and a request the server makes while calls
	// from several hosts are in flight is refused rather than guessed.
	PerHost bool
	// MaxHostSessions bounds the host sessions of a PerHost server open
	// at once, and the users' sessions of a server with UserAuth; a call
	// that would need one more fails at once with an error saying so.
	// Zero means DefaultMaxHostSessions.
	MaxHostSessions int

	// UserAuth, if set, gives the server per-user credentials: a request
	// made for an authenticated user (junction.User of its context) goes
	// on a session of that user's own, kept until [Server.DropUser],
	// Close, or ten minutes without a request, a call or a resource
	// subscription on it; its HTTP requests UserAuth(user) wraps in place of Auth
	// (Headers' Authorization and BearerToken are not sent on it). A
	// session never carries two users' requests. Requests without a user
	// (the catalog, a host without a user) use the shared session, with
	// Auth. Only for SSE and Streamable HTTP servers; PerHost does not
	// apply with it.
	UserAuth func(user string) interface {
		WrapTransport(http.RoundTripper) http.RoundTripper
	}

	// Allow, if non-empty, lists the only tools served (upstream names).
	// Otherwise Deny lists tools never served. Setting both is an error.
	Allow []string
	Deny  []string

	// maxLine bounds one line from a stdio server; zero means
	// maxLineLength. Tests set it lower, so that a line over it is not
	// 16 MiB long.
	maxLine int
}

// TransportKind returns the transport c uses, resolving the empty value.
func (c Config) TransportKind() Transport { return c.transport() }

// transport is TransportKind without a copy of c. Like the other methods
// the configuration in force is asked on every call (liveConfig), it
// takes a pointer: a Config is a few hundred bytes.
func (c *Config) transport() Transport {
	if c.Transport != "" {
		return c.Transport
	}
	if c.Command == "" && c.URL != "" {
		return TransportStreamableHTTP
	}
	return TransportStdio
}

// Validate reports the first few problems with c, each naming its field
// ("command: must not be empty"). A nil error means c can be used.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	switch c.TransportKind() {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			bad("command", "must not be empty")
		}
		if c.URL != "" {
			bad("url", "must be empty for the stdio transport")
		}
	case TransportSSE, TransportStreamableHTTP:
		if c.URL == "" {
			bad("url", "must not be empty for the %s transport", c.TransportKind())
		} else if u, err := url.Parse(c.URL); err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // without the URL, which may hold a secret
			}
			bad("url", "does not parse: %v", err)
		} else if u.Scheme != "http" && u.Scheme != "https" {
			bad("url", "scheme %q: want http or https", u.Scheme)
		} else if u.Host == "" {
			bad("url", "has no host")
		}
		if c.Command != "" {
			bad("command", "must be empty for the %s transport", c.TransportKind())
		}
	default:
		bad("transport", "unknown transport %q (want stdio, sse or http)", c.Transport)
	}
	for k := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n") {
			bad("headers", "invalid header name %q", k)
		}
	}
	if len(c.Allow) > 0 && len(c.Deny) > 0 {
		bad("allow", "allow and deny are mutually exclusive")
	}
	if c.MaxHostSessions < 0 {
		bad("max_host_sessions", "must not be negative")
	}
	if c.UserAuth != nil && c.TransportKind() == TransportStdio {
		bad("user_auth", "per-user credentials are for SSE and Streamable HTTP servers")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"connect_timeout", c.ConnectTimeout}, {"keep_alive", c.KeepAlive}, {"stop_timeout", c.StopTimeout}} {
		if d.v < 0 {
			bad(d.field, "must not be negative")
		}
	}
	return errors.Join(errs...)
}

// Equal reports whether c and o describe the same server in every
// field. HTTPClient is compared by identity.
func (c Config) Equal(o Config) bool {
	return !c.NeedsRestart(o) &&
		c.ConnectTimeout == o.ConnectTimeout && c.CallTimeout == o.CallTimeout &&
		maps.Equal(c.ToolTimeouts, o.ToolTimeouts) &&
		c.StopTimeout == o.StopTimeout && c.WithdrawAfter == o.WithdrawAfter &&
		c.MaxHostSessions == o.MaxHostSessions &&
		slices.Equal(c.Allow, o.Allow) && slices.Equal(c.Deny, o.Deny)
}

// NeedsRestart reports whether going from o to c needs a new process or
// connection: the transport, command, arguments, environment, working
// directory, URL, headers, bearer token, HTTP client (by identity), keep
// alive, protocol version or PerHost differ. The other fields
// (CallTimeout, ToolTimeouts, ConnectTimeout, StopTimeout, WithdrawAfter,
// MaxHostSessions, Allow, Deny) can be applied to a running server; see
// [Server.Update].
func (c Config) NeedsRestart(o Config) bool {
	return c.TransportKind() != o.TransportKind() ||
		c.Command != o.Command || !slices.Equal(c.Args, o.Args) ||
		!maps.Equal(c.Env, o.Env) || !slices.Equal(c.UnsetEnv, o.UnsetEnv) || c.Dir != o.Dir ||
		c.URL != o.URL || !maps.Equal(c.Headers, o.Headers) ||
		c.BearerToken != o.BearerToken || c.HTTPClient != o.HTTPClient || c.Auth != o.Auth ||
		c.KeepAlive != o.KeepAlive || c.ProtocolVersion != o.ProtocolVersion ||
		c.PerHost != o.PerHost || (c.UserAuth == nil) != (o.UserAuth == nil) || !reflect.DeepEqual(c.Sandbox, o.Sandbox)
}

// allows reports whether the filters let tool through.
func (c *Config) allows(tool string) bool {
	if len(c.Allow) > 0 {
		return slices.Contains(c.Allow, tool)
	}
	return !slices.Contains(c.Deny, tool)
}

// callTimeout returns the no-progress timeout for tool; zero means none.
func (c *Config) callTimeout(tool string) time.Duration {
	d, ok := c.ToolTimeouts[tool]
	if !ok || d == 0 {
		d = c.CallTimeout
	}
	switch {
	case d == 0:
		return DefaultCallTimeout
	case d < 0:
		return 0
	}
	return d
}

func (c *Config) connectTimeout() time.Duration {
	if c.ConnectTimeout > 0 {
		return c.ConnectTimeout
	}
	return DefaultConnectTimeout
}

func (c *Config) stopTimeout() time.Duration {
	if c.StopTimeout > 0 {
		return c.StopTimeout
	}
	return DefaultStopTimeout
}

// withdrawAfter returns how long the server may be without a session
// before its catalog is withdrawn; negative means never.
func (c *Config) withdrawAfter() time.Duration {
	switch {
	case c.WithdrawAfter == 0:
		return DefaultWithdrawAfter
	case c.WithdrawAfter < 0:
		return -1
	}
	return c.WithdrawAfter
}

// clone returns a deep copy of c, so a caller mutating its maps and slices
// after Add cannot change a running server.
func (c Config) clone() Config {
	c.Args = slices.Clone(c.Args)
	c.Env = maps.Clone(c.Env)
	c.UnsetEnv = slices.Clone(c.UnsetEnv)
	c.Headers = maps.Clone(c.Headers)
	c.ToolTimeouts = maps.Clone(c.ToolTimeouts)
	c.Allow = slices.Clone(c.Allow)
	c.Deny = slices.Clone(c.Deny)
	if c.Sandbox != nil {
		sb := *c.Sandbox
		sb.ReadOnly, sb.ReadWrite = slices.Clone(sb.ReadOnly), slices.Clone(sb.ReadWrite)
		sb.Deny, sb.Network, sb.Env = slices.Clone(sb.Deny), slices.Clone(sb.Network), slices.Clone(sb.Env)
		c.Sandbox = &sb
	}
	return c
}

// liveConfig is a server's configuration, read without a lock by calls
// and replaced as a whole by [Server.Update]: a reader sees the old or the
// new configuration, never a mix. Fields that need a restart (see
// [Config.NeedsRestart]) never change in a running server. The zero value
// reads as the zero Config.
type liveConfig struct {
	p atomic.Pointer[Config]
}

var zeroConfig Config

// load returns the configuration in force; the caller must not modify it.
func (l *liveConfig) load() *Config {
	if c := l.p.Load(); c != nil {
		return c
	}
	return &zeroConfig
}

func (l *liveConfig) store(c Config) { l.p.Store(&c) }

// The methods of Config that calls use, on the configuration in force.

func (l *liveConfig) TransportKind() Transport              { return l.load().transport() }
func (l *liveConfig) allows(tool string) bool               { return l.load().allows(tool) }
func (l *liveConfig) callTimeout(tool string) time.Duration { return l.load().callTimeout(tool) }
func (l *liveConfig) connectTimeout() time.Duration         { return l.load().connectTimeout() }
func (l *liveConfig) withdrawAfter() time.Duration          { return l.load().withdrawAfter() }

// maxHostSessions returns MaxHostSessions, resolving zero.
func (c *Config) maxHostSessions() int {
	if c.MaxHostSessions == 0 {
		return DefaultMaxHostSessions
	}
	return c.MaxHostSessions
}
