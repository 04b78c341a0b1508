// Package oauth makes junction an OAuth 2.1 client of the MCP servers it
// connects to, as the MCP authorization specification describes: on a 401
// (or a 403 with insufficient_scope) it discovers the protected resource
// metadata (RFC 9728) and the authorization server's metadata (RFC 8414
// or OpenID discovery), identifies itself (a client ID metadata document,
// a pre-registered client, or dynamic client registration, RFC 7591),
// runs the authorization code flow with PKCE S256 and resource indicators
// (RFC 8707), or the client_credentials grant (with a client secret or a
// private key, private_key_jwt), and retries the request with the token.
// Tokens are kept in a [Store], encrypted at rest, and refreshed when
// they expire.
//
// The protocol pieces are go-sdk's (auth.AuthorizationCodeHandler,
// oauthex) and golang.org/x/oauth2's; this package adds the
// client_credentials grant (go-sdk's sends no resource indicator and has
// no private_key_jwt), the transport that carries the token and answers
// challenges, the login front ends (a redirect listener on 127.0.0.1,
// and a headless one for tests), and the token store.
//
// The other side, [Resource], checks the access tokens hosts send to the
// hub's own HTTP front.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/junction-mcp/junction/internal/redact"
)

// Mode says when a server's requests get OAuth.
type Mode string

const (
	// ModeAuto (the default) starts OAuth on a 401 whose WWW-Authenticate
	// names the Bearer scheme.
	ModeAuto Mode = ""
	// ModeOAuth is the authorization code flow, on any 401.
	ModeOAuth Mode = "oauth"
	// ModeClientCredentials is the client_credentials grant with the
	// configured client id and secret (machine to machine).
	ModeClientCredentials Mode = "client_credentials"
	// ModeJWTBearer is the JWT bearer grant (RFC 7523) with a workload
	// identity token read from Settings.AssertionFile at each token
	// request (workload identity federation, SEP-1933).
	ModeJWTBearer Mode = "jwt_bearer"
	// ModeEnterprise is enterprise-managed authorization (SEP-990): the
	// ID token of Settings.IDTokenFile is exchanged at the identity
	// provider for a grant for the server, and that for a token.
	ModeEnterprise Mode = "enterprise"
	// ModeNone never starts OAuth.
	ModeNone Mode = "none"
)

// machine reports whether m is a grant with no person: the client gets
// its tokens itself, and none is stored.
func (m Mode) machine() bool {
	return m == ModeClientCredentials || m == ModeJWTBearer || m == ModeEnterprise
}

// Settings describe one server's OAuth client.
type Settings struct {
	// Name is the server's name in the config, for messages ("junction
	// auth login NAME"); empty for a server given by URL alone.
	Name string
	// URL is the server's MCP endpoint: the resource the tokens are for,
	// and the key they are stored under.
	URL  string
	Mode Mode
	// ClientID and ClientSecret are a pre-registered client; the secret
	// may be empty for a public client.
	ClientID     string
	ClientSecret string
	// ClientKeyFile is a PEM private key the client_credentials grant
	// authenticates with instead of ClientSecret (private_key_jwt).
	ClientKeyFile string
	// AssertionFile holds the JWT that ModeJWTBearer presents; it is read
	// at each token request, as workload platforms rotate it.
	AssertionFile string
	// For ModeEnterprise: the identity provider's issuer, the client
	// junction is there, and the file of the person's ID token from it
	// (ClientID and ClientSecret are the client at the server's
	// authorization server).
	IdPIssuer       string
	IdPClientID     string
	IdPClientSecret string
	IDTokenFile     string
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document
	// describing junction, used as the client id where the authorization
	// server supports them.
	ClientMetadataURL string
	// TokenExchange: for a user's client (Options.User), the server's
	// authorization server trusts the hub front's issuer, and a user's
	// access token at the front (Options.Exchange) is exchanged there
	// for one to this server (RFC 8693), as ClientID and ClientSecret.
	TokenExchange bool
}

