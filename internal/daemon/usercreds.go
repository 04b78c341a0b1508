package daemon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/statuspage"
	"github.com/junction-mcp/junction/internal/store/postgres"
)

// Per-user credentials (credentials: per_user; docs/oauth.md, "Teams").
//
// A server with per-user credentials is called, for each authenticated
// user of the HTTP front, on a session of that user's own (package
// upstream keeps them), whose requests carry that user's OAuth token: an
// OAuth client per user and server, over the user's view of the token
// store (oauth.UserStore). A user gives the hub their token at
// /auth/tokens/SERVER (junction auth login -user), and takes it back
// there; the hub then drops the user's client and session, so that the
// next call uses what is stored now.

// userClients are the OAuth clients of per-user servers, by server
// settings and user.
type userClients struct {
	mu sync.Mutex
	m  map[userClientKey]*oauth.Client
}

type userClientKey struct {
	settings oauth.Settings
	user     string
}

// tokenStore is the token store the per-user clients share: with the
// config's store (PostgreSQL), its oauth_tokens table, which every
// replica shares; else the one junction auth login uses, else (no state
// directory) one in memory.
func (d *Daemon) tokenStore() oauth.Store {
	d.tokensOnce.Do(func() {
		if d.shared != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := d.shared.DB.Tokens(ctx)
			if err == nil {
				d.tokens = st
				return
			}
			d.logger.Error("per-user tokens: the store's token table", "error", err)
		}
		if st, err := oauth.OpenStore(d.getenv); err == nil {
			d.tokens = st
		} else {
			d.logger.Warn("per-user tokens are kept in memory only", "error", err)
			d.tokens = &oauth.MemoryStore{}
		}
	})
	return d.tokens
}

// userAuth is the upstream.Config.UserAuth of the per-user server name.
func (d *Daemon) userAuth(name string, s *config.Server) func(user string) interface {
	WrapTransport(http.RoundTripper) http.RoundTripper
} {
	settings := OAuthSettings(name, s)
	return func(user string) interface {
		WrapTransport(http.RoundTripper) http.RoundTripper
	} {
		d.users.mu.Lock()
		defer d.users.mu.Unlock()
		k := userClientKey{settings, user}
		if c, ok := d.users.m[k]; ok {
			return c
		}
		if d.users.m == nil {
			d.users.m = map[userClientKey]*oauth.Client{}
		}
		c := oauth.New(settings, oauth.Options{Store: oauth.UserStore(d.tokenStore(), user), User: user,
			SignIn:   func() (string, <-chan struct{}) { return d.signInURL(name, user) },
			Exchange: func() string { return d.frontTokens.current(user) }})
		d.users.m[k] = c
		return c
	}
}

// userChanged is called when user's token for server was given or taken
// back: this replica drops the user's client and session (dropUser),
// and so do the others that share the store, told through it.
func (d *Daemon) userChanged(server, user string) {
	d.dropUser(server, user)
	if d.shared == nil {
		return
	}
	b, _ := json.Marshal([2]string{server, user})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.shared.DB.Notify(ctx, postgres.ChannelUserToken, string(b)); err != nil {
		d.logger.Warn("telling the other replicas of a user's token", "source", server, "user", user, "error", err)
	}
}

// watchUserTokens makes this replica drop a user's session when another
// replica tells it their token changed (userChanged).
func (d *Daemon) watchUserTokens() {
	if d.shared == nil {
		return
	}
	unsubscribe := d.shared.DB.Subscribe(postgres.ChannelUserToken, func(payload string) {
		var su [2]string
		if json.Unmarshal([]byte(payload), &su) == nil && su[0] != "" && su[1] != "" {
			go d.dropUser(su[0], su[1]) // Subscribe's callbacks must not block
		}
	})
	d.AddCloser(closerFunc(unsubscribe))
}

