// Package config reads junction's configuration file: YAML or JSON, in
// junction's own form or as the mcpServers / servers object that Claude
// Desktop, Claude Code, Cursor and VS Code write.
//
//	cfg, err := config.Load("junction.yaml", os.Getenv)
//	if err != nil {
//		// err lists every problem, each as "file:line: path: message".
//	}
//	for name, s := range cfg.Servers { ... }
//
// # Order of work
//
// [Parse] is pure: it reads bytes, never files, the environment (only
// through the getenv it is given), the clock or a logger. It applies, in
// this order: defaults; a strict decode (an unknown key or a value of the
// wrong type is an error naming its path and line); ${VAR} expansion of the
// fields listed in docs/config.md; then [Config.Validate]. All problems are
// reported together (see [Errors]).
//
// [Load] reads a file and calls Parse. [Watcher] re-reads a file when it
// changes or on SIGHUP and hands over only configs that parse and validate;
// [Compare] tells a reloading daemon which sources to start, stop, restart
// or keep.
package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"
)

// Transport names for [Server.Transport].
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http" // Streamable HTTP
)

// Drift policies for [Source.Drift].
const (
	DriftWarn   = "warn"
	DriftBlock  = "block"
	DriftAccept = "accept"
)

// Prefix modes for [Source.Prefix]; they are the names
// junction.ParsePrefixMode accepts.
const (
	PrefixAlways     = "always"
	PrefixOnConflict = "on-conflict"
	PrefixNever      = "never"
	PrefixMCP        = "mcp"
)

// Server.Auth values.
const (
	AuthOAuth             = "oauth"
	AuthClientCredentials = "client_credentials"
	AuthJWTBearer         = "jwt_bearer"
	AuthEnterprise        = "enterprise"
	AuthNone              = "none"
)

// Server.Sessions modes.
const (
	SessionsShared  = "shared"
	SessionsPerHost = "per_host"
)

// Server.Credentials modes.
const (
	CredentialsShared  = "shared"
	CredentialsPerUser = "per_user"
)

// maxHostSessions bounds Server.MaxHostSessions: each is a process or a
// connection.
const maxHostSessions = 1024

// NoTimeout is the value of a timeout written as "none": no bound at all.
const NoTimeout time.Duration = -1

// Shapes for [Config.Shape].
const (
	ShapeJunction   = "junction"   // junction's own keys
	ShapeMCPServers = "mcpServers" // Claude Desktop, Claude Code, Cursor, Windsurf, Cline
	ShapeVSCode     = "vscode"     // VS Code's .vscode/mcp.json
)

// Config is a parsed configuration file. The zero value is an empty,
// valid configuration.
type Config struct {
	// Servers are the upstream MCP servers, by name, from "servers" and
	// "mcpServers" (which may both appear; a name may not be in both).
	Servers map[string]*Server
	// Packs are the built-in packs to serve, by name. Nil means the
	// daemon's default packs; an empty non-nil map means none.
	Packs map[string]*Pack
	// Plugins are toolbox plugins, by name.
	Plugins map[string]*Plugin
	// Presets are named tool sets, by the names the hub serves.
	Presets map[string][]string
	// Profiles are named subsets served on /mcp/p/<name>.
	Profiles map[string]*Profile
	// Discovery is how the default view (stdio, /mcp) presents its tools
	// ("discovery"); profiles have their own.
	Discovery Discovery
	HTTP      HTTP
	Lock      Lock
	Log       Log
	Audit     Audit
	// StartupBudget, if set ("startup_budget"), bounds how long hosts'
	// first lists wait for upstreams and plugins to connect; zero means
	// they do not wait. Nil means junction's default (10s).
	StartupBudget *time.Duration
	// Store is where replicas keep shared state ("store"): a PostgreSQL
	// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE), with ${ENV}
	// expanded. Empty means each process keeps its own state in its data
	// directory.
	Store string
	// Sandbox is the sandbox of every stdio server and spawned plugin
	// that does not set its own (docs/sandbox.md); nil means off.
	Sandbox *Sandbox
	// CodeMode is the default view's code mode, and the script limits of
	// every view's.
	CodeMode CodeMode
	// Registries are the MCP registries (API v0.1 base URLs) that the
	// registry commands ask, in order ("registries"): a company's own
	// first, say. Empty means the official registry. The hub itself never
	// asks a registry.
	Registries []string

	// Shape says which form the file used (one of the Shape* constants).
	// A junction file that also has an mcpServers object is ShapeJunction.
	Shape string

	// Warnings are keys that a host defines and junction accepts but does
	// not act on (such as VS Code's "dev" or Claude Desktop's
	// "globalShortcut"), sorted by line.
	Warnings []Warning

	// serverPaths maps a server name to its path in the file
	// ("servers.x" or "mcpServers.x"); missing means "servers.x".
	serverPaths map[string]string
	// lines maps a field path to the line it was read from, for Validate.
	lines map[string]int
	// digest is the SHA-256 of the bytes Parse read; the Watcher uses it to
	// skip writes that change nothing.
	digest [sha256.Size]byte
}

