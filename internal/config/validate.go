package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	pathpkg "path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/egress"
	"github.com/junction-mcp/junction/internal/redact"
)

// Validate checks the config as a whole: names, required fields per
// transport, references between sections. It returns an [Errors] listing
// every problem, or nil. Parse and Load call it; call it again after
// changing a Config in Go.
func (c *Config) Validate() error {
	ws := c.Warnings
	errs := c.validate(nil)
	c.Warnings = ws
	return errs.err()
}

type validator struct {
	c     *Config
	skip  map[string]bool // paths that failed to decode
	errs  Errors
	warns []Warning
}

// validate returns the problems; warnings found on the way (unknown
// profile presets) are added to c.Warnings.
func (c *Config) validate(skip map[string]bool) Errors {
	v := &validator{c: c, skip: skip}
	owner := make(map[string]string) // source name → path of its entry
	for _, name := range sortedKeys(c.Servers) {
		p := c.serverPath(name)
		v.sourceName(name, p, owner)
		v.server(c.Servers[name], p)
	}
	for _, name := range sortedKeys(c.Plugins) {
		p := join("plugins", name)
		v.sourceName(name, p, owner)
		v.plugin(c.Plugins[name], p)
	}
	for _, name := range sortedKeys(c.Packs) {
		p := join("packs", name)
		v.sourceName(name, p, owner)
		v.source(&c.Packs[name].Source, p)
	}
	for _, name := range sortedKeys(c.Presets) {
		p := join("presets", name)
		if strings.TrimSpace(name) == "" {
			v.fail(p, "preset name must not be empty")
		}
		if len(c.Presets[name]) == 0 {
			v.fail(p, "must list at least one tool")
		}
		v.names(c.Presets[name], p)
	}
	for _, name := range sortedKeys(c.Profiles) {
		p := join("profiles", name)
		if msg := nameProblem(name, "the URL /mcp/p/<name>"); msg != "" {
			v.fail(p, "profile %s", msg)
		}
		v.profile(c.Profiles[name], p, owner)
		v.discovery(&c.Profiles[name].Discovery, join(p, "discovery"))
		v.codeMode(&c.Profiles[name].CodeMode, join(p, "code_mode"))
		if c.Profiles[name].Discovery.Semantic != nil {
			v.fail(join(join(p, "discovery"), "semantic"), "the search index is the hub's, shared by every profile: set semantic under the top-level discovery")
		}
	}
	v.discovery(&c.Discovery, "discovery")
	v.codeMode(&c.CodeMode, "code_mode")
	if c.Sandbox != nil {
		v.sandbox(c.Sandbox, "sandbox")
	}
	v.http(&c.HTTP)
	v.log(&c.Log)
	v.audit(&c.Audit)
	v.store(c.Store)
	c.Warnings = append(c.Warnings, v.warns...)
	sortWarnings(c.Warnings)
	return v.errs
}

// store checks the store URL's form; whether the database answers is
// checked when junction starts.
func (v *validator) store(s string) {
	if s == "" {
		return
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// Not %q: the text may hold a password.
		v.fail("store", "want a PostgreSQL URL, postgres://USER:PASSWORD@HOST:PORT/DATABASE")
	}
}

func (c *Config) serverPath(name string) string {
	if p, ok := c.serverPaths[name]; ok {
		return p
	}
	return join("servers", name)
}

