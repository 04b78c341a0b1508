package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
	"github.com/junction-mcp/junction/internal/pgtest"
	"github.com/junction-mcp/junction/internal/store/postgres"
)

// Per-user credentials when a user's token expires (issue 37): it is
// refreshed once, however many calls and replicas find it expired at
// once, and with the new token every call goes through; a refresh that
// fails is that user's problem alone, tells them how to re-authorize,
// and leaves their stored entry as it was.
//
// How a token expires here. The hub reads a user's token from the store
// once (an oauth.Client per user and server, kept until the user gives or
// takes back a token), holds it in memory, and refreshes it when it is
// within 10 s of its expiry (golang.org/x/oauth2's margin; on a shared
// store, under the store's lock on the entry, so that replicas refresh
// once). A test cannot age a token the hub holds, so the authorization
// server does: [tokenDesk] can hand out tokens that live 10 s (the hub
// then finds each one expired at its next use, as a token that expired
// between two calls) and then hour-long ones, so that the first use after
// the switch finds the token expired, and the test makes that use many
// calls at once. A user may also give the hub a token that has already
// expired, with its refresh token (junction auth login -user).

// tokenDesk is the users' authorization server: oauthtest's (the code
// flow with PKCE, refresh tokens used once) behind a token endpoint of
// the test's own (URL, given to the hub), which counts each user's
// refresh_token grants, can fail, and can shorten the lifetime of the
// tokens it hands out. It knows whose each token is and until when, for
// the who server's check ([tokenDesk.check]): a token is taken until its
// expiry, and names its user and its generation (alice#2 is the second
// token Alice got).
type tokenDesk struct {
	as  *oauthtest.Server
	srv *httptest.Server
	hc  *http.Client

	mu        sync.Mutex
	tokens    map[string]deskToken // access token → whose, until when
	owner     map[string]string    // refresh token → user
	latest    map[string]string    // user → their latest refresh token
	gen       map[string]int       // user → tokens they got so far
	refreshes map[string]int       // user → refresh_token grants asked for, good or not
	fault     string               // how the token endpoint fails: "" (it does not), "503", "drop" (closes the connection), "hold" (see hold)
	arrived   chan struct{}        // with fault "hold": a refresh arrived
	release   chan struct{}        // with fault "hold": closed to let it go on
	answered  chan struct{}        // with fault "hold": the refresh held was answered
	lifetime  int                  // expires_in of the tokens refreshes hand out; 0: the authorization server's (an hour)
}

type deskToken struct {
	user   string
	gen    int
	expiry time.Time
}

func newTokenDesk(t *testing.T) *tokenDesk {
	t.Helper()
	d := &tokenDesk{as: oauthtest.New(), hc: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 30 * time.Second},
		tokens: map[string]deskToken{}, owner: map[string]string{}, latest: map[string]string{}, gen: map[string]int{}, refreshes: map[string]int{}}
	t.Cleanup(d.as.Close)
	d.srv = httptest.NewServer(http.HandlerFunc(d.token))
	t.Cleanup(d.srv.Close)
	t.Cleanup(d.hc.CloseIdleConnections)
	return d
}

// URL is the token endpoint the hub is given.
func (d *tokenDesk) URL() string { return d.srv.URL + "/token" }

