package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
)

const testAudience = "https://hub.example.com/mcp"

// testIssuer is an authorization server made in the test: OpenID
// discovery, a JWKS endpoint whose keys can rotate, and an introspection
// endpoint.
type testIssuer struct {
	srv        *httptest.Server
	mu         sync.Mutex
	keys       []jose.JSONWebKey // public keys served
	jwksHits   atomic.Int32
	introHits  atomic.Int32
	introspect map[string]map[string]any // token → answer
}

func newTestIssuer(t testing.TB) *testIssuer {
	t.Helper()
	ti := &testIssuer{introspect: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": ti.srv.URL, "jwks_uri": ti.srv.URL + "/jwks",
			"authorization_endpoint": ti.srv.URL + "/auth", "token_endpoint": ti.srv.URL + "/token",
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksHits.Add(1)
		ti.mu.Lock()
		defer ti.mu.Unlock()
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: ti.keys})
	})
	mux.HandleFunc("/introspect", func(w http.ResponseWriter, r *http.Request) {
		ti.introHits.Add(1)
		if id, secret, _ := r.BasicAuth(); id != "hub" || secret != "s3cret" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		ti.mu.Lock()
		ans, ok := ti.introspect[r.FormValue("token")]
		ti.mu.Unlock()
		if !ok {
			ans = map[string]any{"active": false}
		}
		json.NewEncoder(w).Encode(ans)
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

// signer makes a key pair, publishes its public half under kid, and
// returns a function that signs claims with it.
func (ti *testIssuer) signer(t testing.TB, kid string) func(claims any) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ti.mu.Lock()
	ti.keys = append(ti.keys, jose.JSONWebKey{Key: &priv.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
	ti.mu.Unlock()
	return signWith(t, jose.ES256, priv, kid)
}

func signWith(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string) func(claims any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	return func(c any) string {
		tok, err := jwt.Signed(s).Claims(c).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

func (ti *testIssuer) claims(now time.Time, extra map[string]any) map[string]any {
	c := map[string]any{"iss": ti.srv.URL, "aud": testAudience, "sub": "alice",
		"exp": now.Add(5 * time.Minute).Unix(), "iat": now.Unix(), "scope": "mcp:tools mcp:read"}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func newTestResource(t *testing.T, ti *testIssuer, now *time.Time, o ResourceOptions) *Resource {
	t.Helper()
	o.Issuer, o.Audience = ti.srv.URL, testAudience
	o.Now = func() time.Time { return *now }
	r, err := NewResource(o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestResourceJWT(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign := ti.signer(t, "k1")
	now := time.Now()
	r := newTestResource(t, ti, &now, ResourceOptions{})

	g, err := r.Verify(t.Context(), sign(ti.claims(now, nil)))
	if err != nil {
		t.Fatalf("Verify(good token) = %v", err)
	}
	if diff := cmp.Diff(&Grant{Subject: "alice", Scopes: []string{"mcp:tools", "mcp:read"}, Expiry: time.Unix(now.Add(5*time.Minute).Unix(), 0)}, g); diff != "" {
		t.Errorf("grant (-want +got):\n%s", diff)
	}
	g, err = r.Verify(t.Context(), sign(ti.claims(now, map[string]any{"scope": nil, "scp": []string{"a", "b"}})))
	if err != nil || !cmp.Equal(g.Scopes, []string{"a", "b"}) {
		t.Errorf("Verify(scp list) = %v, %v; want scopes [a b]", g, err)
	}
	if g.User() != "oauth:alice" {
		t.Errorf("User() = %q, want oauth:alice", g.User())
	}
	g, err = r.Verify(t.Context(), sign(ti.claims(now, map[string]any{"sub": nil, "client_id": "agent"})))
	if err != nil || g.Client != "agent" || g.User() != "oauth-client:agent" {
		t.Errorf("Verify(no sub, client_id agent) = %+v, %v; want the client named, user oauth-client:agent", g, err)
	}

	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	header := func(alg string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"` + alg + `","kid":"k1"}`))
	}
	payload, _ := json.Marshal(ti.claims(now, nil))
	noneToken := header("none") + "." + base64.RawURLEncoding.EncodeToString(payload) + "."

	for _, tc := range []struct {
		name, token, want string
	}{
		{"expired", sign(ti.claims(now, map[string]any{"exp": now.Add(-time.Minute).Unix()})), "token expired"},
		{"not yet valid", sign(ti.claims(now, map[string]any{"nbf": now.Add(time.Minute).Unix()})), "token not valid yet"},
		{"no exp", sign(ti.claims(now, map[string]any{"exp": nil})), "token has no exp"},
		{"wrong audience", sign(ti.claims(now, map[string]any{"aud": "https://other.example.com/mcp"})), "not this resource"},
		{"wrong issuer", sign(ti.claims(now, map[string]any{"iss": "https://evil.example.com"})), "issuer"},
		{"alg none", noneToken, `algorithm "none" is not accepted`},
		{"HS256 with the public key as secret", signWith(t, jose.HS256, pubDER, "k1")(ti.claims(now, nil)), `algorithm "HS256" is not accepted`},
		{"forged: another key, same kid", signWith(t, jose.ES256, otherEC, "k1")(ti.claims(now, nil)), "bad signature"},
		{"unknown kid", signWith(t, jose.RS256, rsaKey, "k9")(ti.claims(now, nil)), `no signing key "k9"`},
		{"opaque, no introspection", "abcdef", "no introspection endpoint"},
	} {
		_, err := r.Verify(t.Context(), tc.token)
		var te *TokenError
		if !errors.As(err, &te) || !errors.Is(err, ErrInvalidToken) || !strings.Contains(te.Reason, tc.want) {
			t.Errorf("%s: Verify = %v, want a TokenError containing %q", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), tc.token) {
			t.Errorf("%s: the error contains the token", tc.name)
		}
	}
	if _, err := r.Verify(t.Context(), sign(ti.claims(now, map[string]any{"exp": now.Add(-10 * time.Second).Unix()}))); err != nil {
		t.Errorf("Verify(expired 10s ago, within the leeway) = %v", err)
	}
}

func TestResourceKeyRotation(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign1 := ti.signer(t, "k1")
	now := time.Now()
	r := newTestResource(t, ti, &now, ResourceOptions{})
	if _, err := r.Verify(t.Context(), sign1(ti.claims(now, nil))); err != nil {
		t.Fatal(err)
	}
	if n := ti.jwksHits.Load(); n != 1 {
		t.Fatalf("key set fetched %d times, want 1", n)
	}

	// The issuer rotates in k2. Within keysMinRefresh, tokens with an
	// unknown kid do not fetch again.
	sign2 := ti.signer(t, "k2")
	for range 20 {
		if _, err := r.Verify(t.Context(), sign2(ti.claims(now, nil))); err == nil {
			t.Fatal("a token of a key fetched after the last refresh was accepted within keysMinRefresh")
		}
	}
	if n := ti.jwksHits.Load(); n != 1 {
		t.Fatalf("key set fetched %d times within keysMinRefresh, want 1", n)
	}
	now = now.Add(keysMinRefresh)
	if _, err := r.Verify(t.Context(), sign2(ti.claims(now, nil))); err != nil {
		t.Fatalf("Verify(token of the rotated-in key) = %v", err)
	}
	if n := ti.jwksHits.Load(); n != 2 {
		t.Fatalf("key set fetched %d times, want 2", n)
	}
	if _, err := r.Verify(t.Context(), sign1(ti.claims(now, nil))); err != nil {
		t.Fatalf("Verify(token of the older key, still published) = %v", err)
	}
}

func TestResourceKeysUnreachable(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	sign := ti.signer(t, "k1")
	now := time.Now()
	r := newTestResource(t, ti, &now, ResourceOptions{JWKSURL: ti.srv.URL + "/nothing-here"})
	_, err := r.Verify(t.Context(), sign(ti.claims(now, nil)))
	if err == nil || !strings.Contains(err.Error(), "signing keys cannot be fetched") || !strings.Contains(err.Error(), "404") {
		t.Fatalf("Verify with an unreachable key set = %v, want it to say the keys cannot be fetched (404)", err)
	}
}

func TestResourceIntrospection(t *testing.T) {
	t.Parallel()
	ti := newTestIssuer(t)
	now := time.Now()
	ti.introspect["opaque-good"] = map[string]any{"active": true, "scope": "mcp:tools", "sub": "bob",
		"exp": now.Add(time.Hour).Unix(), "aud": testAudience, "iss": ti.srv.URL}
	ti.introspect["opaque-other"] = map[string]any{"active": true, "aud": "https://other.example.com/mcp"}
	ti.introspect["opaque-anyone"] = map[string]any{"active": true, "scope": "mcp:tools"}
	o := ResourceOptions{IntrospectionURL: ti.srv.URL + "/introspect", IntrospectionClientID: "hub", IntrospectionClientSecret: "s3cret"}
	r := newTestResource(t, ti, &now, o)

	for range 3 {
		g, err := r.Verify(t.Context(), "opaque-good")
		if err != nil || g.Subject != "bob" || !g.Has("mcp:tools") || g.User() != "oauth:bob" {
			t.Fatalf("Verify(opaque-good) = %+v, %v", g, err)
		}
	}
	if n := ti.introHits.Load(); n != 1 {
		t.Errorf("introspected %d times for 3 uses within the cache time, want 1", n)
	}
	now = now.Add(introspectionTTL)
	if _, err := r.Verify(t.Context(), "opaque-good"); err != nil {
		t.Fatal(err)
	}
	if n := ti.introHits.Load(); n != 2 {
		t.Errorf("introspected %d times after the cache time, want 2", n)
	}
	for token, want := range map[string]string{"opaque-other": "not this resource", "opaque-unknown": "not active", "opaque-anyone": "names no audience"} {
		if _, err := r.Verify(t.Context(), token); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Verify(%s) = %v, want %q", token, err, want)
		}
	}

	bad := o
	bad.IntrospectionClientSecret = "wrong"
	rb := newTestResource(t, ti, &now, bad)
	if _, err := rb.Verify(t.Context(), "opaque-good"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("Verify with a wrong introspection secret = %v, want it to name the 401", err)
	}
}

func TestResourceMetadata(t *testing.T) {
	t.Parallel()
	r, err := NewResource(ResourceOptions{Issuer: "https://idp.example.com", Audience: testAudience,
		Required: []string{"mcp"}, ScopesSupported: []string{"mcp", "mcp:admin"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.MetadataURL(), "https://hub.example.com/.well-known/oauth-protected-resource/mcp"; got != want {
		t.Errorf("MetadataURL() = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{MetadataPath, MetadataPath + "/mcp"}, r.MetadataPaths()); diff != "" {
		t.Errorf("MetadataPaths() (-want +got):\n%s", diff)
	}
	m := r.Metadata()
	if m.Resource != testAudience || !cmp.Equal(m.AuthorizationServers, []string{"https://idp.example.com"}) || !cmp.Equal(m.ScopesSupported, []string{"mcp", "mcp:admin"}) {
		t.Errorf("Metadata() = %+v", m)
	}
	if _, err := NewResource(ResourceOptions{Issuer: "https://idp.example.com", Audience: testAudience, Algorithms: []string{"HS256"}}); err == nil {
		t.Error("NewResource accepted HS256")
	}
}

// BenchmarkResourceVerifyJWT is the cost the HTTP front adds to a request
// with an ES256 access token, keys cached.
func BenchmarkResourceVerifyJWT(b *testing.B) {
	ti := newTestIssuer(b)
	sign := ti.signer(b, "k1")
	now := time.Now()
	r, err := NewResource(ResourceOptions{Issuer: ti.srv.URL, Audience: testAudience, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	tok := sign(ti.claims(now, nil))
	if _, err := r.Verify(b.Context(), tok); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Verify(b.Context(), tok); err != nil {
			b.Fatal(err)
		}
	}
}
