package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/httpguard"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"
)

// oauthClients keeps one OAuth client per server and settings, so that a
// reload that changes nothing about a server keeps its client (and
// upstream.Config.NeedsRestart sees the same Auth).
var oauthClients sync.Map // oauthKey → *oauth.Client

type oauthKey struct {
	settings oauth.Settings
	dir      string
	headless bool
}

// oauthFor returns the OAuth client of an HTTP server (docs/oauth.md), or
// nil when it has none: auth: none, or no auth key and a token of its
// own in bearer_token or an Authorization header.
func (d *Daemon) oauthFor(name string, s *config.Server) interface {
	WrapTransport(http.RoundTripper) http.RoundTripper
} {
	if s.Auth == config.AuthNone {
		return nil
	}
	if s.Auth == "" {
		if s.BearerToken != "" {
			return nil
		}
		for k := range s.Headers {
			if strings.EqualFold(k, "Authorization") {
				return nil
			}
		}
	}
	dir, err := oauth.DefaultDir(d.getenv)
	if err != nil {
		dir = ""
	}
	key := oauthKey{
		settings: OAuthSettings(name, s),
		dir:      dir,
		headless: d.getenv(oauth.EnvHeadless) == "1",
	}
	if c, ok := oauthClients.Load(key); ok {
		return c.(*oauth.Client)
	}
	opts := oauth.Options{Store: &oauth.MemoryStore{}}
	if dir != "" {
		if st, err := oauth.OpenStore(d.getenv); err == nil {
			opts.Store = st
		}
	}
	if key.headless {
		opts.Login = oauth.HeadlessLogin{}
	}
	c, _ := oauthClients.LoadOrStore(key, oauth.New(key.settings, opts))
	return c.(*oauth.Client)
}

// OAuthSettings are the OAuth settings of the config's server name.
func OAuthSettings(name string, s *config.Server) oauth.Settings {
	return oauth.Settings{Name: name, URL: s.URL, Mode: oauth.Mode(s.Auth), ClientID: s.OAuthClientID,
		ClientSecret: s.OAuthClientSecret, ClientKeyFile: s.OAuthClientKeyFile, AssertionFile: s.OAuthAssertionFile,
		IdPIssuer: s.OAuthIdPIssuer, IdPClientID: s.OAuthIdPClientID, IdPClientSecret: s.OAuthIdPClientSecret, IDTokenFile: s.OAuthIDTokenFile,
		ClientMetadataURL: s.OAuthClientMetadataURL, TokenExchange: s.OAuthTokenExchange}
}

// FrontAuth makes the HTTP front an OAuth 2.1 protected resource
// (docs/auth.md): it checks access tokens with its Resource, and opens
// profiles by scope.
type FrontAuth struct {
	Resource *oauth.Resource
	// Profiles maps a scope to the profile it opens, or to
	// config.AllProfiles for the whole hub. Empty: every accepted token
	// sees the whole hub.
	Profiles map[string]string

	refusals refusalLog
	// seen, if set, is told each accepted token with its user (the
	// daemon keeps the latest of each user for token exchange).
	seen func(user, token string, expiry time.Time)
}

// Refused access tokens are logged at INFO, the first refusalBurst at
// once and then one per refusalEvery; the others are logged at DEBUG and
// counted in the next INFO line, so that a flood of made-up tokens does
// not fill the log.
const (
	refusalBurst = 5
	refusalEvery = 10 * time.Second
)

// refusalLog logs refused access tokens (the reasons quote what a token
// says only cut short: package oauth sees to that).
type refusalLog struct {
	mu         sync.Mutex
	credit     float64   // INFO lines that may be written now
	last       time.Time // when credit was counted; zero: full
	suppressed int       // refusals logged at DEBUG since the last INFO line
}