// Options are what a [Client] works with besides its settings.
type Options struct {
	// Store keeps tokens across runs; nil keeps them in memory only.
	Store Store
	// Login runs the authorization step of the code flow. Nil means no
	// one can log in here (a hub): a server that needs a login fails
	// with a [*LoginRequiredError] at once.
	Login Login
	// HTTPClient makes the requests to metadata, registration and token
	// endpoints; nil means a client of its own.
	HTTPClient *http.Client
	// Fresh ignores the stored token, so that the flow runs again
	// (junction auth login); the new token replaces it.
	Fresh bool
	// User, when set, is the hub user whose own token this client sends
	// (a server with per-user credentials; Store is then that user's
	// view, [UserStore]): a missing or refused token is that user's to
	// give.
	User string
	// SignIn, with User, returns the hub URL where the user signs in to
	// the server from a browser (a [HubFlow] the hub runs), for the error
	// of a missing or refused token, and a channel closed once they have
	// (nil when it cannot tell); nil when the hub offers no sign-in.
	SignIn func() (url string, done <-chan struct{})
	// Exchange, with User and Settings.TokenExchange, returns the user's
	// current access token at the hub's front ("" when there is none),
	// which the client exchanges for a token to the server when it has
	// none of the user's, or the server refused it.
	Exchange func() string
}

// Login is how the authorization step reaches the person (or, in tests,
// the authorization server that approves at once).
type Login interface {
	// RedirectURL is the redirect_uri the authorization server sends the
	// code to.
	RedirectURL() string
	// Fetch shows the authorization URL and waits for the redirect.
	Fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error)
}

// LoginRequiredError is the error of a request to a server that needs an
// OAuth login that nobody can give where junction runs.
type LoginRequiredError struct {
	Name  string
	URL   string
	Scope string // the scope the server asked for, if it said
	// User is the hub user whose own token is missing or was refused
	// (a server with per-user credentials), and SignIn the hub URL where
	// they sign in from a browser, if there is one.
	User   string
	SignIn string
	// Done is closed once the user has signed in at SignIn; nil when no
	// one can tell.
	Done <-chan struct{}
	// Cause, if set, says what failed on the way: the token exchange, or
	// the server refusing the token just obtained.
	Cause error
}

func (e *LoginRequiredError) Error() string {
	if e.User != "" {
		give := fmt.Sprintf("give yours with %q (your token on its standard input)", "junction auth login -user -url HUB_URL "+e.Name)
		if e.SignIn != "" {
			give = "sign in at " + e.SignIn + " in your browser, then call again (or " + give + ")"
		}
		msg := fmt.Sprintf("server %q takes each user's own credentials, and user %q has none here, or the server refused it: %s", e.Name, e.User, give)
		if re, ok := errors.AsType[*refreshError](e.Cause); ok {
			msg = fmt.Sprintf("server %q takes each user's own credentials, and user %q's token there has expired and could not be refreshed (%s): %s", e.Name, e.User, re, give)
		} else if e.Cause != nil {
			msg += "; " + e.Cause.Error()
		}
		if e.Scope != "" {
			msg += fmt.Sprintf("; it asks for scope %q", e.Scope)
		}
		return msg
	}
	what := "the server"
	cmd := "junction auth login SERVER"
	if e.Name != "" {
		what = fmt.Sprintf("server %q", e.Name)
		cmd = "junction auth login " + e.Name
	}
	msg := fmt.Sprintf("%s needs an OAuth login: run %q", what, cmd)
	if e.Name == "" && e.URL != "" {
		// The URL's secrets (a password, query values) are not shown;
		// the command then names the URL as the user wrote it.
		shown, arg := redact.URL(e.URL), e.URL
		if shown != e.URL {
			arg = "URL"
		}
		msg = fmt.Sprintf("%s needs an OAuth login: run %q", shown, "junction auth login "+arg)
	}
	if e.Scope != "" {
		msg += fmt.Sprintf(" (it asks for scope %q)", e.Scope)
	}
	return msg
}

// LoginNeeded is, for a user's client (Options.User), why its last
// request failed until the user acts (a *LoginRequiredError: no token,
// or one the server refused), or nil once a request has gone through
// with a token. Package upstream reads it where the transport's error
// does not carry the cause.
func (c *Client) LoginNeeded() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.needed
}

func (c *Client) setNeeded(err error) {
	c.mu.Lock()
	c.needed = err
	c.mu.Unlock()
}