// closerFunc is a func as an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// dropUser forgets user's client of server and ends their session with
// it, so that the next call starts afresh from the store.
func (d *Daemon) dropUser(server, user string) {
	d.users.mu.Lock()
	for k := range d.users.m {
		if k.settings.Name == server && k.user == user {
			delete(d.users.m, k)
		}
	}
	d.users.mu.Unlock()
	d.mu.Lock()
	m := d.sources[server]
	d.mu.Unlock()
	if m != nil && m.up != nil {
		m.up.DropUser(user)
	}
}

// perUserServers returns the servers of the config in force with
// per-user credentials, by name.
func (d *Daemon) perUserServers() map[string]*config.Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]*config.Server{}
	if d.cfg == nil {
		return out
	}
	for n, s := range d.cfg.Servers {
		if s.Credentials == config.CredentialsPerUser && s.Serves() {
			out[n] = s
		}
	}
	return out
}

// UserToken is what /auth/tokens says of one user's token for one server:
// never the token itself.
type UserToken struct {
	Server string     `json:"server"`
	URL    string     `json:"url"`
	User   string     `json:"user"`
	State  string     `json:"state"` // none, valid, expired
	Expiry *time.Time `json:"expiry,omitempty"`
	// Refresh says whether the hub can refresh it (a refresh token and
	// the client that refreshes it came with it).
	Refresh bool      `json:"refresh"`
	Saved   time.Time `json:"saved,omitzero"`
}

// GivenToken is the body of PUT /auth/tokens/SERVER: the user's token,
// and, for the hub to refresh it, the client and token endpoint it came
// from.
type GivenToken struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ExpiresIn    int64     `json:"expires_in,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	ClientID     string    `json:"client_id,omitempty"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
}

// maxGivenToken bounds the body of a PUT /auth/tokens/SERVER.
const maxGivenToken = 64 << 10

// tokensHandler serves /auth/tokens (GET: the caller's tokens for the
// per-user servers) and /auth/tokens/SERVER (PUT: give one; DELETE: take
// it back). The caller is the front's authenticated user; an operator (an
// API token of a front whose users are OAuth subjects) may list every
// user's (?all=1) and take back another user's (?user=U).
func (d *Daemon) tokensHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	user := junction.User(r.Context())
	if user == "" {
		httpError(w, http.StatusForbidden, "per-user credentials need an authenticated user, and this request has none (a hub without tokens, -insecure-no-auth, has no users)")
		return
	}
	operator := d.isOperator(user)
	servers := d.perUserServers()
	name := r.PathValue("server")
	store := d.tokenStore()
	if name == "" {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			httpError(w, http.StatusMethodNotAllowed, "use GET to list your tokens, PUT or DELETE /auth/tokens/SERVER to give or take back one")
			return
		}
		all := r.URL.Query().Get("all") == "1"
		if all && !operator {
			httpError(w, http.StatusForbidden, "only an operator lists every user's tokens")
			return
		}
		writeJSONBody(w, d.listUserTokens(store, servers, user, all))
		return
	}
	s, ok := servers[name]
	if !ok {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range servers {
				if !yield(n) {
					return
				}
			}
		})
		httpError(w, http.StatusNotFound, fmt.Sprintf("no server %q takes per-user credentials here (those that do: %s)", name, orNone(names)))
		return
	}
	switch r.Method {
	case http.MethodPut:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGivenToken))
		if err != nil {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the token's body is over %d bytes", maxGivenToken))
			return
		}
		var g GivenToken
		if err := json.Unmarshal(body, &g); err != nil {
			httpError(w, http.StatusBadRequest, "the body must be JSON with access_token (and optionally refresh_token, expires_in, client_id, token_url): "+err.Error())
			return
		}
		g.AccessToken = strings.TrimSpace(g.AccessToken)
		if g.AccessToken == "" || strings.ContainsAny(g.AccessToken, " \t\r\n") {
			httpError(w, http.StatusBadRequest, "access_token is empty or holds white space")
			return
		}
		tok := &oauth2.Token{AccessToken: g.AccessToken, TokenType: g.TokenType, RefreshToken: g.RefreshToken, Expiry: g.Expiry}
		if g.ExpiresIn > 0 {
			tok.Expiry = time.Now().Add(time.Duration(g.ExpiresIn) * time.Second)
		}
		e := &oauth.Entry{Name: name, Resource: s.URL, Token: tok, ClientID: g.ClientID, ClientSecret: g.ClientSecret, TokenURL: g.TokenURL, Scopes: g.Scopes}
		if err := oauth.UserStore(store, user).Save(e); err != nil {
			httpError(w, http.StatusInternalServerError, "the token store: "+err.Error())
			return
		}
		d.userChanged(name, user)
		d.logger.Info("per-user token given", "source", name, "user", user)
		writeJSONBody(w, userToken(name, s.URL, user, e))
	case http.MethodDelete:
		whose := user
		if u := r.URL.Query().Get("user"); u != "" && u != user {
			if !operator {
				httpError(w, http.StatusForbidden, "only an operator takes back another user's token")
				return
			}
			whose = u
		}
		found, err := oauth.UserStore(store, whose).Delete(s.URL)
		if err != nil {
			httpError(w, http.StatusInternalServerError, "the token store: "+err.Error())
			return
		}
		d.userChanged(name, whose)
		if !found {
			httpError(w, http.StatusNotFound, fmt.Sprintf("user %q has no token for %s", whose, name))
			return
		}
		d.logger.Info("per-user token taken back", "source", name, "user", whose, "by", user)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "PUT, DELETE")
		httpError(w, http.StatusMethodNotAllowed, "use PUT to give your token for "+name+", DELETE to take it back")
	}
}