func (d *tokenDesk) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	user := d.owner[r.PostForm.Get("refresh_token")]
	if r.PostForm.Get("grant_type") == "refresh_token" {
		d.refreshes[user]++
	}
	fault, lifetime, arrived, release, answered := d.fault, d.lifetime, d.arrived, d.release, d.answered
	d.mu.Unlock()
	switch fault {
	case "hold":
		arrived <- struct{}{}
		<-release
		defer func() { answered <- struct{}{} }()
	case "503":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"temporarily_unavailable"}`)
		return
	case "drop":
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	resp, err := d.hc.PostForm(d.as.URL+"/token", r.PostForm)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if resp.StatusCode == http.StatusOK && user != "" && json.Unmarshal(body, &m) == nil {
		if lifetime > 0 {
			m["expires_in"] = lifetime
		}
		at, _ := m["access_token"].(string)
		rt, _ := m["refresh_token"].(string)
		exp, _ := m["expires_in"].(float64)
		if n, ok := m["expires_in"].(int); ok {
			exp = float64(n)
		}
		d.issued(user, at, rt, time.Duration(exp)*time.Second)
		body, _ = json.Marshal(m)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

func (d *tokenDesk) issued(user, access, refresh string, life time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gen[user]++
	d.tokens[access] = deskToken{user: user, gen: d.gen[user], expiry: time.Now().Add(life)}
	d.owner[refresh] = user
	d.latest[user] = refresh
}

// check is the who server's token check: the hub's own token, or a
// user's until it expires, named user#generation.
func (d *tokenDesk) check(string) func(string) (string, bool) {
	return func(token string) (string, bool) {
		if token == "hub-up" {
			return "the hub", true
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		k, ok := d.tokens[token]
		if !ok || !time.Now().Before(k.expiry) {
			return "", false
		}
		return fmt.Sprintf("%s#%d", k.user, k.gen), true
	}
}

// signIn is user's authorization code flow with PKCE at the
// authorization server (which approves at once): their token, with a
// refresh token and the client that refreshes it, as junction auth login
// -user takes it, the token endpoint being the desk's. With expired, the
// token has expired by the time they give it to the hub: the server
// takes it no more, and its expiry is past.
func (d *tokenDesk) signIn(t *testing.T, user string, expired bool) map[string]any {
	t.Helper()
	const redirect = "http://127.0.0.1/callback"
	reg, err := d.hc.Post(d.as.URL+"/register", "application/json", strings.NewReader(`{"redirect_uris":["`+redirect+`"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	json.NewDecoder(reg.Body).Decode(&client)
	reg.Body.Close()
	conf := &oauth2.Config{ClientID: client.ClientID, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{AuthURL: d.as.URL + "/authorize", TokenURL: d.as.URL + "/token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	resource := oauth2.SetAuthURLParam("resource", d.as.Resource())
	browser := &http.Client{Transport: d.hc.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := browser.Get(conf.AuthCodeURL("state", oauth2.S256ChallengeOption(verifier), resource))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Query().Get("code") == "" {
		t.Fatalf("the authorization server: %d, to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	ctx := context.WithValue(t.Context(), oauth2.HTTPClient, d.hc)
	tok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier), resource)
	if err != nil || tok.RefreshToken == "" {
		t.Fatalf("%s's sign-in: %v (refresh token %q)", user, err, tok.RefreshToken)
	}
	life := time.Until(tok.Expiry)
	if expired {
		life = -time.Minute
	}
	d.issued(user, tok.AccessToken, tok.RefreshToken, life)
	return map[string]any{"access_token": tok.AccessToken, "refresh_token": tok.RefreshToken, "expiry": time.Now().Add(life),
		"client_id": client.ClientID, "token_url": d.URL()}
}

// setFault makes the token endpoint fail ("503", "drop") or not ("").
func (d *tokenDesk) setFault(f string) {
	d.mu.Lock()
	d.fault = f
	d.mu.Unlock()
}

// hold makes the next refreshes wait at the token endpoint: arrived
// receives when one has come, release lets them go on to the
// authorization server, and answered receives once each has been
// answered.
func (d *tokenDesk) hold() (arrived, answered <-chan struct{}, release func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fault, d.arrived, d.release, d.answered = "hold", make(chan struct{}, 16), make(chan struct{}), make(chan struct{}, 16)
	ch := d.release
	var once sync.Once
	return d.arrived, d.answered, func() {
		once.Do(func() {
			d.setFault("")
			close(ch)
		})
	}
}

// label is how the who server names token (user#generation).
func (d *tokenDesk) label(token any) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.tokens[token.(string)]
	return fmt.Sprintf("%s#%d", k.user, k.gen)
}

// setLifetime sets the lifetime of the tokens refreshes hand out (0:
// an hour), and returns user's refresh_token grants so far and the
// authorization server's, counted at that moment.
func (d *tokenDesk) setLifetime(seconds int, user string) (desk, server int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lifetime = seconds
	return d.refreshes[user], d.as.RefreshTries()
}

// counts returns user's refresh_token grants asked for so far, and the
// authorization server's.
func (d *tokenDesk) counts(user string) (desk, server int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refreshes[user], d.as.RefreshTries()
}

// notIn fails if any token the desk handed out is in text.
func (d *tokenDesk) notIn(t *testing.T, what, text string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for tok := range d.tokens {
		if strings.Contains(text, tok) {
			t.Errorf("a user's token is in %s:\n%s", what, text)
			return
		}
	}
	for tok := range d.owner {
		if strings.Contains(text, tok) {
			t.Errorf("a user's refresh token is in %s:\n%s", what, text)
			return
		}
	}
}

// current is user's latest token, as the who server names it.
func (d *tokenDesk) current(user string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fmt.Sprintf("%s#%d", user, d.gen[user])
}

// refreshElsewhere uses user's latest refresh token at the
// authorization server as another client of theirs would: the one the
// hub holds is used up.
func (d *tokenDesk) refreshElsewhere(t *testing.T, user string) {
	t.Helper()
	d.mu.Lock()
	rt := d.latest[user]
	d.mu.Unlock()
	resp, err := d.hc.PostForm(d.URL(), url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("refreshing %s's token elsewhere: %s", user, resp.Status)
	}
}

// userHub is a junction serve process with the per-user server "who"
// (a whoServer checked by a tokenDesk), and front tokens
// front-alice and front-bob.
type userHub struct {
	proc *serveProc
	root string
}

// userHubConfig writes the config of such hubs; store, if set, is the
// PostgreSQL store they share.
func userHubConfig(t *testing.T, dir string, desk *tokenDesk, store string) string {
	t.Helper()
	up := whoServerWith(t, "", desk.check)
	cfg := filepath.Join(dir, "junction.json")
	extra := ""
	if store != "" {
		extra = `,
  "store": "` + store + `"`
	}
	if err := os.WriteFile(cfg, []byte(`{
  "servers": {"who": {"url": "`+up+`", "bearer_token": "hub-up", "credentials": "per_user"}},
  "http": {"tokens": ["front-alice", "front-bob"]}`+extra+`
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func startUserHub(t *testing.T, cfg string, env ...string) *userHub {
	t.Helper()
	p := startServerEnv(t, env, "-config", cfg, "-no-default-packs")
	h := &userHub{proc: p, root: strings.TrimSuffix(p.URL, "/mcp")}
	waitFor(t, "who connected", 30*time.Second, func() bool {
		st, _ := getStatus(t, p.URL, "front-alice").source("who")
		return st == "connected"
	})
	return h
}

// give is junction auth login -user who, with tok (signIn's) on its
// standard input.
func (h *userHub) give(t *testing.T, front string, tok map[string]any) {
	t.Helper()
	b, _ := json.Marshal(tok)
	if out, errOut, code := runJunctionIn(t, nil, string(b), "auth", "login", "-user", "who", "-url", h.root, "-token", front); code != 0 {
		t.Fatalf("auth login -user: exit %d\n%s%s", code, out, errOut)
	}
}

// user is the hub's name for the user of front.
func (h *userHub) user(t *testing.T, front string) string {
	t.Helper()
	var toks []struct{ Server, User string }
	if r := httpDo(t, http.MethodGet, h.root+"/auth/tokens", front, nil); json.Unmarshal([]byte(r.body), &toks) != nil || len(toks) == 0 {
		t.Fatalf("GET /auth/tokens: %d %s", r.status, r.body)
	}
	return toks[0].User
}

// whoami calls the who server's whoami on cs: its text, and whether it
// is an error.
func whoami(t *testing.T, cs *mcp.ClientSession) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	return callText(ctx, cs, "who__whoami", nil)
}

// expectWho fails unless cs's call of whoami answers "you are " + who.
func expectWho(t *testing.T, what string, cs *mcp.ClientSession, who string) {
	t.Helper()
	if text, isErr := whoami(t, cs); isErr || text != "you are "+who {
		t.Fatalf("%s: %q (error %v), want %q", what, text, isErr, "you are "+who)
	}
}

// warm makes calls on cs until one goes through with user's token:
// their session and token are then in the hub's memory. (A token given
// on one replica reaches the others through the store's notice: until
// it has, a call there finds none.)
func warm(t *testing.T, what string, cs *mcp.ClientSession, user string) {
	t.Helper()
	waitFor(t, what, 60*time.Second, func() bool {
		text, isErr := whoami(t, cs)
		return !isErr && strings.HasPrefix(text, "you are "+user+"#")
	})
}

// atOnce runs the calls together, released at one moment, and returns
// their answers.
func atOnce(t *testing.T, calls ...*mcp.ClientSession) []string {
	t.Helper()
	out := make([]string, len(calls))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, cs := range calls {
		wg.Go(func() {
			<-start
			text, isErr := whoami(t, cs)
			if isErr {
				text = "error: " + text
			}
			out[i] = text
		})
	}
	close(start)
	wg.Wait()
	return out
}

// TestPerUserRefreshOnceAcrossReplicas: two hub processes share a
// PostgreSQL store; Alice's token, given on one replica, expired, is
// refreshed there and on the other as her calls go through both (the
// authorization server handing out tokens that expire at once). Then
// her token expires once more, and two calls of hers on each replica,
// with Bob's on both, are made at the same moment: the authorization
// server sees one refresh of Alice's token, every call of hers goes
// through with the new token (the who server names the token each call
// came with), and Bob's calls carry his own. The replicas read the new
// token from the store; neither refreshes it again afterwards.
func TestPerUserRefreshOnceAcrossReplicas(t *testing.T) {
	desk := newTokenDesk(t)
	pg := pgtest.Start(t)
	cfg := userHubConfig(t, t.TempDir(), desk, pg.URL)
	a, b := startUserHub(t, cfg), startUserHub(t, cfg)

	b.give(t, "front-bob", desk.signIn(t, "bob", false))
	desk.setLifetime(10, "alice") // a token that expires at its next use
	a.give(t, "front-alice", desk.signIn(t, "alice", true))
	aliceA, aliceA2, bobA := connectHTTP(t, a.proc.URL, "front-alice"), connectHTTP(t, a.proc.URL, "front-alice"), connectHTTP(t, a.proc.URL, "front-bob")
	aliceB, aliceB2, bobB := connectHTTP(t, b.proc.URL, "front-alice"), connectHTTP(t, b.proc.URL, "front-alice"), connectHTTP(t, b.proc.URL, "front-bob")
	warm(t, "alice's expired token refreshed on replica a", aliceA, "alice")
	warm(t, "alice's token refreshed on replica b", aliceB, "alice")
	expectWho(t, "bob on replica a", bobA, "bob#1")

	// From now on tokens last an hour: the one each replica holds has
	// expired; Alice calls both at once, twice each, and Bob too.
	deskBefore, asBefore := desk.setLifetime(0, "alice")
	got := atOnce(t, aliceA, aliceA2, aliceB, aliceB2, bobA, bobB)
	deskAfter, asAfter := desk.counts("alice")
	want := "you are " + desk.current("alice")
	for i, g := range got[:4] {
		if g != want {
			t.Errorf("alice's call %d (replica %c): %q, want %q", i, "aabb"[i], g, want)
		}
	}
	for i, g := range got[4:] {
		if g != "you are bob#1" {
			t.Errorf("bob's call on replica %c: %q", "ab"[i], g)
		}
	}
	if deskAfter-deskBefore != 1 || asAfter-asBefore != 1 {
		t.Errorf("refreshes of alice's token for 4 calls at once on 2 replicas: %d asked for (%d at the authorization server), want 1",
			deskAfter-deskBefore, asAfter-asBefore)
	}
	// The store holds the new token, and both replicas go on with it.
	st, err := postgres.Open(t.Context(), pg.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tokens, err := st.Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	e, err := oauth.UserStore(tokens, a.user(t, "front-alice")).Load(userHubServer(t, a))
	if err != nil || e == nil || time.Until(e.Token.Expiry) < 30*time.Minute || e.Token.RefreshToken == "" {
		t.Errorf("alice's stored entry after the refresh: %+v, %v", e, err)
	}
	expectWho(t, "alice on replica a, after", aliceA, desk.current("alice"))
	expectWho(t, "alice on replica b, after", aliceB2, desk.current("alice"))
	if n, _ := desk.counts("alice"); n != deskAfter {
		t.Errorf("alice's token refreshed again after the new one was stored: %d more", n-deskAfter)
	}
	for _, h := range []*userHub{a, b} {
		desk.notIn(t, "a replica's log", h.proc.Stderr())
	}
}

// userHubServer is the URL of the hub's server "who" (the key of its
// users' tokens).
func userHubServer(t *testing.T, h *userHub) string {
	t.Helper()
	var toks []struct{ Server, URL string }
	r := httpDo(t, http.MethodGet, h.root+"/auth/tokens", "front-alice", nil)
	if json.Unmarshal([]byte(r.body), &toks) != nil || len(toks) == 0 || toks[0].URL == "" {
		t.Fatalf("GET /auth/tokens: %d %s", r.status, r.body)
	}
	return toks[0].URL
}

// TestPerUserRefreshOnceOnOneHub: one hub (its token store a file);
// Alice's token expires while her session with the server is up, and
// four calls of hers (from four sessions of her host) reach the hub at
// once, with one of Bob's: her token is refreshed once, all four go
// through with the new one, and Bob's with his own. (The hub sends a
// user's requests to a server on one session, whose client writes one
// request at a time: the first call's refresh is over before the next
// call's request asks for the token. Refreshes really at once are
// TestPerUserRefreshOnceAcrossReplicas's.)
func TestPerUserRefreshOnceOnOneHub(t *testing.T) {
	desk := newTokenDesk(t)
	dir := t.TempDir()
	hub := startUserHub(t, userHubConfig(t, dir, desk, ""), "JUNCTION_OAUTH_DIR="+filepath.Join(dir, "oauth"), "JUNCTION_OAUTH_KEYCHAIN=0")
	hub.give(t, "front-bob", desk.signIn(t, "bob", false))
	desk.setLifetime(10, "alice")
	hub.give(t, "front-alice", desk.signIn(t, "alice", true))
	var alice []*mcp.ClientSession
	for range 4 {
		alice = append(alice, connectHTTP(t, hub.proc.URL, "front-alice"))
	}
	bob := connectHTTP(t, hub.proc.URL, "front-bob")
	warm(t, "alice's expired token refreshed", alice[0], "alice")
	expectWho(t, "bob", bob, "bob#1")

	deskBefore, asBefore := desk.setLifetime(0, "alice")
	got := atOnce(t, append(alice, bob)...)
	deskAfter, asAfter := desk.counts("alice")
	for i, g := range got[:4] {
		if want := "you are " + desk.current("alice"); g != want {
			t.Errorf("alice's call %d: %q, want %q", i, g, want)
		}
	}
	if got[4] != "you are bob#1" {
		t.Errorf("bob's call: %q", got[4])
	}
	if deskAfter-deskBefore != 1 || asAfter-asBefore != 1 {
		t.Errorf("refreshes of alice's token for 4 calls at once: %d asked for (%d at the authorization server), want 1",
			deskAfter-deskBefore, asAfter-asBefore)
	}
	store := oauth.NewFileStore(filepath.Join(dir, "oauth"))
	e, err := oauth.UserStore(store, hub.user(t, "front-alice")).Load(userHubServer(t, hub))
	if err != nil || e == nil || time.Until(e.Token.Expiry) < 30*time.Minute {
		t.Errorf("alice's stored entry after the refresh: %+v, %v", e, err)
	}
	desk.notIn(t, "the hub's log", hub.proc.Stderr())
}

// TestPerUserRefreshFaults: a refresh of one user's token that fails is
// that user's alone. Alice's token has expired; Bob's has not. With the
// authorization server's token endpoint answering 503, then dropping
// the connection, Alice's call fails with a tool error that says how to
// re-authorize (the sign-in link, or junction auth login -user) and why
// (her token expired, the refresh failed, and a later call may work),
// not only the transport's error; Bob's goes through; her
// stored entry is as it was (her token and refresh token, the client
// that refreshes them): once the endpoint is back, her next call
// refreshes it and goes through, with nothing asked of her. Then her
// refresh token is used up elsewhere (the server refuses it): her call
// says how to re-authorize, and her entry stays as it was until she
// does, which she does. A token given expired without a refresh token
// is refused the same way, without asking the authorization server.
// Each runs on a hub whose token store is a file, and on one whose
// store is PostgreSQL (where a refresh holds the store's lock).
func TestPerUserRefreshFaults(t *testing.T) {
	for _, kind := range []string{"file", "postgres"} {
		t.Run(kind, func(t *testing.T) { testRefreshFaults(t, kind) })
	}
}

// refreshHub starts a tokenDesk and a userHub whose token store is a
// file (kind "file") or PostgreSQL ("postgres"), and returns them with
// a func that reads Alice's stored entry (nil: none) as the hub left it.
func refreshHub(t *testing.T, kind string) (*tokenDesk, *userHub, func() *oauth.Entry) {
	desk, hub, entry, _ := refreshHubLocks(t, kind)
	return desk, hub, entry
}

// refreshHubLocks is refreshHub, and, for PostgreSQL, a func that
// reports how many sessions wait for an advisory lock (the store's lock
// of a token; nil for a file store).
func refreshHubLocks(t *testing.T, kind string) (*tokenDesk, *userHub, func() *oauth.Entry, func() int) {
	t.Helper()
	desk := newTokenDesk(t)
	dir := t.TempDir()
	var hub *userHub
	var store oauth.Store
	var lockWaiters func() int
	if kind == "postgres" {
		pg := pgtest.Start(t)
		hub = startUserHub(t, userHubConfig(t, dir, desk, pg.URL))
		db, err := postgres.Open(t.Context(), pg.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if store, err = db.Tokens(t.Context()); err != nil {
			t.Fatal(err)
		}
		lockWaiters = func() int {
			var n int
			if err := db.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n); err != nil {
				t.Fatalf("pg_locks: %v", err)
			}
			return n
		}
	} else {
		hub = startUserHub(t, userHubConfig(t, dir, desk, ""), "JUNCTION_OAUTH_DIR="+filepath.Join(dir, "oauth"), "JUNCTION_OAUTH_KEYCHAIN=0")
		store = oauth.NewFileStore(filepath.Join(dir, "oauth"))
	}
	resource := userHubServer(t, hub)
	aliceStore := oauth.UserStore(store, hub.user(t, "front-alice"))
	return desk, hub, func() *oauth.Entry {
		t.Helper()
		e, err := aliceStore.Load(resource)
		if err != nil {
			t.Fatalf("alice's stored entry: %v", err)
		}
		return e
	}, lockWaiters
}

func testRefreshFaults(t *testing.T, kind string) {
	desk, hub, entry := refreshHub(t, kind)
	hub.give(t, "front-bob", desk.signIn(t, "bob", false))
	hub.give(t, "front-alice", desk.signIn(t, "alice", true))
	given := entry()
	alice, bob := connectHTTP(t, hub.proc.URL, "front-alice"), connectHTTP(t, hub.proc.URL, "front-bob")
	expectWho(t, "bob", bob, "bob#1")
	reauthorize := func(what, text string, isErr bool) {
		t.Helper()
		if !isErr || !strings.Contains(text, "takes each user's own credentials") ||
			!strings.Contains(text, "sign in at http://") || !strings.Contains(text, "junction auth login -user") {
			t.Errorf("%s: %q (error %v), want a tool error that says how to re-authorize", what, text, isErr)
		}
		if strings.Contains(text, "rejected by transport") || strings.Contains(text, `calling "initialize"`) {
			t.Errorf("%s: %q, want what the user must do without the transport's wrapping", what, text)
		}
	}
	unchanged := func(what string, was *oauth.Entry) {
		t.Helper()
		e := entry()
		if e == nil || e.Token == nil || e.Token.AccessToken != was.Token.AccessToken || e.Token.RefreshToken != was.Token.RefreshToken ||
			!e.Token.Expiry.Equal(was.Token.Expiry) || e.ClientID != was.ClientID || e.TokenURL != was.TokenURL {
			t.Errorf("alice's stored entry %s: %+v, want it as it was: %+v", what, e, was)
		}
	}

	// The token endpoint is down while her token has expired.
	for _, fault := range []string{"503", "drop"} {
		desk.setFault(fault)
		before, _ := desk.counts("alice")
		text, isErr := whoami(t, alice)
		reauthorize("alice's call, the token endpoint "+fault, text, isErr)
		if !strings.Contains(text, "has expired and could not be refreshed") || !strings.Contains(text, "calling again later may work") {
			t.Errorf("alice's call, the token endpoint %s: %q, want it to say the refresh failed, for now", fault, text)
		}
		if n, _ := desk.counts("alice"); n == before {
			t.Errorf("alice's call, the token endpoint %s: no refresh tried", fault)
		}
		expectWho(t, "bob's call, the token endpoint "+fault, bob, "bob#1")
		unchanged("after a refresh that failed ("+fault+")", given)
	}
	// It is back: her next call refreshes, and goes through.
	desk.setFault("")
	expectWho(t, "alice's call, the token endpoint back", alice, "alice#2")
	if e := entry(); e == nil || e.Token.AccessToken == given.Token.AccessToken || e.Token.RefreshToken == given.Token.RefreshToken ||
		time.Until(e.Token.Expiry) < 30*time.Minute || e.ClientID != given.ClientID {
		t.Errorf("alice's stored entry after the refresh: %+v", e)
	}

	// She gives another token, which has expired too, and whose refresh
	// token is used up elsewhere: the server refuses it.
	hub.give(t, "front-alice", desk.signIn(t, "alice", true))
	desk.refreshElsewhere(t, "alice")
	now := entry()
	text, isErr := whoami(t, alice)
	reauthorize("alice's call, her refresh token refused", text, isErr)
	if !strings.Contains(text, "has expired and could not be refreshed") || !strings.Contains(text, "invalid_grant") ||
		strings.Contains(text, "calling again later") {
		t.Errorf("alice's call, her refresh token refused: %q, want the authorization server's answer", text)
	}
	expectWho(t, "bob's call, alice's refresh token refused", bob, "bob#1")
	unchanged("after her refresh token was refused", now)
	hub.give(t, "front-alice", desk.signIn(t, "alice", false))
	expectWho(t, "alice's call, signed in again", alice, desk.current("alice"))

	// A token given expired without a refresh token: nothing to refresh.
	tok := desk.signIn(t, "alice", true)
	delete(tok, "refresh_token")
	hub.give(t, "front-alice", tok)
	before, _ := desk.counts("alice")
	text, isErr = whoami(t, alice)
	reauthorize("alice's call, her token expired without a refresh token", text, isErr)
	if !strings.Contains(text, "there is no refresh token to renew it") {
		t.Errorf("alice's call, her token expired without a refresh token: %q, want it to say so", text)
	}
	if n, _ := desk.counts("alice"); n != before {
		t.Errorf("alice's token without a refresh token: %d refreshes asked for", n-before)
	}
	expectWho(t, "bob's call, at the end", bob, "bob#1")
	if e := entry(); e == nil || e.Token.AccessToken != tok["access_token"] {
		t.Errorf("alice's stored entry, expired without a refresh token: %+v", e)
	}
	desk.notIn(t, "the hub's log", hub.proc.Stderr())
}

// TestPerUserTokenChangedDuringRefresh: a user who gives a new token, or
// takes theirs back, while the hub is refreshing their expired one (the
// token endpoint holds the refresh) keeps what they did: the refreshed
// old token is not stored over the new one, nor stored again once taken
// back; their next call goes with the new token, or says they have none.
// On a hub whose token store is a file (the change lands while the
// refresh is held), and on one whose store is PostgreSQL, where the
// change waits for the token's lock, which the refresh holds (the test
// sees it wait in pg_locks), and lands once the refresh is over.
func TestPerUserTokenChangedDuringRefresh(t *testing.T) {
	for _, kind := range []string{"file", "postgres"} {
		t.Run(kind, func(t *testing.T) { testTokenChangedDuringRefresh(t, kind) })
	}
}

func testTokenChangedDuringRefresh(t *testing.T, kind string) {
	desk, hub, entry, lockWaiters := refreshHubLocks(t, kind)
	hub.give(t, "front-bob", desk.signIn(t, "bob", false))
	alice, bob := connectHTTP(t, hub.proc.URL, "front-alice"), connectHTTP(t, hub.proc.URL, "front-bob")
	// during runs change while Alice's call waits on the refresh of her
	// expired token, then lets the refresh go on, and waits for her call.
	during := func(what string, change func() error) {
		t.Helper()
		hub.give(t, "front-alice", desk.signIn(t, "alice", true))
		arrived, answered, release := desk.hold()
		defer release() // also when the test fails on the way
		done := make(chan string, 1)
		go func() {
			text, _ := whoami(t, alice)
			done <- text
		}()
		select {
		case <-arrived:
		case <-time.After(60 * time.Second):
			release()
			t.Fatalf("%s: alice's call asked for no refresh", what)
		}
		var err error
		if lockWaiters == nil {
			err = change()
			release()
		} else {
			changed := make(chan error, 1)
			go func() { changed <- change() }()
			waitFor(t, what+": the change waiting for the token's lock", 60*time.Second, func() bool { return lockWaiters() > 0 })
			release()
			err = <-changed
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		<-answered
		t.Logf("%s: alice's call meanwhile: %s", what, <-done)
	}
	cli := func(stdin string, args ...string) error {
		if out, errOut, code := runJunctionIn(t, nil, stdin, args...); code != 0 {
			return fmt.Errorf("junction %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return nil
	}

	given := desk.signIn(t, "alice", false)
	during("a new token given", func() error {
		b, _ := json.Marshal(given)
		return cli(string(b), "auth", "login", "-user", "who", "-url", hub.root, "-token", "front-alice")
	})
	expectWho(t, "alice's call after she gave a new token during a refresh", alice, desk.label(given["access_token"]))
	if e := entry(); e == nil || e.Token.AccessToken != given["access_token"] || e.Token.RefreshToken != given["refresh_token"] {
		t.Errorf("alice's stored entry after she gave a new token during a refresh: %+v, want the one she gave", e)
	}

	during("the token taken back", func() error {
		return cli("", "auth", "logout", "-user", "who", "-url", hub.root, "-token", "front-alice")
	})
	if text, isErr := whoami(t, alice); !isErr || !strings.Contains(text, "has none here") {
		t.Errorf("alice's call after she took her token back during a refresh: %q (error %v)", text, isErr)
	}
	if e := entry(); e != nil {
		t.Errorf("alice's entry after she took it back during a refresh: %+v, want none", e)
	}
	expectWho(t, "bob's call", bob, "bob#1")
	desk.notIn(t, "the hub's log", hub.proc.Stderr())
}