// SignInURL is the hub link where the user signs in (SignIn), or "".
func (e *LoginRequiredError) SignInURL() string { return e.SignIn }

// SignedIn is closed once the user has signed in at SignInURL (Done).
func (e *LoginRequiredError) SignedIn() <-chan struct{} { return e.Done }

// ErrLoginRequired matches every [*LoginRequiredError] with errors.Is.
var ErrLoginRequired = errors.New("OAuth login required")

func (e *LoginRequiredError) Is(target error) bool { return target == ErrLoginRequired }

// NeedsPerson reports true: no retry succeeds before the login, so a
// call waiting for the server fails at once (package upstream asks).
func (e *LoginRequiredError) NeedsPerson() bool { return true }

// Client is the OAuth client of one server. It is safe for concurrent use;
// requests that meet a challenge together run one authorization.
type Client struct {
	s    Settings
	opts Options
	hc   *http.Client

	authMu  sync.Mutex // one authorization at a time
	mu      sync.Mutex // guards the fields below
	ts      oauth2.TokenSource
	handler auth.OAuthHandler
	loaded  bool
	issuer  string                                         // of the authorization server, once found
	reused  *oauthex.ClientCredentials                     // a client registered earlier, in use
	hubRegs map[string]*oauthex.ClientRegistrationResponse // clients registered for hub flows, by issuer and redirect URL
	needed  error                                          // a user's client: why the last request needs them to act, until a token works
	dp      *dpopKey                                       // the DPoP key, once a server asked for DPoP
	legacy  map[string][]byte                              // discovery answers for a 2025-03-26 server (legacy.go)
}

// dpopKey returns the client's DPoP key, or nil when it uses none.
func (c *Client) dpopKey() *dpopKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dp
}

// New returns the OAuth client of one server.
func New(s Settings, opts Options) *Client {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport}
	}
	c := &Client{s: s, opts: opts}
	// Token requests carry DPoP proofs once a server asks for DPoP.
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// Discovery of a 2025-03-26 server may be answered here (legacy.go).
	base = &legacyTransport{c: c, base: base}
	c.hc = &http.Client{Transport: &dpopTokenTransport{c: c, base: base}, CheckRedirect: hc.CheckRedirect, Jar: hc.Jar, Timeout: hc.Timeout}
	return c
}

// Settings returns the client's settings.
func (c *Client) Settings() Settings { return c.s }

// WrapTransport returns a transport that sends base's requests with the
// server's token and answers its challenges (upstream.Config.Auth).
func (c *Client) WrapTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

// tokenSource returns the token source in use, loading the stored token
// the first time.
func (c *Client) tokenSource() oauth2.TokenSource {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		c.loaded = true
		if c.opts.Store != nil && !c.s.Mode.machine() && !c.opts.Fresh {
			if e, err := c.opts.Store.Load(c.s.URL); err == nil && e != nil && e.Token != nil {
				c.ts = c.storedSource(e)
			}
		}
	}
	return c.ts
}

// storedSource is a token source for a stored entry: it refreshes with
// the stored client and saves what it gets.
func (c *Client) storedSource(e *Entry) oauth2.TokenSource {
	if len(e.DPoPKey) > 0 { // the caller holds c.mu
		if k, err := dpopKeyFrom(e.DPoPKey); err == nil {
			c.dp = k
		}
	}
	cfg := &oauth2.Config{ClientID: e.ClientID, ClientSecret: e.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: e.TokenURL, AuthStyle: oauth2.AuthStyle(e.AuthStyle)}, Scopes: e.Scopes}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, c.hc)
	if l, ok := c.opts.Store.(Locker); ok {
		inner := oauth2.ReuseTokenSource(e.Token, &sharedRefresh{c: c, cfg: cfg, ctx: ctx, locker: l, tok: e.Token})
		return &savingSource{c: c, entry: *e, inner: inner, last: e.Token.AccessToken, shared: true}
	}
	return &savingSource{c: c, entry: *e, inner: cfg.TokenSource(ctx, e.Token), last: e.Token.AccessToken}
}