func (l *refusalLog) log(logger *slog.Logger, reason string, r *http.Request) {
	l.mu.Lock()
	now := time.Now()
	if l.last.IsZero() {
		l.credit = refusalBurst
	} else {
		l.credit = min(refusalBurst, l.credit+now.Sub(l.last).Seconds()/refusalEvery.Seconds())
	}
	l.last = now
	info := l.credit >= 1
	suppressed := l.suppressed
	if info {
		l.credit--
		l.suppressed = 0
	} else {
		l.suppressed++
	}
	l.mu.Unlock()
	if !info {
		logger.Debug("access token refused", "reason", reason, "remote", r.RemoteAddr, "path", r.URL.Path)
		return
	}
	args := []any{"reason", reason, "remote", r.RemoteAddr, "path", r.URL.Path}
	if suppressed > 0 {
		args = append(args, "refused_meanwhile", suppressed)
	}
	logger.Info("access token refused", args...)
}

// NewFrontAuth returns the FrontAuth of the config's http.auth, or nil
// when its mode is not oauth.
func NewFrontAuth(a config.HTTPAuth) (*FrontAuth, error) {
	if a.Mode != config.HTTPAuthOAuth {
		return nil, nil
	}
	supported := slices.Sorted(maps.Keys(a.Scopes.Profiles))
	r, err := oauth.NewResource(oauth.ResourceOptions{
		Issuer:                    a.Issuer,
		Audience:                  a.Audience,
		JWKSURL:                   a.JWKSURL,
		Algorithms:                a.Algorithms,
		IntrospectionURL:          a.Introspection.URL,
		IntrospectionClientID:     a.Introspection.ClientID,
		IntrospectionClientSecret: a.Introspection.ClientSecret,
		Required:                  a.Scopes.Required,
		ScopesSupported:           supported,
	})
	if err != nil {
		return nil, fmt.Errorf("http.auth: %v", err)
	}
	return &FrontAuth{Resource: r, Profiles: a.Scopes.Profiles}, nil
}

