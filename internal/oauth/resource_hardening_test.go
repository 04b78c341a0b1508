package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/time/rate"
)

// clock is a settable clock safe to read from other goroutines.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func (c *clock) claims(ti *testIssuer, extra map[string]any) map[string]any {
	return ti.claims(c.now(), extra)
}

// blockingTransport passes the first request through and holds every
// later one until release is closed (or its context ends), saying on
// entered when one starts; inFlight counts the held ones.
type blockingTransport struct {
	calls    atomic.Int32
	inFlight atomic.Int32
	entered  chan struct{}
	release  chan struct{}
}

func (b *blockingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.calls.Add(1) > 1 {
		b.inFlight.Add(1)
		defer b.inFlight.Add(-1)
		b.entered <- struct{}{}
		select {
		case <-b.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A token naming an unknown key id makes the hub fetch the key set; while
// that fetch hangs, tokens signed with a known key are still checked at
// once, other unknown-kid tokens wait for the same fetch rather than
// start their own, and keys past keysMaxAge keep serving while they are
// fetched again.
func TestResourceKeyFetchDoesNotStallKnownKeys(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign := ti.signer(t, "k1")
	clk := newClock()
	bt := &blockingTransport{entered: make(chan struct{}, 4), release: make(chan struct{})}
	r, err := NewResource(ResourceOptions{Issuer: ti.srv.URL, Audience: testAudience, JWKSURL: ti.srv.URL + "/jwks",
		HTTPClient: &http.Client{Transport: bt}, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	valid := func() {
		t.Helper()
		if _, err := r.Verify(t.Context(), sign(clk.claims(ti, nil))); err != nil {
			t.Fatalf("Verify(valid token) = %v", err)
		}
	}
	valid() // the first fetch, passed through

	clk.add(keysMinRefresh) // an unknown kid may fetch again
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	unknown := signWith(t, jose.ES256, other, "made-up")(clk.claims(ti, nil))
	errs := make(chan error, 2)
	go func() { _, err := r.Verify(t.Context(), unknown); errs <- err }()
	<-bt.entered // the fetch for the unknown kid hangs

	valid()
	if bt.inFlight.Load() != 1 {
		t.Fatal("a token of a known key was checked only after the key set fetch ended: it waited for it")
	}
	go func() { _, err := r.Verify(t.Context(), unknown); errs <- err }()

	// Keys past their age: served at once while a fetch runs.
	clk.add(keysMaxAge)
	valid()

	close(bt.release)
	for range 2 {
		if err := <-errs; err == nil || !strings.Contains(err.Error(), `no signing key "made-up"`) {
			t.Errorf("Verify(unknown kid) = %v, want no signing key", err)
		}
	}
	if n := bt.calls.Load(); n > 3 {
		t.Errorf("%d key set fetches, want at most 3 (first, one for the unknown kids, one for age)", n)
	}
}

// Unknown kids fetch the key set at most once per keysMinRefresh, however
// many arrive.
func TestResourceUnknownKidRateLimited(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign := ti.signer(t, "k1")
	clk := newClock()
	r, err := NewResource(ResourceOptions{Issuer: ti.srv.URL, Audience: testAudience, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Verify(t.Context(), sign(clk.claims(ti, nil))); err != nil {
		t.Fatal(err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for i := range 3 {
		clk.add(keysMinRefresh)
		var wg sync.WaitGroup
		for j := range 20 {
			wg.Go(func() {
				tok := signWith(t, jose.ES256, other, fmt.Sprintf("kid-%d-%d", i, j))(clk.claims(ti, nil))
				if _, err := r.Verify(t.Context(), tok); err == nil {
					t.Error("a token of an unknown key was accepted")
				}
			})
		}
		wg.Wait()
	}
	if n := ti.jwksHits.Load(); n != 4 {
		t.Errorf("key set fetched %d times for 3 floods of unknown kids keysMinRefresh apart, want 4", n)
	}
}

// Tokens that name neither a subject nor a client are refused: they would
// all share one session owner.
func TestResourceTokenWithoutOwner(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign := ti.signer(t, "k1")
	now := time.Now()
	ti.introspect["opaque-nobody"] = map[string]any{"active": true, "aud": testAudience, "exp": now.Add(time.Hour).Unix()}
	r := newTestResource(t, ti, &now, ResourceOptions{IntrospectionURL: ti.srv.URL + "/introspect", IntrospectionClientID: "hub", IntrospectionClientSecret: "s3cret"})
	for name, token := range map[string]string{
		"JWT":    sign(ti.claims(now, map[string]any{"sub": nil})),
		"opaque": "opaque-nobody",
	} {
		g, err := r.Verify(t.Context(), token)
		var te *TokenError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, "names no subject (sub) or client (client_id)") {
			t.Errorf("%s: Verify(no sub, no client_id) = %+v, %v; want it refused as naming no subject or client", name, g, err)
		}
	}
}

// The typ header: access token types and plain JWT pass; the types of
// other kinds of token do not.
func TestResourceTokenType(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ti.mu.Lock()
	ti.keys = append(ti.keys, jose.JSONWebKey{Key: &priv.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"})
	ti.mu.Unlock()
	now := time.Now()
	r := newTestResource(t, ti, &now, ResourceOptions{})
	sign := func(typ string) string {
		o := (&jose.SignerOptions{}).WithHeader("kid", "k1")
		if typ != "" {
			o = o.WithType(jose.ContentType(typ))
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, o)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := jwt.Signed(s).Claims(ti.claims(now, nil)).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, typ := range []string{"", "at+jwt", "application/AT+JWT", "JWT", "jwt"} {
		if _, err := r.Verify(t.Context(), sign(typ)); err != nil {
			t.Errorf("Verify(typ %q) = %v, want it accepted", typ, err)
		}
	}
	for _, typ := range []string{"id_token+jwt", "dpop+jwt", "logout+jwt", "secevent+jwt", "token-introspection+jwt"} {
		_, err := r.Verify(t.Context(), sign(typ))
		var te *TokenError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, "token type (typ)") {
			t.Errorf("Verify(typ %q) = %v, want it refused for its type", typ, err)
		}
	}
}

// Refusals quote what the token says only cut short.
func TestResourceRefusalsAreShort(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign := ti.signer(t, "k1")
	now := time.Now()
	r := newTestResource(t, ti, &now, ResourceOptions{})
	long := strings.Repeat("x", 50_000)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	for name, token := range map[string]string{
		"kid":      signWith(t, jose.ES256, other, long)(ti.claims(now, nil)),
		"audience": sign(ti.claims(now, map[string]any{"aud": []string{long, long, long, long, long}})),
		"issuer":   sign(ti.claims(now, map[string]any{"iss": long})),
	} {
		_, err := r.Verify(t.Context(), token)
		if err == nil || len(err.Error()) > 400 {
			t.Errorf("%s: Verify = %d bytes of error, want a refusal under 400", name, len(fmt.Sprint(err)))
		}
	}
}

func introspectingResource(t *testing.T, ti *testIssuer, now func() time.Time) *Resource {
	t.Helper()
	r, err := NewResource(ResourceOptions{Issuer: ti.srv.URL, Audience: testAudience, Now: now,
		IntrospectionURL: ti.srv.URL + "/introspect", IntrospectionClientID: "hub", IntrospectionClientSecret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A flood of made-up opaque tokens costs at most introspectionBurst
// introspection requests, then introspectionRate a second; the others
// are answered ErrBusy at once.
func TestResourceIntrospectionFlood(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	clk := newClock()
	r := introspectingResource(t, ti, clk.now)
	busy := 0
	for i := range 500 {
		_, err := r.Verify(t.Context(), fmt.Sprintf("made-up-%d", i))
		switch {
		case errors.Is(err, ErrBusy):
			busy++
		case err == nil || !strings.Contains(err.Error(), "not active"):
			t.Fatalf("Verify(made-up token) = %v", err)
		}
	}
	if n := ti.introHits.Load(); n != introspectionBurst || busy != 500-introspectionBurst {
		t.Fatalf("500 made-up tokens: %d introspection requests and %d busy answers, want %d and %d", n, busy, introspectionBurst, 500-introspectionBurst)
	}
	clk.add(time.Second)
	for i := range 100 {
		r.Verify(t.Context(), fmt.Sprintf("later-%d", i))
	}
	if n := ti.introHits.Load(); n != introspectionBurst+introspectionRate {
		t.Errorf("a second later: %d introspection requests in all, want %d", n, introspectionBurst+introspectionRate)
	}
}

// At most introspectionConcurrency introspection requests run at once.
func TestResourceIntrospectionConcurrency(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	bt := &blockingTransport{entered: make(chan struct{}, introspectionConcurrency), release: make(chan struct{})}
	bt.calls.Store(1) // hold every request
	now := time.Now()
	r, err := NewResource(ResourceOptions{Issuer: ti.srv.URL, Audience: testAudience, Now: func() time.Time { return now },
		HTTPClient:       &http.Client{Transport: bt},
		IntrospectionURL: ti.srv.URL + "/introspect", IntrospectionClientID: "hub", IntrospectionClientSecret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range introspectionConcurrency {
		wg.Go(func() { r.Verify(t.Context(), fmt.Sprintf("slow-%d", i)) })
	}
	for range introspectionConcurrency {
		<-bt.entered
	}
	if _, err := r.Verify(t.Context(), "one-more"); !errors.Is(err, ErrBusy) {
		t.Errorf("Verify with %d introspections running = %v, want ErrBusy", introspectionConcurrency, err)
	}
	close(bt.release)
	wg.Wait()
}

// Answers leave the caches one by one, least recently used first, and
// refusals never push out accepted tokens.
func TestResourceIntrospectionCache(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	clk := newClock()
	ti.introspect["good"] = map[string]any{"active": true, "sub": "bob", "aud": testAudience, "exp": clk.now().Add(time.Hour).Unix()}
	r := introspectingResource(t, ti, clk.now)
	r.intro.limit = rate.NewLimiter(rate.Inf, 0)
	if _, err := r.Verify(t.Context(), "good"); err != nil {
		t.Fatal(err)
	}
	for i := range introspectionCacheSize + introspectionNegativeCacheSize + 10 {
		if _, err := r.Verify(t.Context(), fmt.Sprintf("bad-%d", i)); err == nil {
			t.Fatal("a made-up token was accepted")
		}
	}
	before := ti.introHits.Load()
	if _, err := r.Verify(t.Context(), "good"); err != nil {
		t.Fatal(err)
	}
	if ti.introHits.Load() != before {
		t.Error("a flood of bad tokens pushed the good one out of the cache")
	}
	if n := r.intro.bad.len(); n != introspectionNegativeCacheSize {
		t.Errorf("%d refusals cached, want the cap, %d", n, introspectionNegativeCacheSize)
	}

	// A full cache of accepted answers drops the least recently used.
	c := newLRU(2)
	c.put([32]byte{1}, introspected{until: clk.now().Add(time.Minute)})
	c.put([32]byte{2}, introspected{until: clk.now().Add(time.Minute)})
	c.get([32]byte{1}, clk.now())
	c.put([32]byte{3}, introspected{until: clk.now().Add(time.Minute)})
	for key, want := range map[byte]bool{1: true, 2: false, 3: true} {
		if _, ok := c.get([32]byte{key}, clk.now()); ok != want {
			t.Errorf("entry %d cached: %v, want %v", key, ok, want)
		}
	}
}