// sharedRefresh refreshes a token that processes share through a
// [Locker] store, once among them: under the store's lock on the entry,
// a token another process stored since is taken as it is; else this one
// refreshes, and stores the new token before the lock is let go.
type sharedRefresh struct {
	c      *Client
	cfg    *oauth2.Config
	ctx    context.Context
	locker Locker
	mu     sync.Mutex
	tok    *oauth2.Token // the latest this process has
}

// refreshMargin is how long before its expiry a token counts as expired
// (golang.org/x/oauth2 refreshes 10 s early).
const refreshMargin = 10 * time.Second

func (r *sharedRefresh) Token() (*oauth2.Token, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	unlock, err := r.locker.Lock(ctx, r.c.s.URL)
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	defer unlock()
	if e, err := r.c.opts.Store.Load(r.c.s.URL); err == nil && e != nil && e.Token != nil {
		if e.Token.AccessToken != r.tok.AccessToken && (e.Token.Expiry.IsZero() || time.Until(e.Token.Expiry) > refreshMargin) {
			r.tok = e.Token // another process refreshed it
			return e.Token, nil
		}
		if e.Token.RefreshToken != "" {
			r.tok = e.Token
		}
	}
	old := r.tok
	tok, err := r.cfg.TokenSource(r.ctx, old).Token()
	if err != nil {
		return nil, err
	}
	if tok.RefreshToken == "" {
		tok.RefreshToken = old.RefreshToken
	}
	// The new token replaces the one refreshed, unless the entry changed
	// while the authorization server answered (a token given or taken
	// back, which do not wait for the lock): what the user did stays.
	if e, err := r.c.opts.Store.Load(r.c.s.URL); err == nil && e != nil && e.Token != nil && e.Token.AccessToken == old.AccessToken {
		c := *e
		c.Token = tok
		if err := r.c.opts.Store.Save(&c); err != nil {
			return nil, fmt.Errorf("token store: %w", err)
		}
	}
	r.tok = tok
	return tok, nil
}

// token returns the access token to send, or "" when there is none (or
// it could not be refreshed: the server's challenge starts over), and
// whether it is DPoP-bound.
func (c *Client) token() (string, bool) {
	tok, dpop, _ := c.tokenOrFailure()
	return tok, dpop
}

// refreshFailure is a token that could not be refreshed: the access
// token it was (when known), and why.
type refreshFailure struct {
	tok string
	err *refreshError
}

// tokenOrFailure is [Client.token], and, when the token could not be
// refreshed, which and why.
func (c *Client) tokenOrFailure() (string, bool, *refreshFailure) {
	ts := c.tokenSource()
	if ts == nil {
		return "", false, nil
	}
	tok, err := ts.Token()
	if err != nil || tok == nil || tok.AccessToken == "" {
		c.mu.Lock()
		if c.ts == ts {
			c.ts = nil
		}
		c.mu.Unlock()
		var f *refreshFailure
		if err != nil {
			f = &refreshFailure{err: refreshFailed(err)}
			if s, ok := ts.(*savingSource); ok {
				f.tok = s.failed(f)
			}
		}
		return "", false, f
	}
	return tok.AccessToken, strings.EqualFold(tok.Type(), "DPoP"), nil
}

// refreshError says why a stored token could not be refreshed, in words
// for the user whose token it is: the token endpoint's status and OAuth
// error, not its whole answer.
type refreshError struct {
	what string
	// transient: the authorization server failed or could not be
	// reached; a later call may refresh the token.
	transient bool
}

func (e *refreshError) Error() string {
	if e.transient {
		return e.what + "; calling again later may work"
	}
	return e.what
}

// errNoRefreshToken is the refresh of a token stored without a refresh
// token.
var errNoRefreshToken = &refreshError{what: "there is no refresh token to renew it"}

// refreshFailed is err, a token source's, as a [refreshError].
func refreshFailed(err error) *refreshError {
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok {
		what := "the authorization server answered"
		if re.Response != nil {
			what += " " + re.Response.Status
		}
		if re.ErrorCode != "" {
			what += ": " + re.ErrorCode
			if d := []rune(re.ErrorDescription); len(d) > 0 {
				if len(d) > 200 {
					d = append(d[:200], '…')
				}
				what += " (" + string(d) + ")"
			}
		}
		return &refreshError{what: what, transient: re.Response != nil && re.Response.StatusCode >= 500}
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return &refreshError{what: fmt.Sprintf("the authorization server's token endpoint %s could not be reached: %v", redact.URL(ue.URL), ue.Err), transient: true}
	}
	if re, ok := errors.AsType[*refreshError](err); ok {
		return re
	}
	return &refreshError{what: err.Error()}
}