// serve lets a request with an accepted access token through to next,
// routed to the profile its scopes open, and answers the others as the
// MCP authorization specification says: 401 with the metadata's URL
// when the token is missing or refused, 403 insufficient_scope naming
// the scopes that would do.
func (f *FrontAuth) serve(w http.ResponseWriter, r *http.Request, next http.Handler, logger *slog.Logger) {
	token := httpguard.Bearer(r)
	if token == "" {
		f.challenge(w, http.StatusUnauthorized, "", f.Resource.Required(), "authentication required: send Authorization: Bearer <access token> (see "+f.Resource.MetadataURL()+")")
		return
	}
	g, err := f.Resource.Verify(r.Context(), token)
	if errors.Is(err, oauth.ErrBusy) {
		// Not checked (too many opaque tokens to introspect): not a 401,
		// which would tell a client with a good token to drop it.
		logger.Debug("access token not checked", "reason", err.Error(), "remote", r.RemoteAddr, "path", r.URL.Path)
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	if err != nil {
		reason := err.Error()
		if te, ok := errors.AsType[*oauth.TokenError](err); ok {
			reason = te.Reason
		}
		f.refusals.log(logger, reason, r)
		f.challenge(w, http.StatusUnauthorized, "invalid_token", nil, reason)
		return
	}
	// Sessions are bound to the token's subject (junction.WithUser).
	r = r.WithContext(junction.WithUser(r.Context(), g.User()))
	if f.seen != nil {
		f.seen(g.User(), token, g.Expiry)
	}
	for _, s := range f.Resource.Required() {
		if !g.Has(s) {
			f.challenge(w, http.StatusForbidden, "insufficient_scope", f.Resource.Required(), "the token lacks scope "+strconv.Quote(s))
			return
		}
	}
	if len(f.Profiles) == 0 || f.opens(g, config.AllProfiles) {
		next.ServeHTTP(w, r)
		return
	}
	var granted []string
	for _, scope := range slices.Sorted(maps.Keys(f.Profiles)) {
		if p := f.Profiles[scope]; g.Has(scope) && !slices.Contains(granted, p) {
			granted = append(granted, p)
		}
	}
	name, isMCP := r.Header.Get(ProfileHeader), r.URL.Path == "/mcp"
	if rest, ok := strings.CutPrefix(r.URL.Path, "/mcp/p/"); ok && !strings.Contains(rest, "/") {
		name, isMCP = rest, true
	}
	switch {
	case !isMCP:
		f.challenge(w, http.StatusForbidden, "insufficient_scope", f.scopesFor(config.AllProfiles), r.URL.Path+" needs a token for the whole hub")
	case name == "" && len(granted) == 1:
		r.Header.Set(ProfileHeader, granted[0])
		next.ServeHTTP(w, r)
	case name == "" && len(granted) > 1:
		f.challenge(w, http.StatusForbidden, "insufficient_scope", f.scopesFor(config.AllProfiles),
			"the token opens profiles "+strings.Join(granted, ", ")+": choose one with /mcp/p/NAME or the "+ProfileHeader+" header")
	case name == "":
		f.challenge(w, http.StatusForbidden, "insufficient_scope", slices.Sorted(maps.Keys(f.Profiles)), "the token's scopes open no profile")
	case slices.Contains(granted, name):
		next.ServeHTTP(w, r)
	default:
		f.challenge(w, http.StatusForbidden, "insufficient_scope", f.scopesFor(name), "the token's scopes do not open profile "+strconv.Quote(name))
	}
}

// opens reports whether g has a scope that opens profile (a required
// scope opens nothing by itself).
func (f *FrontAuth) opens(g *oauth.Grant, profile string) bool {
	for s, p := range f.Profiles {
		if p == profile && g.Has(s) {
			return true
		}
	}
	return false
}

// scopesFor returns the scopes that open profile (or the whole hub),
// sorted, with the required ones.
func (f *FrontAuth) scopesFor(profile string) []string {
	scopes := slices.Clone(f.Resource.Required())
	for _, s := range slices.Sorted(maps.Keys(f.Profiles)) {
		if p := f.Profiles[s]; p == profile || p == config.AllProfiles {
			scopes = append(scopes, s)
		}
	}
	return scopes
}

// challenge answers with status and a WWW-Authenticate Bearer challenge
// naming the metadata, the error code (if any) and the scopes that would
// do (if any); the body says the same in words.
func (f *FrontAuth) challenge(w http.ResponseWriter, status int, code string, scopes []string, msg string) {
	params := []string{"resource_metadata=" + strconv.Quote(f.Resource.MetadataURL())}
	if code != "" {
		params = append(params, "error="+strconv.Quote(code))
	}
	if len(scopes) > 0 {
		params = append(params, "scope="+strconv.Quote(strings.Join(scopes, " ")))
	}
	if code != "" {
		params = append(params, "error_description="+strconv.Quote(headerSafe(msg)))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	httpError(w, status, msg)
}

// headerSafe keeps printable ASCII but for the quote and backslash, as
// RFC 6750 allows in error_description.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s)
}

// metadataHandler serves the protected resource metadata (RFC 9728).
func (f *FrontAuth) metadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(f.Resource.Metadata())
}

// front puts f before the hub's handlers when it is non-nil: a request
// with an API token (X-API-Key, or a bearer token among tokens), or one
// with no token for a page other than an MCP endpoint (the status page
// takes a login cookie there) goes to static, the API token check; every
// other request goes through f's access token check to next.
func (f *FrontAuth) front(static, next http.Handler, tokens []string, logger *slog.Logger) http.Handler {
	if f == nil {
		return static
	}
	accepted := httpguard.NewTokens(tokens...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer := httpguard.Bearer(r)
		mcp := r.URL.Path == "/mcp" || strings.HasPrefix(r.URL.Path, "/mcp/") || r.URL.Path == "/sse"
		if r.Header.Get("X-API-Key") != "" || accepted.Match(bearer) || (bearer == "" && !mcp) {
			static.ServeHTTP(w, r)
			return
		}
		f.serve(w, r, next, logger)
	})
}