// lineOf returns the line of path, or of its nearest ancestor that has one.
func (v *validator) lineOf(path string) int {
	for p := path; p != ""; {
		if l, ok := v.c.lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

func (v *validator) fail(path, format string, args ...any) {
	if v.skip[path] {
		return // already reported while decoding
	}
	v.errs = append(v.errs, &FieldError{Line: v.lineOf(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// nameProblem says what is wrong with a server, plugin, pack or profile
// name, or "".
func nameProblem(name, use string) string {
	switch {
	case name == "":
		return "name must not be empty"
	case strings.Contains(name, "__"):
		return `name must not contain "__" (it separates the source name from the tool name)`
	case len(name) > 64:
		return "name must be at most 64 characters"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("name %q may use only letters, digits, \"_\", \"-\" and \".\" (it becomes part of %s)", name, use)
		}
	}
	return ""
}

func (v *validator) sourceName(name, path string, owner map[string]string) {
	if msg := nameProblem(name, "tool names"); msg != "" {
		v.fail(path, "%s", msg)
	}
	if prev, ok := owner[name]; ok {
		v.fail(path, "name already used by %s", prev)
		return
	}
	owner[name] = path
}

func (v *validator) server(s *Server, path string) {
	v.source(&s.Source, path)
	switch s.Transport {
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			v.fail(path, "has both command and url: set transport, or keep only one")
		case v.hasBad(path):
			// A key of this server failed to decode (a misspelt "comand");
			// that error says enough.
		default:
			v.fail(path, "needs a command (for a stdio server) or a url (for an sse or http server)")
		}
	case TransportStdio:
		if s.Command == "" {
			v.fail(join(path, "command"), "must not be empty (a stdio server needs a command)")
		}
		v.notFor(path, "stdio", map[string]bool{"url": s.URL != "", "headers": len(s.Headers) > 0, "bearer_token": s.BearerToken != "",
			"auth": s.Auth != "", "oauth_client_id": s.OAuthClientID != "", "oauth_client_secret": s.OAuthClientSecret != "",
			"oauth_client_metadata_url": s.OAuthClientMetadataURL != "", "oauth_client_key_file": s.OAuthClientKeyFile != "", "oauth_assertion_file": s.OAuthAssertionFile != "",
			"oauth_idp_issuer": s.OAuthIdPIssuer != "", "oauth_id_token_file": s.OAuthIDTokenFile != ""})
	case TransportSSE, TransportHTTP:
		v.url(s.URL, join(path, "url"), s.Transport+" server")
		v.notFor(path, s.Transport, map[string]bool{"command": s.Command != "", "args": len(s.Args) > 0,
			"env": len(s.Env) > 0 || len(s.UnsetEnv) > 0, "cwd": s.Cwd != "", "env_file": s.EnvFile != "", "sandbox": s.Sandbox != nil})
	}
	if s.Sandbox != nil {
		v.sandbox(s.Sandbox, join(path, "sandbox"))
	}
	v.headers(s.Headers, join(path, "headers"))
	v.auth(s, path)
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"connect_timeout", s.ConnectTimeout}, {"keep_alive", s.KeepAlive}, {"stop_timeout", s.StopTimeout}} {
		if d.v < 0 {
			v.fail(join(path, d.key), "must not be negative")
		}
	}
	if s.WithdrawAfter < 0 && s.WithdrawAfter != NoTimeout {
		v.fail(join(path, "withdraw_after"), "must not be negative (write never to keep the tools listed)")
	}
	switch s.Sessions {
	case "", SessionsShared, SessionsPerHost:
	default:
		v.fail(join(path, "sessions"), "unknown sessions mode %q (use shared or per_host)", s.Sessions)
	}
	if s.MaxHostSessions < 0 || s.MaxHostSessions > maxHostSessions {
		v.fail(join(path, "max_host_sessions"), "must be between 0 (the default) and %d", maxHostSessions)
	} else if s.MaxHostSessions > 0 && s.Sessions != SessionsPerHost && s.Credentials != CredentialsPerUser {
		v.fail(join(path, "max_host_sessions"), "only applies with sessions: per_host or credentials: per_user")
	}
	switch s.Credentials {
	case "", CredentialsShared:
	case CredentialsPerUser:
		switch {
		case s.Transport == TransportStdio:
			v.fail(join(path, "credentials"), "per_user is for http and sse servers: a stdio server has no credentials of its own to send")
		case s.Auth == AuthNone:
			v.fail(join(path, "credentials"), "per_user needs OAuth (each user's token), and auth is none")
		case s.Auth != "" && s.Auth != AuthOAuth:
			v.fail(join(path, "credentials"), "per_user takes each user's own OAuth token; auth %s is the hub's own machine login (leave auth unset, or set it to oauth)", s.Auth)
		case s.Sessions == SessionsPerHost:
			v.fail(join(path, "credentials"), "per_user already gives each user a session of their own; remove sessions: per_host")
		case s.OAuthTokenExchange && s.OAuthClientID == "":
			v.fail(join(path, "oauth_token_exchange"), "needs oauth_client_id (and oauth_client_secret): the hub's client at the server's authorization server, allowed the token-exchange grant")
		}
	default:
		v.fail(join(path, "credentials"), "unknown credentials mode %q (use shared or per_user)", s.Credentials)
	}
	if s.OAuthTokenExchange && s.Credentials != CredentialsPerUser {
		v.fail(join(path, "oauth_token_exchange"), "only applies with credentials: per_user (it exchanges each user's token)")
	}
}

// hasBad reports whether a field under path failed to decode.
func (v *validator) hasBad(path string) bool {
	for p := range v.skip {
		if strings.HasPrefix(p, path+".") || strings.HasPrefix(p, path+"[") {
			return true
		}
	}
	return false
}

func (v *validator) notFor(path, transport string, set map[string]bool) {
	for _, k := range sortedKeys(set) {
		if set[k] {
			v.fail(join(path, k), "not used by a %s server (remove it or change the transport)", transport)
		}
	}
}

func (v *validator) url(raw, path, what string) {
	if raw == "" {
		v.fail(path, "must not be empty (an %s needs a url)", what)
		return
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(path, "invalid URL %q: must be http:// or https:// with a host", redact.URL(raw))
	}
}

func (v *validator) headers(h map[string]string, path string) {
	for _, k := range sortedKeys(h) {
		if k == "" || strings.ContainsAny(k, " :\r\n\t") {
			v.fail(join(path, k), "invalid header name %q", k)
		}
		if strings.ContainsAny(h[k], "\r\n") {
			v.fail(join(path, k), "header value must not contain line breaks")
		}
	}
}

func (v *validator) plugin(p *Plugin, path string) {
	v.source(&p.Source, path)
	switch {
	case p.Command == "" && p.URL == "":
		v.fail(path, "needs a command (a plugin program to run) or a url (a plugin to dial)")
	case p.Command != "" && p.URL != "":
		v.fail(path, "has both command and url; keep one")
	case p.URL != "":
		v.url(p.URL, join(path, "url"), "plugin")
		if p.Sandbox != nil {
			v.fail(join(path, "sandbox"), "not used by a plugin junction dials (a url); only a plugin it spawns (a command) runs in a sandbox")
		}
	}
	if p.Sandbox != nil {
		v.sandbox(p.Sandbox, join(path, "sandbox"))
	}
	v.headers(p.Headers, join(path, "headers"))
}

func (v *validator) source(s *Source, path string) {
	switch s.Prefix {
	case "", PrefixAlways, PrefixOnConflict, PrefixNever, PrefixMCP: // "" is the kind's default
	case "conflict", "on_conflict":
		s.Prefix = PrefixOnConflict
	default:
		v.fail(join(path, "prefix"), "unknown prefix mode %q (use always, on-conflict, never or mcp)", s.Prefix)
	}
	switch s.Drift {
	case "", DriftWarn, DriftBlock, DriftAccept: // "" is warn
	default:
		v.fail(join(path, "drift"), "unknown drift policy %q (use warn, block or accept)", s.Drift)
	}
	if len(s.Tools.Allow) > 0 && len(s.Tools.Deny) > 0 {
		v.fail(join(path, "tools"), "set allow or deny, not both")
	}
	v.names(s.Tools.Allow, join(join(path, "tools"), "allow"))
	v.names(s.Tools.Deny, join(join(path, "tools"), "deny"))
	if s.Timeout < 0 && s.Timeout != NoTimeout {
		v.fail(join(path, "timeout"), `must not be negative (write "none" for no timeout)`)
	}
	for _, name := range sortedKeys(s.ToolTimeouts) {
		p := join(join(path, "tool_timeouts"), name)
		if strings.TrimSpace(name) == "" {
			v.fail(p, "tool name must not be empty")
		}
		if d := s.ToolTimeouts[name]; d <= 0 && d != NoTimeout {
			v.fail(p, `must be positive (write "none" for no timeout)`)
		}
	}
}

// names checks a list of tool names for empty entries.
func (v *validator) names(list []string, path string) {
	for i, n := range list {
		if strings.TrimSpace(n) == "" {
			v.fail(index(path, i), "must not be empty")
		}
	}
}

func (v *validator) profile(pr *Profile, path string, owner map[string]string) {
	known := sortedKeys(owner)
	for i, s := range pr.Servers {
		if _, ok := owner[s]; !ok {
			v.fail(index(join(path, "servers"), i), "unknown source %q%s", s, suggest(s, known))
		}
	}
	for i, p := range pr.Presets {
		pp := index(join(path, "presets"), i)
		if strings.TrimSpace(p) == "" {
			v.fail(pp, "must not be empty")
			continue
		}
		if !hasFold(v.c.Presets, p) {
			v.warns = append(v.warns, Warning{Line: v.lineOf(pp), Path: pp,
				Msg: fmt.Sprintf("preset %q is not in presets; it must come from a pack (checked when the hub starts)", p)})
		}
	}
	v.names(pr.Tools, join(path, "tools"))
	v.names(pr.Deny, join(path, "deny"))
}

// discovery checks a discovery section. Whether a pattern matches a
// tool, and whether a meta-tool's name is also a tool's, can only be
// known once the sources have listed their tools: the hub checks them
// when it starts and on reload.
func (v *validator) discovery(ds *Discovery, path string) {
	if sem := ds.Semantic; sem != nil {
		v.semantic(sem, join(path, "semantic"))
	}
	switch ds.Mode {
	case "", DiscoveryList, DiscoverySearch:
	default:
		v.fail(join(path, "mode"), "unknown discovery mode %q (use list or search)", ds.Mode)
	}
	for i, p := range ds.Pinned {
		pp := index(join(path, "pinned"), i)
		if strings.TrimSpace(p) == "" {
			v.fail(pp, "must not be empty")
		} else if _, err := pathpkg.Match(p, ""); err != nil {
			v.fail(pp, "invalid pattern %q: %v (use a tool name, or * and ? as in github__*)", p, err)
		}
	}
	names := join(path, "names")
	seen := map[string]string{}
	for _, m := range []struct{ key, name, def string }{
		{"search", ds.Names.Search, "search_tools"}, {"describe", ds.Names.Describe, "describe_tools"}, {"call", ds.Names.Call, "call_tool"},
	} {
		name := m.name
		if name == "" {
			name = m.def
		} else if msg := metaNameProblem(name); msg != "" {
			v.fail(join(names, m.key), "%q %s", name, msg)
			continue
		}
		if prev, ok := seen[name]; ok {
			v.fail(join(names, m.key), "%q is also the name of the %s meta-tool; each needs its own", name, prev)
		}
		seen[name] = m.key
	}
	if ds.Mode != DiscoverySearch && (len(ds.Pinned) > 0 || ds.Names != (DiscoveryNames{})) {
		v.warns = append(v.warns, Warning{Line: v.lineOf(path), Path: path, Msg: "pinned and names apply only with mode: search"})
	}
}

// metaNameProblem says what makes name unfit for a tool name, or "".
func metaNameProblem(name string) string {
	if len(name) > 128 {
		return "is longer than 128 characters"
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return "is not a valid tool name: use letters, digits, \"_\", \"-\" and \".\""
		}
	}
	return ""
}

func hasFold(m map[string][]string, key string) bool {
	for k := range m {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

func (v *validator) http(h *HTTP) {
	v.listenAddr("http.listen", h.Listen, "127.0.0.1:7331", h.InsecureNoAuth)
	v.listenAddr("http.admin", h.Admin, "127.0.0.1:7332", h.InsecureNoAuth)
	switch h.Mode {
	case "", "dual", "stateful", "stateless":
	default:
		v.fail("http.mode", "unknown HTTP mode %q (use dual, stateful or stateless)", h.Mode)
	}
	if h.MaxRequestBytes < 0 {
		v.fail("http.max_request_bytes", "must not be negative")
	}
	if h.InsecureNoAuth && (len(h.Tokens) > 0 || h.TokenFile != "") {
		v.fail("http.insecure_no_auth", "contradicts http.tokens and http.token_file; keep one")
	}
	v.names(h.Tokens, "http.tokens")
	for i, o := range h.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
			v.fail(index("http.allowed_origins", i), "invalid origin %q: want scheme://host[:port]", o)
		}
	}
	v.names(h.AllowedHosts, "http.allowed_hosts")
	if h.PublicURL != "" {
		if problem := publicURLProblem(h.PublicURL); problem != "" {
			v.fail("http.public_url", "%q: %s", h.PublicURL, problem)
		}
	}
	v.httpAuth(&h.Auth, h.InsecureNoAuth)
}

// publicURLProblem says what makes u unfit for http.public_url, or "":
// it must be an absolute http or https URL with a host, and no user
// information, query or fragment (a path prefix is fine).
func publicURLProblem(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return "not a URL: " + err.Error()
	case p.Scheme != "http" && p.Scheme != "https":
		return "want an absolute http:// or https:// URL, such as https://hub.example.com"
	case p.Host == "" || p.Hostname() == "":
		return "names no host"
	case p.User != nil:
		return "must not hold a user name or password"
	case p.RawQuery != "" || p.ForceQuery:
		return "must not have a query"
	case p.Fragment != "" || strings.Contains(u, "#"):
		return "must not have a fragment"
	case p.Opaque != "":
		return "want an absolute http:// or https:// URL, such as https://hub.example.com"
	}
	return ""
}

