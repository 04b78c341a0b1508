package daemon

import (
	"context"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	"github.com/junction-mcp/junction/internal/seal"
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
func (d *Daemon) userChanged(server, user string) { d.tokenChanged(server, user, false) }

// tokenChanged is userChanged; signedIn says the token came from a
// sign-in, which also ends the waits for it (signedIn) on every replica.
func (d *Daemon) tokenChanged(server, user string, signedIn bool) {
	d.dropUser(server, user)
	if signedIn {
		d.signedIn(server, user)
	}
	if d.shared == nil {
		return
	}
	// Replicas before the third member read the first two.
	payload := []string{server, user}
	if signedIn {
		payload = append(payload, signedInNote)
	}
	b, _ := json.Marshal(payload)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.shared.DB.Notify(ctx, postgres.ChannelUserToken, string(b)); err != nil {
		d.logger.Warn("telling the other replicas of a user's token", "source", server, "user", user, "error", err)
	}
}

// watchUserTokens makes this replica drop a user's session when another
// replica tells it their token changed (userChanged), and, when they
// signed in there, end the waits for it here.
func (d *Daemon) watchUserTokens() {
	if d.shared == nil {
		return
	}
	unsubscribe := d.shared.DB.Subscribe(postgres.ChannelUserToken, func(payload string) {
		var su [3]string
		if json.Unmarshal([]byte(payload), &su) == nil && su[0] != "" && su[1] != "" {
			go func() { // Subscribe's callbacks must not block
				d.dropUser(su[0], su[1])
				if su[2] == signedInNote {
					d.signedIn(su[0], su[1])
				}
			}()
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
		us := oauth.UserStore(store, user)
		if err := underTokenLock(r.Context(), us, s.URL, func() error { return us.Save(e) }); err != nil {
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
		us := oauth.UserStore(store, whose)
		var found bool
		err := underTokenLock(r.Context(), us, s.URL, func() (err error) {
			found, err = us.Delete(s.URL)
			return err
		})
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

// underTokenLock runs fn holding the store's lock of a user's token
// for resource (us is an [oauth.UserStore]; PostgreSQL's advisory lock,
// nothing for the file store), the lock a refresh takes: a token given,
// taken back or signed in for never interleaves with another replica's
// refresh of the one before.
func underTokenLock(ctx context.Context, us oauth.Store, resource string, fn func() error) error {
	if l, ok := us.(oauth.Locker); ok {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		unlock, err := l.Lock(ctx, resource)
		if err != nil {
			return fmt.Errorf("locking the token: %w", err)
		}
		defer unlock()
	}
	return fn()
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
// carries a sign-in link: /auth/connect/LINK on the hub's public URL,
// made for that user and server, good for signInTTL. Opening it starts
// the authorization code flow with PKCE at the server's authorization
// server, with /auth/callback as the redirect URI, and sets a cookie
// that binds the browser to the flow. The callback is taken once, only
// with its flow's state and only from the browser that started it; the
// token it brings is stored as that user's, and their session with the
// server is dropped so that the next call uses it.
//
// Nothing of a flow has to stay in the memory of the replica that made
// it, so that, behind a load balancer, the link and the callback may
// reach any replica that shares the store: the link is the user, the
// server, the expiry and a random id, sealed (AES-256-GCM, package
// seal); the cookie set at /auth/connect is the flow's state (the
// OAuth state, the PKCE verifier, the client and where it exchanges
// the code), sealed too. The key is derived from the store's
// session_key, which every replica shares; without a store, it is made
// at random for the process. What must be single use (a link, a
// callback's state) is remembered by the replica that took it, until it
// expires, and, with a store, recorded in its ledger (the sessions
// table, as ended ids), which refuses a second use on any replica.
// Each replica keeps only the links it made that are not yet used (a
// second call shows the same link) and a channel per user and server
// that a URL elicitation waits on: closed when the user signs in, here
// or, told through the store (ChannelUserToken), on another replica.

const (
	signInTTL  = 10 * time.Minute
	maxSignIns = 1024 // links made here and not yet used or expired, at once
	// maxSignInsUsed bounds the links and callbacks taken here and
	// remembered until they expire.
	maxSignInsUsed = 4 * maxSignIns
	// signInCookie, then "_" and the flow's state, names the cookie that
	// binds a browser to a flow (one per flow: a browser may sign in to
	// two servers at once).
	signInCookie = "junction_sign_in"
	// signedInNote is the third member of a ChannelUserToken payload
	// sent when a user signed in (see tokenChanged).
	signedInNote = "signed_in"
)

// signInLink is what a sign-in link carries, sealed.
type signInLink struct {
	ID      string `json:"i"`
	User    string `json:"u"`
	Server  string `json:"s"`
	Expires int64  `json:"e"` // Unix seconds
}

// signInFlow is what the cookie of a browser that opened a link
// carries, sealed: the flow it started.
type signInFlow struct {
	User    string             `json:"u"`
	Server  string             `json:"s"`
	Expires int64              `json:"e"` // the link's
	State   string             `json:"st"`
	Flow    oauth.HubFlowState `json:"f"`
}

type signInKey struct{ server, user string }

// pendingSignIn is the link last made here for a user and server, and
// what waits for them to sign in.
type pendingSignIn struct {
	link    string
	id      string
	expires time.Time
	opened  bool          // opened on this replica: the next call makes a new link
	done    chan struct{} // closed once the user has signed in, here or elsewhere
}

// A signInLedger records single uses for every replica: End reports
// whether id was used before; Ended which of ids were. The store's
// session ledger is one.
type signInLedger interface {
	End(ctx context.Context, id string, expires time.Time) (already bool, err error)
	Ended(ctx context.Context, ids []string) ([]string, error)
}

type signIns struct {
	once sync.Once
	// key seals links and flows; ledger records single uses across
	// replicas (nil: per replica only). Set by init unless set before.
	key    []byte
	ledger signInLedger
	links  *seal.Box
	flows  *seal.Box

	mu      sync.Mutex
	pending map[signInKey]*pendingSignIn
	used    map[string]time.Time // "link:ID" and "state:STATE" taken here, until they expire
}

// signInState returns the daemon's sign-ins, with their key: derived
// from the store's session key, which all replicas share, else random.
func (d *Daemon) signInState() *signIns {
	f := &d.signIns
	f.once.Do(func() {
		if f.key == nil && d.shared != nil && len(d.shared.SessionKey) > 0 {
			k, err := hkdf.Key(sha256.New, d.shared.SessionKey, nil, "junction sign-in links", seal.KeySize)
			if err == nil {
				f.key = k
			}
		}
		if f.key == nil {
			f.key = make([]byte, seal.KeySize)
			rand.Read(f.key)
		}
		if f.ledger == nil && d.shared != nil && d.shared.Sessions != nil {
			f.ledger = d.shared.Sessions
		}
		f.links, _ = seal.New(f.key, "junction sign-in link")
		f.flows, _ = seal.New(f.key, "junction sign-in flow")
		f.pending, f.used = map[signInKey]*pendingSignIn{}, map[string]time.Time{}
	})
	return f
}

// linkEncoding writes links in letters and digits only.
var linkEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ledgerID is the ledger's name of a single use: never a session's (a
// hex SHA-256).
func ledgerID(use string) string {
	sum := sha256.Sum256([]byte(use))
	return "sign-in:" + hex.EncodeToString(sum[:16])
}

// prune forgets what has expired. f.mu is held.
func (f *signIns) prune(now time.Time) {
	for k, p := range f.pending {
		if !now.Before(p.expires) {
			delete(f.pending, k) // its waiters give up on their own (signInWait)
		}
	}
	for u, exp := range f.used {
		if !now.Before(exp) {
			delete(f.used, u)
		}
	}
}

// usedElsewhere reports whether the store's ledger says link id was
// used (on another replica); unknown counts as used.
func (f *signIns) usedElsewhere(id string) bool {
	if f.ledger == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ended, err := f.ledger.Ended(ctx, []string{ledgerID("link:" + id)})
	return err != nil || len(ended) > 0
}

// errSignInsFull and errSignInStore are take's refusals that are no
// one's fault.
var (
	errSignInsFull  = errors.New("too many sign-ins at once on this hub: try again in a few minutes")
	errSignInStore  = errors.New("the hub's store could not record the sign-in: try again with a new link (call the tool again)")
	errSignInUsed   = errors.New("used")
	signInUsedOrOld = "This sign-in is unknown, used or expired. Call the tool again from your host for a new link."
)

// take marks use ("link:ID", "state:STATE") as done, until expires: on
// this replica, then in the store's ledger. It fails with errSignInUsed
// if it was done before, here or on another replica.
func (f *signIns) take(ctx context.Context, use string, expires time.Time) error {
	now := time.Now()
	f.mu.Lock()
	if _, ok := f.used[use]; ok {
		f.mu.Unlock()
		return errSignInUsed
	}
	if len(f.used) >= maxSignInsUsed {
		f.prune(now)
		if len(f.used) >= maxSignInsUsed {
			f.mu.Unlock()
			return errSignInsFull
		}
	}
	f.used[use] = expires
	f.mu.Unlock()
	if f.ledger == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	already, err := f.ledger.End(ctx, ledgerID(use), expires)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", errSignInStore, err)
	case already:
		return errSignInUsed
	}
	return nil
}

// usedHere reports whether use was taken on this replica.
func (f *signIns) usedHere(use string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	exp, ok := f.used[use]
	return ok && time.Now().Before(exp)
}

// sealLink returns the link's token: letters and digits.
func (f *signIns) sealLink(l signInLink) string {
	b, _ := json.Marshal(l)
	return linkEncoding.EncodeToString(f.links.Seal(b))
}

// openLink returns the link token names, if this hub (or a replica
// sharing its store) sealed it.
func (f *signIns) openLink(token string) (signInLink, bool) {
	var l signInLink
	b, err := linkEncoding.DecodeString(token)
	if err != nil {
		return l, false
	}
	if b, err = f.links.Open(b); err != nil || json.Unmarshal(b, &l) != nil || l.ID == "" || l.User == "" || l.Server == "" {
		return signInLink{}, false
	}
	return l, true
}

func (f *signIns) sealFlow(fl signInFlow) string {
	b, _ := json.Marshal(fl)
	return base64.RawURLEncoding.EncodeToString(f.flows.Seal(b))
}

func (f *signIns) openFlow(v string) (signInFlow, bool) {
	var fl signInFlow
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return fl, false
	}
	if b, err = f.flows.Open(b); err != nil || json.Unmarshal(b, &fl) != nil || fl.State == "" {
		return signInFlow{}, false
	}
	return fl, true
}

// setPublicBase records the hub's base URL for sign-in links: the
// config's http.public_url, else the origin of the front's OAuth
// audience (the URL hosts use), else the address the listener got.
func (d *Daemon) setPublicBase(cfg HTTPConfig, addr net.Addr) {
	base := "http://" + addr.String()
	if cfg.OAuth != nil && cfg.OAuth.Resource != nil {
		if u, err := url.Parse(cfg.OAuth.Resource.Metadata().Resource); err == nil && u.Host != "" {
			base = u.Scheme + "://" + u.Host
		}
	}
	d.mu.Lock()
	if d.cfg != nil && d.cfg.HTTP.PublicURL != "" {
		base = strings.TrimRight(d.cfg.HTTP.PublicURL, "/")
	}
	d.mu.Unlock()
	d.publicBase.Store(&base)
}

// signInURL returns the link where user signs in to server, reusing the
// one made here if it is not used yet, and a channel closed once they
// have signed in (on any replica); "" when the hub serves no HTTP or
// has too many pending.
func (d *Daemon) signInURL(server, user string) (string, <-chan struct{}) {
	base := d.publicBase.Load()
	if base == nil {
		return "", nil
	}
	f := d.signInState()
	k := signInKey{server, user}
	now := time.Now()
	f.mu.Lock()
	f.prune(now)
	p := f.pending[k]
	reuse := p != nil && !p.opened
	var id string
	if reuse {
		id = p.id
	}
	f.mu.Unlock()
	if reuse && f.usedElsewhere(id) { // opened on another replica
		reuse = false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.pending[k]; q != nil && reuse && q == p && q.id == id && !q.opened {
		return p.link, p.done
	}
	p = f.pending[k]
	if p == nil {
		if len(f.pending) >= maxSignIns {
			return "", nil // too many pending: the error then offers a token instead
		}
		p = &pendingSignIn{done: make(chan struct{})}
		f.pending[k] = p
	}
	p.id, p.expires, p.opened = rand.Text(), now.Add(signInTTL), false
	p.link = *base + "/auth/connect/" + f.sealLink(signInLink{ID: p.id, User: user, Server: server, Expires: p.expires.Unix()})
	return p.link, p.done
}

// signedIn tells this replica's waiters that user signed in to server.
func (d *Daemon) signedIn(server, user string) {
	f := d.signInState()
	f.mu.Lock()
	defer f.mu.Unlock()
	k := signInKey{server, user}
	if p := f.pending[k]; p != nil {
		close(p.done)
		delete(f.pending, k)
	}
}

// signInClient returns user's OAuth client for server, or writes the
// page that says why there is none and returns nil.
func (d *Daemon) signInClient(w http.ResponseWriter, server, user string) *oauth.Client {
	cfg, ok := d.perUserServers()[server]
	if !ok {
		signInPage(w, http.StatusNotFound, "The server "+server+" no longer takes per-user credentials here.")
		return nil
	}
	c, ok := d.userAuth(server, cfg)(user).(*oauth.Client)
	if !ok {
		signInPage(w, http.StatusInternalServerError, "No OAuth client for "+server+".")
		return nil
	}
	return c
}

// signInStart is /auth/connect/LINK: it sends the browser to the
// server's authorization server, with a cookie holding the flow.
func (d *Daemon) signInStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		signInPage(w, http.StatusMethodNotAllowed, "Open this link in a browser.")
		return
	}
	f := d.signInState()
	l, ok := f.openLink(r.PathValue("flow"))
	expires := time.Unix(l.Expires, 0)
	if !ok || !time.Now().Before(expires) {
		signInPage(w, http.StatusNotFound, signInUsedOrOld)
		return
	}
	// Each link starts one flow.
	if err := f.take(r.Context(), "link:"+l.ID, expires); err != nil {
		d.signInRefused(w, err, l.Server, l.User)
		return
	}
	f.mu.Lock()
	if p := f.pending[signInKey{l.Server, l.User}]; p != nil && p.id == l.ID {
		p.opened = true
	}
	f.mu.Unlock()
	c := d.signInClient(w, l.Server, l.User)
	if c == nil {
		return
	}
	state := rand.Text()
	base := d.publicBase.Load()
	flow, err := c.BeginHubFlow(r.Context(), *base+"/auth/callback", state)
	if err != nil {
		d.logger.Warn("sign-in could not start", "source", l.Server, "user", l.User, "error", err)
		signInPage(w, http.StatusBadGateway, "The sign-in to "+l.Server+" could not start: "+err.Error())
		return
	}
	v := f.sealFlow(signInFlow{User: l.User, Server: l.Server, Expires: l.Expires, State: state, Flow: flow.State()})
	http.SetCookie(w, &http.Cookie{Name: signInCookie + "_" + state, Value: v, Path: "/auth/callback",
		MaxAge: max(1, int(time.Until(expires)/time.Second)), HttpOnly: true, Secure: strings.HasPrefix(*base, "https://"),
		SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, flow.AuthURL, http.StatusFound)
}

// signInRefused answers a link or callback that take refused.
func (d *Daemon) signInRefused(w http.ResponseWriter, err error, server, user string) {
	switch {
	case errors.Is(err, errSignInUsed):
		signInPage(w, http.StatusNotFound, signInUsedOrOld)
	case errors.Is(err, errSignInsFull):
		signInPage(w, http.StatusServiceUnavailable, "There are "+errSignInsFull.Error())
	default:
		d.logger.Warn("sign-in refused", "source", server, "user", user, "error", err)
		signInPage(w, http.StatusServiceUnavailable, "The sign-in could not go on: "+errSignInStore.Error())
	}
}

// signInCallback is /auth/callback: the authorization server's redirect
// with the code, which becomes the user's token.
func (d *Daemon) signInCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	f := d.signInState()
	state := q.Get("state")
	if state == "" || f.usedHere("state:"+state) {
		signInPage(w, http.StatusBadRequest, signInUsedOrOld)
		return
	}
	var fl signInFlow
	c, err := r.Cookie(signInCookie + "_" + state)
	ok := err == nil
	if ok {
		fl, ok = f.openFlow(c.Value)
	}
	if !ok || subtle.ConstantTimeCompare([]byte(fl.State), []byte(state)) != 1 {
		if err == nil { // a cookie of another flow's, or altered: made-up callbacks are not logged
			d.logger.Warn("sign-in callback refused: the browser's cookie is not this flow's")
		}
		signInPage(w, http.StatusForbidden, "This sign-in was started in another browser, or is used or unknown: open the link from your host in this browser, or call the tool again for a new one.")
		return
	}
	expires := time.Unix(fl.Expires, 0)
	if !time.Now().Before(expires) {
		signInPage(w, http.StatusBadRequest, signInUsedOrOld)
		return
	}
	// Taken once, whatever comes of it.
	if err := f.take(r.Context(), "state:"+state, expires); err != nil {
		if errors.Is(err, errSignInUsed) {
			signInPage(w, http.StatusBadRequest, signInUsedOrOld)
		} else {
			d.signInRefused(w, err, fl.Server, fl.User)
		}
		return
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie + "_" + state, Path: "/auth/callback", MaxAge: -1})
	if e := q.Get("error"); e != "" {
		signInPage(w, http.StatusBadRequest, "The authorization server said: "+e+" "+q.Get("error_description"))
		return
	}
	client := d.signInClient(w, fl.Server, fl.User)
	if client == nil {
		return
	}
	e, err := client.ResumeHubFlow(fl.Flow).Finish(r.Context(), q.Get("code"))
	if err != nil {
		d.logger.Warn("sign-in failed", "source", fl.Server, "user", fl.User, "error", err)
		signInPage(w, http.StatusBadGateway, "The sign-in to "+fl.Server+" failed: "+err.Error())
		return
	}
	us := oauth.UserStore(d.tokenStore(), fl.User)
	if err := underTokenLock(r.Context(), us, e.Resource, func() error { return us.Save(e) }); err != nil {
		signInPage(w, http.StatusInternalServerError, "The token could not be stored: "+err.Error())
		return
	}
	d.tokenChanged(fl.Server, fl.User, true)
	d.logger.Info("per-user token from a sign-in", "source", fl.Server, "user", fl.User)
	signInPage(w, http.StatusOK, "Signed in to "+fl.Server+". Go back to your host and call the tool again.")
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