// setAuthorization puts the token on r: as a bearer token, or with the
// DPoP scheme and a fresh proof.
func (c *Client) setAuthorization(r *http.Request, tok string, dpop bool) error {
	if tok == "" {
		return nil
	}
	key := c.dpopKey()
	if !dpop || key == nil {
		r.Header.Set("Authorization", "Bearer "+tok)
		return nil
	}
	p, err := key.proof(r.Method, r.URL, tok)
	if err != nil {
		return fmt.Errorf("DPoP proof: %v", err)
	}
	r.Header.Set("Authorization", "DPoP "+tok)
	r.Header.Set("DPoP", p)
	return nil
}

// challenged reports whether resp is a challenge this client answers.
func (c *Client) challenged(resp *http.Response) bool {
	if c.s.Mode == ModeNone {
		return false
	}
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	bearer := slices.IndexFunc(chs, func(ch oauthex.Challenge) bool { return ch.Scheme == "bearer" || ch.Scheme == "dpop" })
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return bearer >= 0 || c.s.Mode != ModeAuto
	case http.StatusForbidden:
		return bearer >= 0 && chs[bearer].Params["error"] == "insufficient_scope"
	}
	return false
}

// authorize answers the challenge resp (to a request sent with the token
// sent) and consumes its body. On success the request may be retried.
//
// failed, if set, is the stored token whose refresh has just failed for
// this request: it is not tried again, and the error says why.
func (c *Client) authorize(ctx context.Context, req *http.Request, resp *http.Response, sent string, failed *refreshFailure) error {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if resp.StatusCode == http.StatusUnauthorized {
		// Another request may have authorized while this one waited.
		if now, _ := c.token(); now != "" && now != sent {
			drain(resp)
			return nil
		}
	}
	// A login elsewhere (junction auth login, another process) may have
	// stored a token since this one was read. (The one whose refresh has
	// just failed is not refreshed again.)
	if c.opts.Store != nil && !c.opts.Fresh && !c.s.Mode.machine() {
		if e, err := c.opts.Store.Load(c.s.URL); err == nil && e != nil && e.Token != nil && e.Token.AccessToken != sent &&
			(failed == nil || failed.tok == "" || e.Token.AccessToken != failed.tok) {
			c.mu.Lock()
			c.ts = c.storedSource(e)
			c.mu.Unlock()
			now, _, f := c.tokenOrFailure()
			if now != "" {
				drain(resp)
				return nil
			}
			if f != nil {
				failed = f
			}
		}
	}
	var exchangeErr error
	if c.opts.User != "" && c.s.TokenExchange && c.opts.Exchange != nil {
		if subject := c.opts.Exchange(); subject != "" {
			if exchangeErr = c.exchange(ctx, req, resp, subject); exchangeErr == nil {
				drain(resp)
				return nil
			}
		} else {
			exchangeErr = errors.New("the hub has no access token of theirs at its front to exchange (they must call with one)")
		}
	}
	if usesDPoP(resp) && c.dpopKey() == nil {
		k, err := newDPoPKey()
		if err != nil {
			drain(resp)
			return fmt.Errorf("DPoP key: %v", err)
		}
		c.mu.Lock()
		c.dp = k
		c.mu.Unlock()
	}
	if c.opts.Login != nil || c.s.Mode.machine() {
		c.prepareLegacy(ctx, req, resp)
	}
	if c.opts.Login != nil && !c.s.Mode.machine() {
		c.findRegistered(ctx, req, resp)
	}
	h, err := c.getHandler()
	if err != nil {
		drain(resp)
		return err
	}
	if h == nil {
		scope := ""
		if chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate")); len(chs) > 0 {
			for _, ch := range chs {
				if ch.Scheme == "bearer" {
					scope = ch.Params["scope"]
				}
			}
		}
		drain(resp)
		c.want(strings.Fields(scope))
		e := &LoginRequiredError{Name: c.s.Name, URL: c.s.URL, Scope: scope, User: c.opts.User}
		if exchangeErr != nil {
			e.Cause = fmt.Errorf("exchanging their token at the hub for one failed: %w", exchangeErr)
		} else if failed != nil {
			e.Cause = failed.err
		}
		if e.User != "" && c.opts.SignIn != nil {
			e.SignIn, e.Done = c.opts.SignIn()
		}
		return e
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		if c.forgetRegistered() {
			return fmt.Errorf("OAuth, with the client registered at an earlier login (the next login registers a new one): %w", err)
		}
		return fmt.Errorf("OAuth: %w", err)
	}
	ts, err := h.TokenSource(ctx)
	if err != nil {
		return fmt.Errorf("OAuth: %w", err)
	}
	c.mu.Lock()
	c.ts = ts
	c.mu.Unlock()
	return nil
}