// Version identifies the file's content: the first 12 hex digits of the
// SHA-256 of the bytes Parse read. Replicas that run the same file report
// the same version.
func (c *Config) Version() string { return hex.EncodeToString(c.digest[:6]) }

// Source holds the settings that every kind of source (server, plugin,
// pack) has: how the hub names, filters, bounds and pins its tools.
type Source struct {
	// Prefix is "always", "on-conflict" or "never". Default: "always" for
	// servers and plugins, "never" for packs (their tools are already
	// namespaced).
	Prefix string
	// Tools filters the source's own (unprefixed) tool names.
	Tools ToolFilter
	// Timeout bounds each call to the source; zero means the upstream
	// package's default and [NoTimeout] ("none" in the file) means no
	// bound. Timeouts restart when the source reports progress.
	Timeout time.Duration
	// ToolTimeouts override Timeout for single tools, by unprefixed name;
	// NoTimeout means no bound.
	ToolTimeouts map[string]time.Duration
	// Drift is the policy when the source's tools differ from the lock
	// file: "warn" (default), "block" or "accept".
	Drift string
	// Disabled sources are kept in the config but not started.
	Disabled bool
}

// ToolFilter is an allow list or a deny list of unprefixed tool names;
// never both.
type ToolFilter struct {
	Allow []string
	Deny  []string
}

// Server is an upstream MCP server.
type Server struct {
	// Transport is "stdio", "sse" or "http" (Streamable HTTP). When the
	// file does not say, it is "stdio" if Command is set and "http" if URL
	// is set.
	Transport string

	// Stdio servers.
	Command string
	Args    []string
	// Env is added to junction's own environment for the child.
	Env map[string]string
	// UnsetEnv are variables removed from the child's environment (VS
	// Code's "env": {"NAME": null}).
	UnsetEnv []string
	Cwd      string
	// Sandbox confines the stdio server (docs/sandbox.md); nil means the
	// top-level sandbox, if any.
	Sandbox *Sandbox
	// EnvFile is a dotenv file (VS Code, Cursor) whose variables are added
	// before Env when the server starts. Parse does not read it.
	EnvFile string

	// SSE and Streamable HTTP servers.
	URL     string
	Headers map[string]string
	// BearerToken, if set, is sent as "Authorization: Bearer <token>".
	BearerToken string
	// Auth is when the server's requests get OAuth: "" (on a 401 that
	// asks for a Bearer token), AuthOAuth, AuthClientCredentials or
	// AuthNone.
	Auth string
	// OAuthClientID and OAuthClientSecret are a client registered with
	// the server's authorization server beforehand; OAuthClientMetadataURL
	// is the HTTPS URL of a client ID metadata document describing
	// junction. See docs/oauth.md.
	OAuthClientID          string
	OAuthClientSecret      string
	OAuthClientMetadataURL string
	// OAuthClientKeyFile is a PEM private key that auth:
	// client_credentials authenticates with instead of
	// OAuthClientSecret (private_key_jwt); relative to the config file.
	OAuthClientKeyFile string
	// OAuthAssertionFile holds the workload's JWT that auth: jwt_bearer
	// presents (RFC 7523, workload identity federation); relative to the
	// config file, read at each token request.
	OAuthAssertionFile string
	// OAuthIdPIssuer, OAuthIdPClientID, OAuthIdPClientSecret and
	// OAuthIDTokenFile are for auth: enterprise (enterprise-managed
	// authorization): the company's identity provider, junction's client
	// there, and the file of the person's ID token from it (relative to
	// the config file).
	OAuthIdPIssuer       string
	OAuthIdPClientID     string
	OAuthIdPClientSecret string
	OAuthIDTokenFile     string
	// OAuthTokenExchange, with credentials: per_user, exchanges each
	// user's access token at the front for one to the server (RFC 8693),
	// as oauth_client_id, where the server's authorization server trusts
	// the front's issuer; a user without one signs in instead.
	OAuthTokenExchange bool

	// ConnectTimeout bounds one connection attempt (spawn or dial,
	// initialize, first listing); zero means the upstream package default.
	ConnectTimeout time.Duration
	// KeepAlive, if positive, pings the server at that interval.
	KeepAlive time.Duration
	// StopTimeout is how long each stage of stopping a stdio server may
	// take; zero means the upstream package default.
	StopTimeout time.Duration
	// ProtocolVersion, if set, is the MCP version offered to the server.
	ProtocolVersion string
	// WithdrawAfter is how long the server may go without a working
	// session before its tools stop being served (they stay listed while
	// it reconnects until then); zero means the upstream package default
	// and [NoTimeout] ("never" in the file) keeps them listed.
	WithdrawAfter time.Duration
	// Sessions is "shared" (the default, also "") or "per_host": each
	// host gets its own session with the server, so that the sampling,
	// elicitation and roots requests of a server before protocol
	// 2026-07-28 reach the host that caused them (upstream.Config.PerHost).
	Sessions string
	// MaxHostSessions bounds the per-host sessions open at once; zero
	// means the upstream package default.
	MaxHostSessions int
	// Credentials is "shared" (the default, also ""): every call uses the
	// hub's own credential; or "per_user" (an http or sse server): each
	// authenticated user's calls use that user's own OAuth token, on a
	// session of their own (docs/oauth.md, "Teams"). The hub's own
	// credential still lists the server's tools.
	Credentials string
	// Quarantine keeps a server that was added from a registry out of
	// service until an operator vets it ("junction approve NAME"): the
	// hub does not start it (status lists it as quarantined), while the
	// operator commands ("junction tools list -server NAME", approve)
	// start it in-process.
	Quarantine bool
	// Registry says which registry entry the server was added from
	// ("registry": {name, version, url}), as "junction add" writes it:
	// "junction registry check" and "junction update" read it. The hub
	// itself does not use it, and a change to it alone restarts nothing.
	Registry *RegistryRef

	Source
}