// listenAddr checks the listen address at key (empty is fine): host:port,
// and a loopback host if insecure_no_auth is set.
func (v *validator) listenAddr(key, addr, example string, insecure bool) {
	if addr == "" {
		return
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.fail(key, "invalid address %q: want host:port, such as %s", addr, example)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail(key, "invalid port %q", port)
	} else if insecure && !isLoopback(host) {
		v.fail("http.insecure_no_auth", "only allowed when %s is a loopback address, not %q", key, host)
	}
}

// httpAuth checks http.auth: the URLs it needs, and that scopes open
// profiles that exist.
func (v *validator) httpAuth(a *HTTPAuth, insecure bool) {
	switch a.Mode {
	case "", HTTPAuthTokens:
		if a.Issuer != "" || a.Audience != "" || a.Introspection.URL != "" || len(a.Scopes.Required)+len(a.Scopes.Profiles) > 0 {
			v.fail("http.auth.mode", "must be oauth for the other http.auth keys to apply")
		}
		return
	case HTTPAuthOAuth:
	default:
		v.fail("http.auth.mode", "unknown mode %q (use oauth or tokens)", a.Mode)
		return
	}
	if insecure {
		v.fail("http.insecure_no_auth", "contradicts http.auth oauth; keep one")
	}
	authURL := func(key, u string, required bool) {
		switch msg := CheckAuthURL(u); {
		case u == "" && required:
			v.fail("http.auth."+key, "must be set for mode oauth")
		case u != "" && msg != "":
			v.fail("http.auth."+key, "%s", msg)
		}
	}
	authURL("issuer", a.Issuer, true)
	authURL("audience", a.Audience, true)
	authURL("jwks_url", a.JWKSURL, false)
	authURL("introspection.url", a.Introspection.URL, false)
	if a.Introspection.URL != "" && a.Introspection.ClientID == "" {
		v.fail("http.auth.introspection.client_id", "must be set with introspection.url (the client the hub authenticates as)")
	}
	for i, alg := range a.Algorithms {
		if !slices.Contains(AuthAlgorithms, alg) {
			v.fail(index("http.auth.algorithms", i), "%q is not accepted (use some of %s)", alg, strings.Join(AuthAlgorithms, ", "))
		}
	}
	v.names(a.Scopes.Required, "http.auth.scopes.required")
	for _, scope := range sortedKeys(a.Scopes.Profiles) {
		name := a.Scopes.Profiles[scope]
		if _, ok := v.c.Profiles[name]; !ok && name != AllProfiles {
			v.fail(join("http.auth.scopes.profiles", scope), "unknown profile %q%s (or \"*\" for the whole hub)", name, suggest(name, sortedKeys(v.c.Profiles)))
		}
	}
}