// isOperator says whether user (junction.User of a request) may act for
// other users: one of the front's API tokens where the users are the
// OAuth subjects of an authorization server.
func (d *Daemon) isOperator(user string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.HasPrefix(user, "token:") && d.cfg != nil && d.cfg.HTTP.Auth.Mode == config.HTTPAuthOAuth
}

func (d *Daemon) listUserTokens(store oauth.Store, servers map[string]*config.Server, user string, all bool) []UserToken {
	entries, _ := store.List()
	out := []UserToken{}
	for name, s := range servers {
		seen := false
		for _, e := range entries {
			if e.User == "" || e.Resource != s.URL || (!all && e.User != user) {
				continue
			}
			seen = seen || e.User == user
			out = append(out, userToken(name, s.URL, e.User, e))
		}
		if !seen && !all {
			out = append(out, UserToken{Server: name, URL: s.URL, User: user, State: "none"})
		}
	}
	slices.SortFunc(out, func(a, b UserToken) int {
		return strings.Compare(a.Server+"\x00"+a.User, b.Server+"\x00"+b.User)
	})
	return out
}

// userTokenStates is every user's token state for the per-user servers,
// for /status and the status page; nil when there are none.
func (d *Daemon) userTokenStates() []statuspage.UserToken {
	servers := d.perUserServers()
	if len(servers) == 0 {
		return nil
	}
	var out []statuspage.UserToken
	for _, t := range d.listUserTokens(d.tokenStore(), servers, "", true) {
		ut := statuspage.UserToken{Server: t.Server, User: t.User, State: t.State, Refresh: t.Refresh}
		if t.Expiry != nil {
			ut.Expiry = *t.Expiry
		}
		out = append(out, ut)
	}
	return out
}