// RegistryRef names the registry entry a server was added from.
type RegistryRef struct {
	Name    string // the server's registry name, such as io.github.modelcontextprotocol/server-memory
	Version string // the exact version the entry pins
	URL     string // the registry's API base URL; empty means the configured registries
}

// Serves reports whether the hub starts the server: it is neither
// disabled nor quarantined.
func (s *Server) Serves() bool { return !s.Disabled && !s.Quarantine }

// Quarantined returns the names of the servers in quarantine (and not
// disabled), sorted.
func (c *Config) Quarantined() []string {
	var names []string
	for n, s := range c.Servers {
		if s.Quarantine && !s.Disabled {
			names = append(names, n)
		}
	}
	sortStrings(names)
	return names
}

// Plugin is a toolbox plugin: a program junction spawns (Command) or a
// Connect-RPC endpoint it dials (URL); exactly one of the two.
type Plugin struct {
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// Sandbox confines a spawned plugin (docs/sandbox.md) as a stdio
	// server's does; nil means the top-level sandbox, if any.
	Sandbox *Sandbox

	URL         string
	Headers     map[string]string
	BearerToken string

	Source
}

// Pack is a built-in pack and its settings.
type Pack struct {
	// Settings are passed to the pack, which validates them. String values
	// have ${VAR} expanded.
	Settings map[string]any

	Source
}

// Profile is a named subset of the hub, served on HTTP at
// /mcp/p/<name>. Its selection follows the hub's rule: the union of
// Presets and Tools (or everything, if both are empty), limited to the
// sources in Servers (all, if empty), minus Deny.
type Profile struct {
	// Servers names sources (servers, plugins or packs).
	Servers []string
	Tools   []string
	Presets []string
	Deny    []string
	// Discovery is how the profile presents its tools; the top-level
	// discovery section does not apply to profiles.
	Discovery Discovery
	// CodeMode is the profile's code mode (its Limits are the top
	// level's); the top-level code_mode does not apply to profiles.
	CodeMode CodeMode
}

// CodeMode is code mode (docs/code-mode.md): a run_script meta-tool
// whose scripts call the view's tools inside the hub.
type CodeMode struct {
	Enabled bool
	// Name renames the meta-tool; "" means run_script.
	Name string
	// Limits bound every script; set at the top level only, for the hub.
	Limits CodeLimits
}

// CodeLimits bound a script; zero fields take the engine's defaults
// (30s, 10s of CPU, 64 MiB, 100 calls, 4 at once, 1 MiB of output).
type CodeLimits struct {
	Wall, CPU  time.Duration
	Memory     int64
	Calls      int
	Concurrent int
	Output     int64
}