// AuthAlgorithms are the JWS algorithms http.auth may accept: asymmetric
// ones only (a shared-secret HS* would let anyone holding the issuer's
// public keys forge tokens; "none" signs nothing).
var AuthAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// CheckAuthURL says what is wrong with an OAuth endpoint or identifier,
// or "": it must be an absolute https URL, or http on a loopback host.
func CheckAuthURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Sprintf("invalid URL %q: want https://host/path", s)
	case u.Fragment != "":
		return fmt.Sprintf("%q: must have no #fragment", s)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return fmt.Sprintf("%q: must be https (http only on a loopback host)", s)
	}
	return ""
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (v *validator) log(l *Log) {
	switch l.Level {
	case "", "debug", "info", "warn", "error":
	default:
		v.fail("log.level", "unknown level %q (use debug, info, warn or error)", l.Level)
	}
	switch l.Format {
	case "", "text", "json":
	default:
		v.fail("log.format", "unknown format %q (use text or json)", l.Format)
	}
}

func (v *validator) audit(a *Audit) {
	if a.MaxSizeMB < 0 {
		v.fail("audit.max_size_mb", "must not be negative (0 means 100)")
	}
	if a.MaxFiles < 0 {
		v.fail("audit.max_files", "must not be negative (0 means 5)")
	}
	if a.Output == "" && (a.MaxSizeMB != 0 || a.MaxFiles != 0 || a.Arguments) {
		v.fail("audit.output", "must be set (stderr, or a file path) for the other audit keys to apply")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortWarnings(ws []Warning) {
	sort.SliceStable(ws, func(i, j int) bool {
		if ws[i].Line != ws[j].Line {
			return ws[i].Line < ws[j].Line
		}
		return ws[i].Path < ws[j].Path
	})
}

// auth checks a server's OAuth keys (docs/oauth.md).
func (v *validator) auth(s *Server, path string) {
	switch s.Auth {
	case "", AuthOAuth, AuthNone:
	case AuthClientCredentials:
		if s.OAuthClientID == "" || (s.OAuthClientSecret == "") == (s.OAuthClientKeyFile == "") {
			v.fail(join(path, "auth"), "client_credentials needs oauth_client_id and one of oauth_client_secret and oauth_client_key_file")
		}
	case AuthJWTBearer:
		if s.OAuthAssertionFile == "" {
			v.fail(join(path, "auth"), "jwt_bearer needs oauth_assertion_file (the file of the workload's JWT)")
		}
	case AuthEnterprise:
		if s.OAuthIdPIssuer == "" || s.OAuthIdPClientID == "" || s.OAuthIDTokenFile == "" || s.OAuthClientID == "" {
			v.fail(join(path, "auth"), "enterprise needs oauth_idp_issuer, oauth_idp_client_id, oauth_id_token_file and oauth_client_id")
		}
	default:
		v.fail(join(path, "auth"), "%q: use oauth, client_credentials, jwt_bearer, enterprise or none", s.Auth)
	}
	if (s.OAuthIdPIssuer != "" || s.OAuthIdPClientID != "" || s.OAuthIdPClientSecret != "" || s.OAuthIDTokenFile != "") && s.Auth != AuthEnterprise {
		v.fail(join(path, "auth"), "the oauth_idp_* keys and oauth_id_token_file need auth: enterprise")
	}
	if s.OAuthAssertionFile != "" && s.Auth != AuthJWTBearer {
		v.fail(join(path, "oauth_assertion_file"), "only with auth: jwt_bearer")
	}
	if s.Auth == AuthOAuth || s.Auth == AuthClientCredentials || s.Auth == AuthJWTBearer || s.Auth == AuthEnterprise {
		if s.BearerToken != "" {
			v.fail(join(path, "bearer_token"), "not with auth: %s (OAuth sends its own token)", s.Auth)
		}
	}
	if s.OAuthClientSecret != "" && s.OAuthClientID == "" {
		v.fail(join(path, "oauth_client_secret"), "needs oauth_client_id")
	}
	if s.OAuthClientKeyFile != "" && s.Auth != AuthClientCredentials {
		v.fail(join(path, "oauth_client_key_file"), "only with auth: client_credentials (private_key_jwt)")
	}
	if u := s.OAuthClientMetadataURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" || strings.Trim(p.Path, "/") == "" {
			v.fail(join(path, "oauth_client_metadata_url"), "%q: want an https URL with a path (a client ID metadata document)", u)
		}
	}
}

