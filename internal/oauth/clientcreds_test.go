package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ccServers are an MCP endpoint that wants a token and the authorization
// server that issues it with the client_credentials grant, checking the
// client's secret or its signed assertion, and the resource indicator.
type ccServers struct {
	as, mcp *httptest.Server
	pub     *ecdsa.PublicKey // the client's key, for private_key_jwt

	mu        sync.Mutex
	assertion string // the workload JWT a jwt-bearer grant must present
	problems  []string
	jtis      map[string]bool
	issued    int
}

func (s *ccServers) fail(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

func newCCServers(t *testing.T, authMethods []string, pub *ecdsa.PublicKey) *ccServers {
	t.Helper()
	s := &ccServers{pub: pub, jtis: map[string]bool{}}
	as := http.NewServeMux()
	as.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"issuer": s.as.URL, "token_endpoint": s.as.URL + "/token",
			"authorization_endpoint": s.as.URL + "/authorize", "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported": []string{"client_credentials"}, "token_endpoint_auth_methods_supported": authMethods})
	})
	as.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		assertion := s.assertion
		s.mu.Unlock()
		switch got := r.PostForm.Get("grant_type"); {
		case assertion != "":
			if got != jwtBearerGrant || r.PostForm.Get("assertion") != assertion {
				s.fail("grant_type %q with assertion %q, want the jwt-bearer grant with %q", got, r.PostForm.Get("assertion"), assertion)
			}
		case got != "client_credentials":
			s.fail("grant_type %q", got)
		}
		if got, want := r.PostForm.Get("resource"), s.mcp.URL+"/mcp"; got != want {
			s.fail("resource %q, want %q", got, want)
		}
		if assertion != "" {
			// the grant is the client's proof
		} else if s.pub != nil {
			s.checkAssertion(r)
		} else if id, secret, ok := r.BasicAuth(); !(ok && id == "bot" && secret == "s3cret") && !(r.PostForm.Get("client_id") == "bot" && r.PostForm.Get("client_secret") == "s3cret") {
			s.fail("no client secret")
		}
		s.mu.Lock()
		s.issued++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"at-%d","token_type":"Bearer","expires_in":3600,"scope":%q}`, s.issued, r.PostForm.Get("scope"))
	})
	s.as = httptest.NewServer(as)
	t.Cleanup(s.as.Close)
	mcp := http.NewServeMux()
	mcp.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"resource": s.mcp.URL + "/mcp", "authorization_servers": []string{s.as.URL}, "scopes_supported": []string{"tools"}})
	})
	mcp.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer at-") {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+s.mcp.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	})
	s.mcp = httptest.NewServer(mcp)
	t.Cleanup(s.mcp.Close)
	return s
}

func (s *ccServers) checkAssertion(r *http.Request) {
	if got := r.PostForm.Get("client_assertion_type"); got != assertionType {
		s.fail("client_assertion_type %q", got)
		return
	}
	if r.PostForm.Get("client_secret") != "" || r.Header.Get("Authorization") != "" {
		s.fail("a secret was sent with the assertion")
	}
	tok, err := jwt.ParseSigned(r.PostForm.Get("client_assertion"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		s.fail("assertion: %v", err)
		return
	}
	var c jwt.Claims
	if err := tok.Claims(s.pub, &c); err != nil {
		s.fail("assertion signature: %v", err)
		return
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: "bot", Subject: "bot", AnyAudience: jwt.Audience{s.as.URL}, Time: time.Now()}, 0); err != nil || c.Expiry == nil || c.ID == "" {
		s.fail("assertion claims %+v: %v", c, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jtis[c.ID] {
		s.problems = append(s.problems, "assertion jti reused")
	}
	s.jtis[c.ID] = true
}

func (s *ccServers) get(t *testing.T, c *Client) {
	t.Helper()
	hc := &http.Client{Transport: c.WrapTransport(nil)}
	resp, err := hc.Get(s.mcp.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET with client_credentials: %s", resp.Status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) > 0 {
		t.Errorf("the authorization server saw: %s", strings.Join(s.problems, "; "))
	}
}

func TestClientCredentialsSecret(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"client_secret_post", "client_secret_basic"} {
		s := newCCServers(t, []string{method}, nil)
		c := New(Settings{URL: s.mcp.URL + "/mcp", Mode: ModeClientCredentials, ClientID: "bot", ClientSecret: "s3cret"}, Options{})
		s.get(t, c)
	}
}

func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newCCServers(t, []string{"private_key_jwt"}, &key.PublicKey)
	c := New(Settings{URL: s.mcp.URL + "/mcp", Mode: ModeClientCredentials, ClientID: "bot", ClientKeyFile: path}, Options{})
	s.get(t, c)
	// A second client (a new process): a new assertion, not the first one again.
	s.get(t, New(c.Settings(), Options{}))
	if s.issued != 2 {
		t.Errorf("%d tokens issued, want 2", s.issued)
	}

	for name, content := range map[string]string{"not PEM": "hello", "a certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"} {
		bad := filepath.Join(t.TempDir(), "bad.pem")
		os.WriteFile(bad, []byte(content), 0o600)
		if _, _, err := ReadClientKey(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ReadClientKey(%s) = %v, want an error naming the file", name, err)
		}
	}
	if _, err := newClientCredentials(Settings{ClientID: "bot", ClientSecret: "x", ClientKeyFile: path}, nil); err == nil {
		t.Error("a secret and a key were both accepted")
	}
}

// TestJWTBearerGrant: the workload's JWT is the grant (RFC 7523), read
// from its file at each token request (platforms rotate it).
func TestJWTBearerGrant(t *testing.T) {
	t.Parallel()
	s := newCCServers(t, []string{"none"}, nil)
	file := filepath.Join(t.TempDir(), "workload.jwt")
	for _, jwt := range []string{"aaa.bbb.ccc", "ddd.eee.fff"} {
		if err := os.WriteFile(file, []byte(jwt+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		s.assertion = jwt
		s.mu.Unlock()
		s.get(t, New(Settings{URL: s.mcp.URL + "/mcp", Mode: ModeJWTBearer, ClientID: "workload", AssertionFile: file}, Options{}))
	}
	os.WriteFile(file, []byte("not a jwt"), 0o600)
	hc := &http.Client{Transport: New(Settings{URL: s.mcp.URL + "/mcp", Mode: ModeJWTBearer, AssertionFile: file}, Options{}).WrapTransport(nil)}
	if _, err := hc.Get(s.mcp.URL + "/mcp"); err == nil || !strings.Contains(err.Error(), "not a JWT") {
		t.Errorf("GET with a file that holds no JWT: %v, want an error saying so", err)
	}
}
