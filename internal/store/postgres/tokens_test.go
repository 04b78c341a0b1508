//go:build unix

package postgres_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/junction-mcp/junction/internal/oauth"
	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
	"github.com/junction-mcp/junction/internal/pgtest"
)

// TestTokenStoreShared: two replicas (two handles on one database) see
// each other's entries, sealed under one token_key; each user's view
// holds their own only, apart from the hub's; a delete on one replica is
// seen by the other.
func TestTokenStoreShared(t *testing.T) {
	srv := pgtest.Start(t)
	a, err := open(t, srv.URL).Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(t, srv.URL).Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const res = "https://up.example/mcp"
	tok := func(s string) *oauth.Entry { return &oauth.Entry{Resource: res, Token: &oauth2.Token{AccessToken: s}} }
	if err := a.Save(tok("hub")); err != nil {
		t.Fatal(err)
	}
	if err := oauth.UserStore(a, "alice").Save(tok("a")); err != nil {
		t.Fatal(err)
	}
	if err := oauth.UserStore(b, "bob").Save(tok("b")); err != nil {
		t.Fatal(err)
	}
	for who, want := range map[oauth.Store]string{b: "hub", oauth.UserStore(b, "alice"): "a", oauth.UserStore(a, "bob"): "b"} {
		e, err := who.Load(res)
		if err != nil || e == nil || e.Token.AccessToken != want {
			t.Errorf("Load = %+v, %v; want token %s", e, err, want)
		}
	}
	if e, _ := oauth.UserStore(a, "carol").Load(res); e != nil {
		t.Errorf("carol sees %+v", e)
	}
	if all, err := b.List(); err != nil || len(all) != 3 {
		t.Errorf("List: %d entries, %v; want 3", len(all), err)
	}
	if ok, err := oauth.UserStore(b, "alice").Delete(res); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	if e, _ := oauth.UserStore(a, "alice").Load(res); e != nil {
		t.Errorf("alice's entry is still there for the other replica")
	}
	if e, _ := oauth.UserStore(a, "bob").Load(res); e == nil {
		t.Errorf("bob's entry went with alice's")
	}
}

// TestTokenRefreshOnce: a user's token, expired, is used by eight
// replicas at once, each with its own OAuth client over its own handle
// on the store: the authorization server sees one refresh, and every
// replica's request goes through with the new token.
func TestTokenRefreshOnce(t *testing.T) {
	as := oauthtest.New()
	t.Cleanup(as.Close)
	db := pgtest.Start(t)
	settings := oauth.Settings{Name: "docs", URL: as.Resource()}
	initialize := func(c *oauth.Client) (int, error) {
		hc := &http.Client{Transport: c.WrapTransport(nil), Timeout: 30 * time.Second}
		defer hc.CloseIdleConnections()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, as.Resource(), strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	// Alice logs in once (the test server approves at once).
	first, err := open(t, db.URL).Tokens(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	alice := oauth.UserStore(first, "alice")
	if code, err := initialize(oauth.New(settings, oauth.Options{Store: alice, Login: oauth.HeadlessLogin{}, User: "alice"})); err != nil || code != http.StatusOK {
		t.Fatalf("login: %d %v", code, err)
	}
	e, err := alice.Load(settings.URL)
	if err != nil || e == nil || e.Token.RefreshToken == "" {
		t.Fatalf("alice's entry after the login: %+v %v", e, err)
	}
	// Her token expires.
	e.Token.Expiry = time.Now().Add(-time.Minute)
	if err := alice.Save(e); err != nil {
		t.Fatal(err)
	}
	before := as.RefreshTries()

	// The replicas are all up before any of them calls.
	clients := make([]*oauth.Client, 8)
	for i := range clients {
		st, err := open(t, db.URL).Tokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = oauth.New(settings, oauth.Options{Store: oauth.UserStore(st, "alice"), User: "alice"})
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, len(clients))
	errs := make([]error, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			<-start
			codes[i], errs[i] = initialize(c)
		})
	}
	close(start)
	wg.Wait()
	for i := range codes {
		if errs[i] != nil || codes[i] != http.StatusOK {
			t.Errorf("replica %d: %d %v", i, codes[i], errs[i])
		}
	}
	if after := as.RefreshTries(); after-before != 1 {
		t.Errorf("%d refreshes asked for one expired token used by %d replicas at once, want 1", after-before, len(codes))
	}
	if e2, _ := alice.Load(settings.URL); e2 == nil || e2.Token.AccessToken == e.Token.AccessToken || time.Until(e2.Token.Expiry) < time.Minute {
		t.Errorf("the stored token after the refresh: %+v", e2)
	}
}