// semantic checks the semantic stage's endpoint: a URL junction can
// reach, a model, and an API key that does not travel in clear.
func (v *validator) semantic(sem *Semantic, path string) {
	u, err := url.Parse(sem.URL)
	switch {
	case strings.TrimSpace(sem.URL) == "":
		v.fail(join(path, "url"), "is required: the embeddings endpoint, e.g. http://127.0.0.1:8080/v1")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.fail(join(path, "url"), "%q is not an http or https URL", redact.URL(sem.URL))
	case sem.APIKey != "" && u.Scheme == "http" && !isLoopback(u.Hostname()):
		v.fail(join(path, "url"), "%q is plain http to another machine: the API key would travel in clear (use https)", redact.URL(sem.URL))
	}
	if strings.TrimSpace(sem.Model) == "" {
		v.fail(join(path, "model"), "is required: the model the endpoint embeds with")
	}
	if sem.Dimensions < 0 || sem.Dimensions > 65536 {
		v.fail(join(path, "dimensions"), "must be between 1 and 65536 (or left out), got %d", sem.Dimensions)
	}
	if sem.Timeout < 0 {
		v.fail(join(path, "timeout"), "must not be negative")
	}
	if sem.Weight < 0 || sem.Weight > 10 || math.IsNaN(sem.Weight) {
		v.fail(join(path, "weight"), "must be between 0 and 10 (1, the default, weighs meaning as much as words), got %v", sem.Weight)
	}
}