func userToken(server, url, user string, e *oauth.Entry) UserToken {
	t := UserToken{Server: server, URL: url, User: user, State: "none", Saved: e.Saved}
	if e.Token == nil || e.Token.AccessToken == "" {
		return t
	}
	t.State = "valid"
	if !e.Token.Expiry.IsZero() {
		exp := e.Token.Expiry
		t.Expiry = &exp
		if exp.Before(time.Now()) {
			t.State = "expired"
		}
	}
	t.Refresh = e.Token.RefreshToken != "" && e.TokenURL != "" && e.ClientID != ""
	return t
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// httpError answers with status and {"error": msg}.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func writeJSONBody(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Signing in from a browser (a hub flow, oauth.HubFlow).
//
// A call of a user without a usable token fails with a tool error that
// carries a sign-in link: /auth/connect/FLOW on this hub, made for that
// user and server, good for signInTTL. Opening it starts the
// authorization code flow with PKCE at the server's authorization
// server, with /auth/callback as the redirect URI, and sets a cookie
// that binds the browser to the flow. The callback is taken once, only
// with its flow's state and only from the browser that started it; the
// token it brings is stored as that user's, and their session with the
// server is dropped so that the next call uses it.

const (
	signInTTL    = 10 * time.Minute
	maxSignIns   = 1024 // links not yet opened and flows not yet finished, at once
	signInCookie = "junction_sign_in"
)

type signIn struct {
	id, user, server string
	made             time.Time
	state, nonce     string // set when the browser opened the link
	flow             *oauth.HubFlow
	done             chan struct{} // closed once the token is stored
}

type signIns struct {
	mu      sync.Mutex
	byID    map[string]*signIn
	byState map[string]*signIn
}

// setPublicBase records the hub's base URL for sign-in links: the origin
// of the front's OAuth audience (the URL hosts use), else the address
// the listener got.
func (d *Daemon) setPublicBase(cfg HTTPConfig, addr net.Addr) {
	base := "http://" + addr.String()
	if cfg.OAuth != nil && cfg.OAuth.Resource != nil {
		if u, err := url.Parse(cfg.OAuth.Resource.Metadata().Resource); err == nil && u.Host != "" {
			base = u.Scheme + "://" + u.Host
		}
	}
	d.publicBase.Store(&base)
}

// signInURL returns the link where user signs in to server, reusing the
// pending one, and a channel closed once they have; "" when the hub
// serves no HTTP or has too many pending.
func (d *Daemon) signInURL(server, user string) (string, <-chan struct{}) {
	base := d.publicBase.Load()
	if base == nil {
		return "", nil
	}
	f := &d.signIns
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for state, s := range f.byState { // opened, never finished
		if now.Sub(s.made) > signInTTL {
			delete(f.byState, state)
		}
	}
	for id, s := range f.byID {
		if now.Sub(s.made) > signInTTL {
			delete(f.byID, id)
			continue
		}
		if s.user == user && s.server == server && s.state == "" {
			return *base + "/auth/connect/" + id, s.done
		}
	}
	if len(f.byID)+len(f.byState) >= maxSignIns {
		return "", nil // too many pending: the error then offers a token instead
	}
	id := rand.Text()
	if f.byID == nil {
		f.byID, f.byState = map[string]*signIn{}, map[string]*signIn{}
	}
	s := &signIn{id: id, user: user, server: server, made: now, done: make(chan struct{})}
	f.byID[id] = s
	return *base + "/auth/connect/" + id, s.done
}

// signInStart is /auth/connect/FLOW: it sends the browser to the
// server's authorization server.
func (d *Daemon) signInStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		signInPage(w, http.StatusMethodNotAllowed, "Open this link in a browser.")
		return
	}
	f := &d.signIns
	f.mu.Lock()
	s := f.byID[r.PathValue("flow")]
	if s != nil && (time.Since(s.made) > signInTTL || s.state != "") {
		s = nil // expired, or opened already: each link starts one flow
	}
	if s != nil {
		delete(f.byID, s.id)
	}
	f.mu.Unlock()
	if s == nil {
		signInPage(w, http.StatusNotFound, "This sign-in link is unknown, used or expired. Call the tool again from your host for a new one.")
		return
	}
	servers := d.perUserServers()
	cfg, ok := servers[s.server]
	if !ok {
		signInPage(w, http.StatusNotFound, "The server "+s.server+" no longer takes per-user credentials here.")
		return
	}
	c, ok := d.userAuth(s.server, cfg)(s.user).(*oauth.Client)
	if !ok {
		signInPage(w, http.StatusInternalServerError, "No OAuth client for "+s.server+".")
		return
	}
	s.state, s.nonce = rand.Text(), rand.Text()
	base := d.publicBase.Load()
	flow, err := c.BeginHubFlow(r.Context(), *base+"/auth/callback", s.state)
	if err != nil {
		d.logger.Warn("sign-in could not start", "source", s.server, "user", s.user, "error", err)
		signInPage(w, http.StatusBadGateway, "The sign-in to "+s.server+" could not start: "+err.Error())
		return
	}
	s.flow = flow
	f.mu.Lock()
	f.byState[s.state] = s
	f.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: s.nonce, Path: "/auth/callback", MaxAge: int(signInTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(*base, "https://"), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, flow.AuthURL, http.StatusFound)
}

