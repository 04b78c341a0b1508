package oauth

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
)

// TestDPoPStoredToken: a DPoP-bound token stored by a login is sent by
// another client (another process) with the DPoP scheme and a proof made
// with the stored key (method, URL without query, the token's hash, a
// new jti); when the server asks for a nonce the request is sent once
// more with it, and later proofs carry it.
func TestDPoPStoredToken(t *testing.T) {
	t.Parallel()
	key, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	want, err := (&jose.JSONWebKey{Key: &key.priv.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		problems []string
		jtis     = map[string]bool{}
		calls    int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
		if r.Header.Get("Authorization") != "DPoP tok" {
			fail("Authorization %q", r.Header.Get("Authorization"))
		}
		p, err := jwt.ParseSigned(r.Header.Get("DPoP"), []jose.SignatureAlgorithm{jose.ES256})
		if err != nil || len(p.Headers) != 1 || p.Headers[0].JSONWebKey == nil || p.Headers[0].ExtraHeaders["typ"] != "dpop+jwt" {
			fail("proof header: %v", err)
			w.WriteHeader(400)
			return
		}
		jwk := p.Headers[0].JSONWebKey
		if got, _ := jwk.Thumbprint(crypto.SHA256); string(got) != string(want) || !jwk.IsPublic() {
			fail("proof key is not the stored one (or not public)")
		}
		var c struct {
			Jti   string `json:"jti"`
			Htm   string `json:"htm"`
			Htu   string `json:"htu"`
			Ath   string `json:"ath"`
			Nonce string `json:"nonce"`
			Iat   int64  `json:"iat"`
		}
		if err := p.Claims(jwk.Key, &c); err != nil {
			fail("proof signature: %v", err)
		}
		sum := sha256.Sum256([]byte("tok"))
		if c.Htm != r.Method || c.Htu != "http://"+r.Host+"/mcp" || c.Ath != base64.RawURLEncoding.EncodeToString(sum[:]) || jtis[c.Jti] || time.Since(time.Unix(c.Iat, 0)) > time.Minute {
			fail("proof claims %+v", c)
		}
		jtis[c.Jti] = true
		if c.Nonce != "n1" {
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce"`)
			w.Header().Set("DPoP-Nonce", "n1")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()

	store := &MemoryStore{}
	store.Save(&Entry{Resource: srv.URL + "/mcp", ClientID: "c", TokenURL: srv.URL + "/token", DPoPKey: key.marshal(),
		Token: (&oauth2.Token{AccessToken: "tok", TokenType: "DPoP", Expiry: time.Now().Add(time.Hour)})})
	hc := &http.Client{Transport: New(Settings{URL: srv.URL + "/mcp"}, Options{Store: store}).WrapTransport(nil)}
	for i := range 2 {
		resp, err := hc.Post(srv.URL+"/mcp?x=1", "application/json", strings.NewReader(`{}`))
		if err != nil {
			mu.Lock()
			t.Fatalf("request %d: %v (the server saw: %s)", i, err, strings.Join(problems, "; "))
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %s", i, resp.Status)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the server saw: %s", strings.Join(problems, "; "))
	}
	if calls != 3 {
		t.Errorf("%d requests reached the server, want 3 (one refused for the nonce, then two with it)", calls)
	}
}