// sandbox checks a sandbox's form: its level, its network patterns, its
// paths (absolute) and limits. Whether the paths exist, and whether this
// system can apply the level, config check and the start find out.
func (v *validator) sandbox(sb *Sandbox, path string) {
	switch sb.Level {
	case "", SandboxOff, SandboxOn, SandboxStrict:
	default:
		v.fail(join(path, "level"), "unknown sandbox level %q (use off, on or strict)", sb.Level)
	}
	if _, err := egress.ParseAllowlist(sb.Network); err != nil {
		v.fail(join(path, "network"), "%v", err)
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"read_only", sb.ReadOnly}, {"read_write", sb.ReadWrite}} {
		for i, p := range l.paths {
			if !filepath.IsAbs(p) {
				v.fail(index(join(path, l.key), i), "%q is not an absolute path", p)
			}
		}
	}
	for i, name := range sb.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			v.fail(index(join(path, "env"), i), "%q is not a variable name", name)
		}
	}
	limits := join(path, "limits")
	if sb.Memory < 0 || sb.Memory > 0 && sb.Memory < 16<<20 {
		v.fail(join(limits, "memory"), "must be at least 16MiB (no server starts in less), got %d bytes", sb.Memory)
	}
	if sb.CPU < 0 {
		v.fail(join(limits, "cpu"), "must not be negative")
	}
	if sb.Procs < 0 {
		v.fail(join(limits, "procs"), "must not be negative")
	}
	if sb.Files < 0 || sb.Files > 0 && sb.Files < 16 {
		v.fail(join(limits, "files"), "must be at least 16 (stdin, stdout, stderr and the runtime's own), got %d", sb.Files)
	}
}