// getHandler returns go-sdk's handler for the flow, or nil when the flow
// needs a login and no one can give one here.
func (c *Client) getHandler() (auth.OAuthHandler, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.handler != nil {
		return c.handler, nil
	}
	if c.s.Mode == ModeEnterprise {
		h, err := newEnterprise(c.s, c.hc)
		if err != nil {
			return nil, err
		}
		c.handler = h
		return h, nil
	}
	if c.s.Mode.machine() {
		h, err := newClientCredentials(c.s, c.hc)
		if err != nil {
			return nil, err
		}
		c.handler = h
		return h, nil
	}
	if c.opts.Login == nil {
		return nil, nil
	}
	redirect := c.opts.Login.RedirectURL()
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: c.opts.Login.Fetch,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{redirect},
				ClientName:    "junction",
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			},
		},
		RequestRefreshToken: true,
		Client:              c.hc,
		NewTokenSource:      c.newTokenSource,
		ScopeFilter:         c.scopeFilter,
	}
	if c.s.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: c.s.ClientMetadataURL}
	}
	if c.s.ClientID != "" {
		pre := &oauthex.ClientCredentials{ClientID: c.s.ClientID}
		if c.s.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.s.ClientSecret}
		}
		cfg.PreregisteredClient = pre
	} else if c.reused != nil {
		cfg.PreregisteredClient = c.reused
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("OAuth: %w", err)
	}
	c.handler = h
	return h, nil
}

// want records scopes a challenge asked for that nobody could log in
// for here, so that junction auth login asks for them (a hub's step-up).
func (c *Client) want(scopes []string) {
	if c.opts.Store == nil || len(scopes) == 0 {
		return
	}
	e, err := c.opts.Store.Load(c.s.URL)
	if err != nil {
		return
	}
	if e == nil {
		e = &Entry{Name: c.s.Name, Resource: c.s.URL}
	}
	n := len(e.Wanted)
	for _, s := range scopes {
		if !slices.Contains(e.Wanted, s) && !slices.Contains(e.Scopes, s) {
			e.Wanted = append(e.Wanted, s)
		}
	}
	if len(e.Wanted) > n {
		_ = c.opts.Store.Save(e)
	}
}

// scopeFilter adds the scopes of the stored grant, and those a hub was
// asked for, to those the server asks for now, so that a step-up in a
// later run keeps what an earlier one was granted (SEP-2350 asks for the
// union).
func (c *Client) scopeFilter(discovered []string) []string {
	if c.opts.Store == nil {
		return discovered
	}
	e, err := c.opts.Store.Load(c.s.URL)
	if err != nil || e == nil {
		return discovered
	}
	out := slices.Clone(e.Scopes)
	for _, s := range slices.Concat(e.Wanted, discovered) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// newTokenSource wraps the token source go-sdk builds after a code
// exchange so that the token, and every refreshed one, is stored.
func (c *Client) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	c.mu.Lock()
	issuer := c.issuer
	c.mu.Unlock()
	e := Entry{Name: c.s.Name, Resource: c.s.URL, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle), Scopes: grantedScopes(cfg.Scopes, tok),
		Issuer: issuer, Registered: c.s.ClientID == "" && cfg.ClientID != c.s.ClientMetadataURL}
	if k := c.dpopKey(); k != nil && strings.EqualFold(tok.Type(), "DPoP") {
		e.DPoPKey = k.marshal()
	}
	s := &savingSource{c: c, entry: e, inner: cfg.TokenSource(ctx, tok)}
	s.save(tok)
	return s, nil
}