// signInCallback is /auth/callback: the authorization server's redirect
// with the code, which becomes the user's token.
func (d *Daemon) signInCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	f := &d.signIns
	f.mu.Lock()
	s := f.byState[q.Get("state")]
	if s != nil {
		delete(f.byState, s.state) // taken once, whatever comes of it
	}
	f.mu.Unlock()
	switch {
	case s == nil || time.Since(s.made) > signInTTL:
		signInPage(w, http.StatusBadRequest, "This sign-in is unknown, used or expired. Call the tool again from your host for a new link.")
		return
	case !sameCookie(r, s.nonce):
		d.logger.Warn("sign-in callback refused: another browser", "source", s.server, "user", s.user)
		signInPage(w, http.StatusForbidden, "This sign-in was started in another browser: open the link from your host in this browser.")
		return
	case q.Get("error") != "":
		signInPage(w, http.StatusBadRequest, "The authorization server said: "+q.Get("error")+" "+q.Get("error_description"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Path: "/auth/callback", MaxAge: -1})
	e, err := s.flow.Finish(r.Context(), q.Get("code"))
	if err != nil {
		d.logger.Warn("sign-in failed", "source", s.server, "user", s.user, "error", err)
		signInPage(w, http.StatusBadGateway, "The sign-in to "+s.server+" failed: "+err.Error())
		return
	}
	if err := oauth.UserStore(d.tokenStore(), s.user).Save(e); err != nil {
		signInPage(w, http.StatusInternalServerError, "The token could not be stored: "+err.Error())
		return
	}
	d.userChanged(s.server, s.user)
	close(s.done)
	d.logger.Info("per-user token from a sign-in", "source", s.server, "user", s.user)
	signInPage(w, http.StatusOK, "Signed in to "+s.server+". Go back to your host and call the tool again.")
}

func sameCookie(r *http.Request, nonce string) bool {
	c, err := r.Cookie(signInCookie)
	return err == nil && nonce != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(nonce)) == 1
}

// signInPage answers with a small page of msg.
func signInPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>junction</title><p>%s</p>\n", html.EscapeString(msg))
}

// frontTokens are the latest access token each user presented at the
// front (an OAuth front), kept in memory only, until it expires: what a
// server with oauth_token_exchange exchanges for that user's token to
// it. Bounded: a full table forgets its oldest entry.
type frontTokens struct {
	mu sync.Mutex
	m  map[string]frontToken
}

type frontToken struct {
	token  string
	expiry time.Time
}

// maxFrontTokens bounds the users remembered.
const maxFrontTokens = 4096

func (f *frontTokens) remember(user, token string, expiry time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]frontToken{}
	}
	if _, ok := f.m[user]; !ok && len(f.m) >= maxFrontTokens {
		oldest := ""
		for u, t := range f.m {
			if oldest == "" || t.expiry.Before(f.m[oldest].expiry) {
				oldest = u
			}
		}
		delete(f.m, oldest)
	}
	f.m[user] = frontToken{token, expiry}
}

// current is user's latest front token, "" when none is known or it has
// expired.
func (f *frontTokens) current(user string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.m[user]
	if !ok || (!t.expiry.IsZero() && time.Now().After(t.expiry)) {
		return ""
	}
	return t.token
}