// Discovery modes for [Discovery.Mode].
const (
	DiscoveryList   = "list"
	DiscoverySearch = "search"
)

// Discovery is how a view presents its tools (docs/discovery.md): all of
// them in tools/list ("list", the default), or three meta-tools and the
// pinned tools ("search"), the others being found by searching.
type Discovery struct {
	// Mode is "list" (default, also "") or "search".
	Mode string
	// Pinned are the tools listed beside the meta-tools in search mode:
	// exposed names or path.Match patterns ("github__*").
	Pinned []string
	// Names rename the meta-tools; empty fields keep the defaults
	// (search_tools, describe_tools, call_tool).
	Names DiscoveryNames
	// Semantic, under the top-level discovery only (the index is the
	// hub's), adds an embeddings endpoint to tool search. Nil: off.
	Semantic *Semantic
}

// Semantic is the semantic stage of tool search: an OpenAI-compatible
// /v1/embeddings endpoint.
type Semantic struct {
	URL        string // a base (…/v1) or the full …/embeddings URL
	Model      string
	APIKey     string // sent as a bearer token; ${VAR} references are expanded
	Dimensions int
	Timeout    time.Duration
	Weight     float64 // 0: 1
}

// DiscoveryNames are the names of the meta-tools of search mode.
type DiscoveryNames struct {
	Search   string
	Describe string
	Call     string
}

// HTTP configures the HTTP front (junction serve -http).
type HTTP struct {
	// Listen is host:port; empty means the HTTP front is off unless the
	// command line asks for it.
	Listen string
	// Mode is "dual" (default), "stateful" or "stateless".
	Mode         string
	JSONResponse bool
	// SessionTimeout ends sessions that get no POST for that long; zero
	// means the hub's default, negative means never.
	SessionTimeout time.Duration
	// SessionPark parks quiet sessions (they keep under a KiB of heap
	// until the host comes back); zero means the hub's default, negative
	// means never.
	SessionPark time.Duration
	// MaxRequestBytes bounds request bodies; zero means the hub's default.
	MaxRequestBytes int64
	// Tokens are accepted API tokens; TokenFile holds more, one a line.
	Tokens    []string
	TokenFile string
	// AllowedHosts and AllowedOrigins extend the DNS-rebinding checks.
	AllowedHosts   []string
	AllowedOrigins []string
	// PublicURL is the hub's URL as browsers reach it (behind a reverse
	// proxy or load balancer): an absolute http(s) URL, with a path
	// prefix if the proxy adds one, no query or fragment. It is the base
	// of the sign-in links of per-user servers and of their redirect URI
	// (PUBLIC_URL/auth/callback); empty means the origin of Auth.Audience,
	// else the address the hub listens on.
	PublicURL string
	// InsecureNoAuth serves without a token; only allowed on a loopback
	// Listen address.
	InsecureNoAuth bool
	// Admin is host:port of the admin listener (the status page,
	// /status, /metrics, /healthz, /readyz; junction serve -admin),
	// served in stdio mode too; empty means none.
	Admin string
	// Auth makes the front an OAuth 2.1 protected resource (http.auth).
	Auth HTTPAuth
}

// HTTP.Auth modes.
const (
	HTTPAuthTokens = "tokens" // API tokens only (the default, also "")
	HTTPAuthOAuth  = "oauth"  // an authorization server's access tokens, and API tokens if any
)

// HTTPAuth makes the HTTP front an OAuth 2.1 protected resource: it
// accepts access tokens that Issuer issued for Audience, checked locally
// (JWTs, against the issuer's keys) or by Introspection (opaque tokens).
// API tokens (HTTP.Tokens) are still accepted beside them.
type HTTPAuth struct {
	// Mode is "tokens" (default, also "") or "oauth".
	Mode string
	// Issuer is the authorization server's issuer identifier (an https
	// URL, or http on a loopback host).
	Issuer string
	// Audience is the hub's resource URI: the URL hosts use for /mcp,
	// which tokens must name in aud (RFC 8707).
	Audience string
	// JWKSURL is where the issuer's signing keys are; empty means the
	// jwks_uri of the issuer's metadata.
	JWKSURL string
	// Algorithms are the JWS algorithms accepted; empty means the
	// asymmetric ones (RS*, PS*, ES*, EdDSA).
	Algorithms []string
	// Introspection checks opaque tokens (RFC 7662); off when URL is
	// empty.
	Introspection Introspection
	// Scopes are what a token must carry, and which profiles its scopes
	// open.
	Scopes AuthScopes
}