// grantedScopes are the scopes the token response names, or those asked
// for when it names none.
func grantedScopes(asked []string, tok *oauth2.Token) []string {
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		return strings.Fields(s)
	}
	return slices.Clone(asked)
}

// savingSource stores each new token its inner source returns.
type savingSource struct {
	c     *Client
	inner oauth2.TokenSource
	mu    sync.Mutex
	entry Entry
	last  string
	// shared: inner stores the tokens it gets itself, under the store's
	// lock ([sharedRefresh]); this source only follows them.
	shared bool
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.inner.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok.AccessToken != s.last {
		if s.shared {
			s.last = tok.AccessToken
		} else {
			s.saveRefreshed(tok)
		}
	}
	return tok, nil
}

// saveRefreshed stores tok, which the inner source got in place of the
// token last, unless the stored entry holds last no more: a token given
// or logged in for since, or the entry taken back (junction auth logout
// -user) while the authorization server answered, is what the user did,
// and stays.
func (s *savingSource) saveRefreshed(tok *oauth2.Token) {
	if st := s.c.opts.Store; st != nil && s.last != "" {
		if e, err := st.Load(s.c.s.URL); err == nil && (e == nil || e.Token == nil || e.Token.AccessToken != s.last) {
			s.last = tok.AccessToken
			return
		}
	}
	s.saveLocked(tok)
}

// failed returns the access token whose refresh failed (f), and, when it
// had no refresh token, says so in f.
func (s *savingSource) failed(f *refreshFailure) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entry.Token != nil && s.entry.Token.RefreshToken == "" && s.entry.Token.AccessToken == s.last {
		f.err = errNoRefreshToken
	}
	return s.last
}

func (s *savingSource) save(tok *oauth2.Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saveLocked(tok)
}

func (s *savingSource) saveLocked(tok *oauth2.Token) {
	s.last = tok.AccessToken
	if s.c.opts.Store == nil {
		return
	}
	e := s.entry
	t := *tok
	if t.RefreshToken == "" && e.Token != nil {
		t.RefreshToken = e.Token.RefreshToken // a refresh may not return a new one
	}
	e.Token = &t
	s.entry = e
	// A store that cannot be written leaves the token in memory; the
	// next run logs in again.
	_ = s.c.opts.Store.Save(&e)
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}

