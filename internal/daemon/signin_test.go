package daemon

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
)

// signInReplica returns a daemon with one per-user server, docs at
// resource, serving HTTP at addr (nothing listens: the test calls its
// handlers), with publicURL as http.public_url. Replicas made with the
// same key, ledger and store stand for replicas that share a store.
func signInReplica(t *testing.T, resource, publicURL, addr string, key []byte, ledger signInLedger, store oauth.Store) *Daemon {
	t.Helper()
	d := &Daemon{logger: slog.New(slog.DiscardHandler), cfg: &config.Config{
		Servers: map[string]*config.Server{"docs": {URL: resource, Credentials: config.CredentialsPerUser}},
		HTTP:    config.HTTP{PublicURL: publicURL},
	}}
	d.tokensOnce.Do(func() { d.tokens = store })
	d.signIns.key, d.signIns.ledger = key, ledger
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	d.setPublicBase(HTTPConfig{}, a)
	return d
}

// browserGet serves GET target on h (a replica's sign-in handler) with
// cookies, and returns the response.
func browserGet(h http.HandlerFunc, target, flow string, cookies ...*http.Cookie) *http.Response {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	if flow != "" {
		r.SetPathValue("flow", flow)
	}
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	h(w, r)
	return w.Result()
}

func linkFlow(t *testing.T, link string) string {
	t.Helper()
	_, flow, ok := strings.Cut(link, "/auth/connect/")
	if !ok || flow == "" || strings.Trim(flow, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
		t.Fatalf("link %q: want /auth/connect/ and letters and digits", link)
	}
	return flow
}

// TestSignInPublicURL: with http.public_url, the sign-in link and the
// redirect URI the authorization server is given are on it (a path
// prefix kept); without it, on the listener's address.
func TestSignInPublicURL(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	as := oauthtest.New()
	t.Cleanup(func() { as.Close(); http.DefaultTransport.(*http.Transport).CloseIdleConnections() })
	for _, tt := range []struct{ public, want string }{
		{"https://hub.example.com/junction/", "https://hub.example.com/junction"},
		{"https://hub.example.com", "https://hub.example.com"},
		{"", "http://127.0.0.1:7331"},
	} {
		d := signInReplica(t, as.Resource(), tt.public, "127.0.0.1:7331", nil, nil, &oauth.MemoryStore{})
		link, done := d.signInURL("docs", "alice")
		if !strings.HasPrefix(link, tt.want+"/auth/connect/") || done == nil {
			t.Errorf("public_url %q: link %q, want it on %s", tt.public, link, tt.want)
			continue
		}
		resp := browserGet(d.signInStart, link, linkFlow(t, link))
		to, err := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || err != nil || to.Query().Get("redirect_uri") != tt.want+"/auth/callback" {
			t.Errorf("public_url %q: /auth/connect answered %d to %q; want the redirect URI %s/auth/callback", tt.public, resp.StatusCode, to, tt.want)
		}
		if c := resp.Cookies(); len(c) != 1 || !c[0].Secure != strings.HasPrefix(tt.want, "http:") || !c[0].HttpOnly {
			t.Errorf("public_url %q: cookies %v, want one, HttpOnly, Secure on https", tt.public, c)
		}
	}
}