// codeMode checks a code_mode section: the meta-tool's name and the
// script limits.
func (v *validator) codeMode(cm *CodeMode, path string) {
	if cm.Name != "" {
		if msg := metaNameProblem(cm.Name); msg != "" {
			v.fail(join(path, "name"), "%q %s", cm.Name, msg)
		}
	}
	l, lp := cm.Limits, join(path, "limits")
	for _, d := range []struct {
		key string
		val time.Duration
	}{{"wall", l.Wall}, {"cpu", l.CPU}} {
		if d.val < 0 || d.val > time.Hour {
			v.fail(join(lp, d.key), "must be between 0 (the default) and 1h, got %v", d.val)
		}
	}
	if l.Memory < 0 || l.Memory > 0 && (l.Memory < 4<<20 || l.Memory > 4<<30) {
		v.fail(join(lp, "memory"), "must be between 4MiB and 4GiB (or left out for 64MiB), got %d bytes", l.Memory)
	}
	if l.Calls < 0 || l.Calls > 100000 {
		v.fail(join(lp, "calls"), "must be between 1 and 100000 (or left out for 100), got %d", l.Calls)
	}
	if l.Concurrent < 0 || l.Concurrent > 64 {
		v.fail(join(lp, "concurrent"), "must be between 1 and 64 (or left out for 4), got %d", l.Concurrent)
	}
	if l.Output < 0 || l.Output > 64<<20 {
		v.fail(join(lp, "output"), "must be between 1 byte and 64MiB (or left out for 1MiB), got %d bytes", l.Output)
	}
}
