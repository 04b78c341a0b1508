package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/oauth"
)

// TestFrontAuth: which requests an OAuth front lets through, to which
// profile, and what it answers the others; API tokens keep working.
func TestFrontAuth(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k", Algorithm: "ES256", Use: "sig"}}})
	}))
	defer jwks.Close()
	const issuer, audience = "https://idp.example.com", "https://hub.example.com/mcp"
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "k"))
	if err != nil {
		t.Fatal(err)
	}
	token := func(scope string) string {
		s, err := jwt.Signed(signer).Claims(map[string]any{"iss": issuer, "aud": audience, "sub": "u",
			"exp": time.Now().Add(time.Minute).Unix(), "scope": scope}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	r, err := oauth.NewResource(oauth.ResourceOptions{Issuer: issuer, Audience: audience, JWKSURL: jwks.URL, Required: []string{"mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &FrontAuth{Resource: r, Profiles: map[string]string{"mcp:a": "a", "mcp:b": "b", "mcp:admin": config.AllProfiles}}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok " + r.Header.Get(ProfileHeader)))
	})
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot) // the API token check: tells the test it was asked
	})
	h := f.front(static, next, []string{"api-token"}, slog.New(slog.DiscardHandler))

	const meta = `resource_metadata="https://hub.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name, path, bearer, apiKey, profile string
		status                              int
		body, challenge                     string
	}{
		{name: "no token", path: "/mcp", status: 401, challenge: `Bearer ` + meta + `, scope="mcp"`},
		{name: "no token, status page", path: "/status", status: http.StatusTeapot},
		{name: "API token as bearer", path: "/mcp", bearer: "api-token", status: http.StatusTeapot},
		{name: "X-API-Key", path: "/mcp", apiKey: "anything", status: http.StatusTeapot},
		{name: "garbage", path: "/mcp", bearer: "not.a.jwt", status: 401, challenge: `error="invalid_token"`},
		{name: "required scope missing", path: "/mcp", bearer: token("mcp:a"), status: 403, challenge: `error="insufficient_scope", scope="mcp"`},
		{name: "one profile: /mcp serves it", path: "/mcp", bearer: token("mcp mcp:a"), status: 200, body: "ok a"},
		{name: "one profile by path", path: "/mcp/p/a", bearer: token("mcp mcp:a"), status: 200, body: "ok "},
		{name: "another profile by path", path: "/mcp/p/b", bearer: token("mcp mcp:a"), status: 403, challenge: `scope="mcp mcp:admin mcp:b"`},
		{name: "another profile by header", path: "/mcp", profile: "b", bearer: token("mcp mcp:a"), status: 403, challenge: `error="insufficient_scope"`},
		{name: "two profiles: choose", path: "/mcp", bearer: token("mcp mcp:a mcp:b"), status: 403, body: "choose one"},
		{name: "two profiles: chosen", path: "/mcp", profile: "b", bearer: token("mcp mcp:a mcp:b"), status: 200, body: "ok b"},
		{name: "no profile", path: "/mcp", bearer: token("mcp"), status: 403, body: "open no profile"},
		{name: "profile token, whole-hub page", path: "/status", bearer: token("mcp mcp:a"), status: 403, challenge: `scope="mcp mcp:admin"`},
		{name: "profile token, plain endpoint", path: "/mcp/messages", bearer: token("mcp mcp:a"), status: 403},
		{name: "admin", path: "/status", bearer: token("mcp mcp:admin"), status: 200},
		{name: "admin on /mcp", path: "/mcp", bearer: token("mcp mcp:admin"), status: 200, body: "ok "},
	} {
		req := httptest.NewRequest(http.MethodPost, tc.path, nil)
		if tc.bearer != "" {
			req.Header.Set("Authorization", "Bearer "+tc.bearer)
		}
		if tc.apiKey != "" {
			req.Header.Set("X-API-Key", tc.apiKey)
		}
		if tc.profile != "" {
			req.Header.Set(ProfileHeader, tc.profile)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Result()
		if got.StatusCode != tc.status || !strings.Contains(rec.Body.String(), tc.body) || !strings.Contains(got.Header.Get("WWW-Authenticate"), tc.challenge) {
			t.Errorf("%s: %d %q, WWW-Authenticate %q; want %d, body with %q, challenge with %q",
				tc.name, got.StatusCode, rec.Body.String(), got.Header.Get("WWW-Authenticate"), tc.status, tc.body, tc.challenge)
		}
		if got.StatusCode == 401 || got.StatusCode == 403 {
			if !strings.Contains(got.Header.Get("WWW-Authenticate"), meta) {
				t.Errorf("%s: WWW-Authenticate %q does not name the metadata", tc.name, got.Header.Get("WWW-Authenticate"))
			}
		}
	}
}