// TestSignInAcrossReplicas: two replicas share a key, a ledger and a
// token store (as two hubs on one PostgreSQL store do). A link made by
// one is opened on the other and called back on the first, which stores
// the user's token and tells its waiters. Single use holds across both:
// the link reopened, the callback replayed (with or without the cookie)
// are refused on either. A callback of another user's flow, a link past
// its expiry, altered, or sealed under another key, are refused; the
// pending links are bounded.
func TestSignInAcrossReplicas(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	as := oauthtest.New()
	t.Cleanup(func() { as.Close(); http.DefaultTransport.(*http.Transport).CloseIdleConnections() })
	key := make([]byte, 32)
	key[0] = 7
	ledger := dataplane.NewMemoryLedger(0)
	store := &oauth.MemoryStore{}
	const public = "https://hub.example.com"
	a := signInReplica(t, as.Resource(), public, "127.0.0.1:7331", key, ledger, store)
	b := signInReplica(t, as.Resource(), public, "127.0.0.1:7332", key, ledger, store)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// authorize sends the browser to the authorization server and returns
	// the callback it is sent back to.
	authorize := func(resp *http.Response) string {
		t.Helper()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("/auth/connect: %d, want a redirect", resp.StatusCode)
		}
		r, err := noRedirect.Get(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		cb := r.Header.Get("Location")
		if !strings.HasPrefix(cb, public+"/auth/callback?") {
			t.Fatalf("the authorization server sent the browser to %q", cb)
		}
		return cb
	}

	link, done := a.signInURL("docs", "alice")
	if again, _ := a.signInURL("docs", "alice"); again != link {
		t.Errorf("a second call made another link: %s, then %s", link, again)
	}
	flow := linkFlow(t, link)
	opened := browserGet(b.signInStart, link, flow)
	cookies := opened.Cookies()
	callback := authorize(opened)
	// The link is used: on either replica, and the replica that made it
	// makes a new one.
	for name, d := range map[string]*Daemon{"a": a, "b": b} {
		if resp := browserGet(d.signInStart, link, flow); resp.StatusCode != http.StatusNotFound {
			t.Errorf("the used link opened on %s: %d, want 404", name, resp.StatusCode)
		}
	}
	if again, _ := a.signInURL("docs", "alice"); again == link {
		t.Error("the replica that made the link shows it again after it was opened on another")
	}
	// Without the browser's cookie: refused, and the flow goes on.
	if resp := browserGet(a.signInCallback, callback, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the callback without the cookie: %d, want 403", resp.StatusCode)
	}
	if resp := browserGet(a.signInCallback, callback, "", cookies...); resp.StatusCode != http.StatusOK {
		t.Fatalf("the callback on the replica that made the link: %d", resp.StatusCode)
	}
	select {
	case <-done:
	default:
		t.Error("the waiter of the replica that made the link was not told")
	}
	if e, err := oauth.UserStore(store, "alice").Load(as.Resource()); err != nil || e == nil || e.Token == nil || e.Token.AccessToken == "" {
		t.Errorf("alice's token: %v, %v", e, err)
	}
	// Replayed: refused on both, the cookie or not.
	for name, d := range map[string]*Daemon{"a": a, "b": b} {
		for _, c := range [][]*http.Cookie{nil, cookies} {
			if resp := browserGet(d.signInCallback, callback, "", c...); resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusForbidden {
				t.Errorf("the callback replayed on %s (cookie %v): %d, want refused", name, c != nil, resp.StatusCode)
			}
		}
		if resp := browserGet(d.signInCallback, callback, "", cookies...); name == "b" && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("the callback replayed with its cookie on the other replica: %d, want 400 (used)", resp.StatusCode)
		}
	}

	// Bob's flow, called back with Alice's cookie, or with her flow's
	// cookie under his flow's name: refused; his own cookie works.
	bobLink, _ := b.signInURL("docs", "bob")
	bobOpened := browserGet(a.signInStart, bobLink, linkFlow(t, bobLink))
	bobCallback := authorize(bobOpened)
	aliceLink, _ := a.signInURL("docs", "alice")
	aliceCookie := browserGet(a.signInStart, aliceLink, linkFlow(t, aliceLink)).Cookies()[0]
	if resp := browserGet(b.signInCallback, bobCallback, "", aliceCookie); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's callback with alice's cookie: %d, want 403", resp.StatusCode)
	}
	swapped := *aliceCookie
	swapped.Name = bobOpened.Cookies()[0].Name
	if resp := browserGet(b.signInCallback, bobCallback, "", &swapped); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob's callback with alice's flow under his cookie's name: %d, want 403", resp.StatusCode)
	}
	if resp := browserGet(b.signInCallback, bobCallback, "", bobOpened.Cookies()...); resp.StatusCode != http.StatusOK {
		t.Errorf("bob's callback with his cookie: %d", resp.StatusCode)
	}

	// Links expired, altered, or sealed under another key.
	f := a.signInState()
	expired := public + "/auth/connect/" + f.sealLink(signInLink{ID: "x", User: "carol", Server: "docs", Expires: time.Now().Add(-time.Second).Unix()})
	good, _ := a.signInURL("docs", "carol")
	g := linkFlow(t, good)
	altered := g[:len(g)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(g, "AA")]
	other := signInReplica(t, as.Resource(), public, "127.0.0.1:7333", nil, nil, store)
	foreign, _ := other.signInURL("docs", "carol")
	for what, l := range map[string]string{"expired": expired, "altered": public + "/auth/connect/" + altered, "foreign": foreign, "made up": public + "/auth/connect/ABC"} {
		if resp := browserGet(a.signInStart, l, linkFlow(t, l)); resp.StatusCode != http.StatusNotFound {
			t.Errorf("an %s link: %d, want 404", what, resp.StatusCode)
		}
	}
	if resp := browserGet(a.signInStart, good, g); resp.StatusCode != http.StatusFound {
		t.Errorf("carol's link: %d, want a redirect", resp.StatusCode)
	}

	// The bound on the links pending on a replica.
	for i := range maxSignIns {
		if l, _ := other.signInURL("docs", "user"+string(rune('a'+i%26))+strings.Repeat("x", i/26)); l == "" && i < maxSignIns-1 {
			t.Fatalf("link %d not made", i)
		}
	}
	if l, _ := other.signInURL("docs", "one-too-many"); l != "" {
		t.Errorf("a link past the bound of %d: %s", maxSignIns, l)
	}
}