// transport is the RoundTripper of [Client.WrapTransport].
type transport struct {
	c    *Client
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	sent, dpop, failed := t.c.tokenOrFailure()
	r := req.Clone(req.Context())
	if err := t.c.setAuthorization(r, sent, dpop); err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	if key := t.c.dpopKey(); key != nil && key.noteNonce(resp) && wantsNonce(resp) && dpop && replayable {
		// The server wants a nonce in the proof: once more with it.
		drain(resp)
		if r, err = t.resend(req); err != nil {
			return nil, err
		}
		if err := t.c.setAuthorization(r, sent, dpop); err != nil {
			return nil, err
		}
		if resp, err = t.base.RoundTrip(r); err != nil {
			return resp, err
		}
	}
	if !t.c.challenged(resp) {
		if t.c.opts.User != "" {
			t.c.setNeeded(nil) // the user's token works
		}
		return resp, nil
	}
	if !replayable {
		return resp, nil // cannot send it again
	}
	if err := t.c.authorize(req.Context(), r, resp, sent, failed); err != nil {
		if t.c.opts.User != "" && errors.Is(err, ErrLoginRequired) {
			t.c.setNeeded(err)
		}
		if errors.Is(err, ErrLoginRequired) && req.Header.Get("Mcp-Session-Id") != "" && t.c.opts.User == "" {
			// Inside a session (a revoked token), an error would fail
			// only this request and leave the session looking up; a 401
			// makes go-sdk end it, so the server reconnects and reports
			// the login it needs. A user's session (User) gets the error
			// itself, which tells them how to sign in; package upstream
			// then drops their session.
			return &http.Response{Status: "401 Unauthorized", StatusCode: http.StatusUnauthorized,
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
				Body: io.NopCloser(strings.NewReader(err.Error())), Request: req}, nil
		}
		return nil, err
	}
	if r, err = t.resend(req); err != nil {
		return nil, err
	}
	tok, dpop := t.c.token()
	if err := t.c.setAuthorization(r, tok, dpop); err != nil {
		return nil, err
	}
	resp, err = t.base.RoundTrip(r)
	if err == nil && t.c.opts.User != "" && t.c.challenged(resp) && !(dpop && wantsNonce(resp)) {
		// The server refused the user's token it has just been given (a
		// new sign-in, a fresh exchange): that user is told so, with the
		// way to sign in, rather than a bare 401.
		drain(resp)
		t.c.mu.Lock()
		t.c.ts = nil
		t.c.mu.Unlock()
		e := &LoginRequiredError{Name: t.c.s.Name, URL: t.c.s.URL, User: t.c.opts.User,
			Cause: fmt.Errorf("the server refused the token the hub had just obtained for them (%s)", resp.Status)}
		if t.c.opts.SignIn != nil {
			e.SignIn, e.Done = t.c.opts.SignIn()
		}
		t.c.setNeeded(e)
		return nil, e
	}
	if err == nil && t.c.opts.User != "" {
		t.c.setNeeded(nil)
	}
	if key := t.c.dpopKey(); err == nil && dpop && key != nil && key.noteNonce(resp) && wantsNonce(resp) {
		// A first request with a new token may meet the nonce too.
		drain(resp)
		if r, err = t.resend(req); err != nil {
			return nil, err
		}
		if err := t.c.setAuthorization(r, tok, dpop); err != nil {
			return nil, err
		}
		return t.base.RoundTrip(r)
	}
	return resp, err
}

// resend returns a copy of req to send again, with its body anew.
func (t *transport) resend(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

// findRegistered looks for a client junction registered earlier (RFC
// 7591) with the authorization server this challenge leads to, in every
// stored entry, so that a login does not register a new client each
// time: the server's metadata is read here (go-sdk's handler reads it
// again), and a client found is offered to the handler as pre-registered
// and bound to that issuer. Nothing is reused when the config names a
// client, or the authorization server takes client ID metadata
// documents (which come first). The redirect URI may differ from the one
// registered only in its port, which OAuth 2.1 requires authorization
// servers to accept for loopback redirects.
func (c *Client) findRegistered(ctx context.Context, req *http.Request, resp *http.Response) {
	c.mu.Lock()
	known := c.handler != nil
	c.mu.Unlock()
	if known || c.opts.Store == nil || c.s.ClientID != "" {
		return
	}
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	prm, err := resourceMetadata(ctx, chs, req.URL.String(), c.hc)
	if err != nil {
		return
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], c.hc)
	if err != nil || asm == nil {
		return
	}
	c.mu.Lock()
	c.issuer = asm.Issuer
	c.mu.Unlock()
	if c.s.ClientMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return
	}
	entries, err := c.opts.Store.List()
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Registered && e.Issuer == asm.Issuer && e.ClientID != "" {
			pre := &oauthex.ClientCredentials{ClientID: e.ClientID, Issuer: asm.Issuer}
			if e.ClientSecret != "" {
				pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: e.ClientSecret}
			}
			c.mu.Lock()
			c.reused = pre
			c.mu.Unlock()
			return
		}
	}
}

// forgetRegistered, after a failed authorization with a client
// registered earlier, marks the entries of that client as not to be
// used again (the authorization server may have dropped it), and drops
// the handler, so that the next login registers anew. It reports
// whether there was such a client.
func (c *Client) forgetRegistered() bool {
	c.mu.Lock()
	pre := c.reused
	c.reused, c.handler = nil, nil
	c.mu.Unlock()
	if pre == nil {
		return false
	}
	if entries, err := c.opts.Store.List(); err == nil {
		for _, e := range entries {
			if e.Registered && e.ClientID == pre.ClientID && e.Issuer == pre.Issuer {
				e.Registered = false
				_ = c.opts.Store.Save(e)
			}
		}
	}
	return true
}