// Introspection is an RFC 7662 endpoint and the client the hub
// authenticates to it as.
type Introspection struct {
	URL          string
	ClientID     string
	ClientSecret string
}

// AuthScopes maps token scopes to what they grant.
type AuthScopes struct {
	// Required scopes must all be in every token.
	Required []string
	// Profiles maps a scope to the profile it opens, or to "*" for the
	// whole hub. Empty: every accepted token sees the whole hub.
	Profiles map[string]string
}

// AllProfiles is the Profiles value that grants the whole hub.
const AllProfiles = "*"

// Lock names the manifest written by "junction lock".
type Lock struct {
	// Path of the lock file; relative paths are relative to the config
	// file's directory (Load makes them absolute).
	Path string
}

// Log configures logging on stderr.
type Log struct {
	Level  string // debug, info (default), warn, error
	Format string // text (default), json
}

// Audit configures the audit trail: one JSON line per tool call
// ("audit"). Off unless Output is set.
type Audit struct {
	// Output is "stderr" or the path of a file (relative to the config
	// file's directory; Load makes it absolute), rotated by size.
	Output string
	// MaxSizeMB rotates the file at this size in megabytes (max_size_mb);
	// zero means 100.
	MaxSizeMB int
	// MaxFiles is how many rotated files are kept (max_files); zero
	// means 5.
	MaxFiles int
	// Arguments adds each call's arguments to its line. Off by default:
	// they are the host's data, and an audit trail is often kept longer
	// and read by more people than the tools' own logs.
	Arguments bool
}

// Warning is a key that was accepted but is not acted on.
type Warning struct {
	Line int
	Path string
	Msg  string
}

func (w Warning) String() string {
	if w.Line > 0 {
		return lineString(w.Line) + w.Path + ": " + w.Msg
	}
	return w.Path + ": " + w.Msg
}

// Line returns the line of the file that the field at path (such as
// "servers.github.timeout" or "packs.diode") was read from, or of its
// nearest enclosing field, or 0 if unknown. Callers that check a config
// further (the daemon, for pack names) use it to point at the file.
func (c *Config) Line(path string) int {
	v := &validator{c: c}
	return v.lineOf(path)
}

// FieldPath returns the path of a named source in the file:
// "servers.x", "mcpServers.x", "plugins.x" or "packs.x" (kind is "server",
// "plugin" or "pack").
func (c *Config) FieldPath(kind, name string) string {
	switch kind {
	case "plugin":
		return join("plugins", name)
	case "pack":
		return join("packs", name)
	}
	return c.serverPath(name)
}

// Enabled returns the names of the servers that are not disabled, sorted.
func (c *Config) Enabled() []string {
	var names []string
	for n, s := range c.Servers {
		if !s.Disabled {
			names = append(names, n)
		}
	}
	sortStrings(names)
	return names
}

// Sandbox levels, for [Sandbox.Level].
const (
	SandboxOff    = "off"
	SandboxOn     = "on"
	SandboxStrict = "strict"
)

// Sandbox confines a stdio server or a spawned plugin: the files,
// network, processes, resources and environment it may use. A server's
// (or plugin's) sandbox is laid over the top-level one: its level and
// limits replace those set there, its lists are added to theirs.
type Sandbox struct {
	Level     string   // off, on or strict; "" inherits (off at the top)
	ReadOnly  []string // more paths it may read
	ReadWrite []string // more paths it may write
	Network   []string // host[:port] patterns it may reach through junction's egress proxy
	Env       []string // names of junction's variables it gets
	Memory    int64    // bytes per process; 0: the default
	CPU       time.Duration
	Procs     int
	Files     int
}

// Over returns s laid over base (see [Sandbox]); either may be nil.
func (s *Sandbox) Over(base *Sandbox) *Sandbox {
	switch {
	case s == nil && base == nil:
		return nil
	case s == nil:
		c := *base
		return &c
	case base == nil:
		c := *s
		return &c
	}
	out := *base
	out.Level = cmp.Or(s.Level, base.Level)
	out.ReadOnly = append(slices.Clone(base.ReadOnly), s.ReadOnly...)
	out.ReadWrite = append(slices.Clone(base.ReadWrite), s.ReadWrite...)
	out.Network = append(slices.Clone(base.Network), s.Network...)
	out.Env = append(slices.Clone(base.Env), s.Env...)
	out.Memory = cmp.Or(s.Memory, base.Memory)
	out.CPU = cmp.Or(s.CPU, base.CPU)
	out.Procs = cmp.Or(s.Procs, base.Procs)
	out.Files = cmp.Or(s.Files, base.Files)
	return &out
}
