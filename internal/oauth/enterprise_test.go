package oauth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestEnterprise: the ID token from its file is exchanged at the
// identity provider for an ID-JAG for the server's authorization server
// and the server (RFC 8693), and the ID-JAG for an access token there
// (RFC 7523), with junction's client at each.
func TestEnterprise(t *testing.T) {
	t.Parallel()
	var (
		mu       sync.Mutex
		problems []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	var idp, as, mcp *httptest.Server
	idp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/openid-configuration" {
			json.NewEncoder(w).Encode(map[string]any{"issuer": idp.URL, "token_endpoint": idp.URL + "/token"})
			return
		}
		r.ParseForm()
		f := r.PostForm
		if id, _, _ := r.BasicAuth(); (id != "junction-at-idp" && f.Get("client_id") != "junction-at-idp") || f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" ||
			f.Get("subject_token") != "a.b.c" || f.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:id_token" ||
			f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" || f.Get("audience") != as.URL || f.Get("resource") != mcp.URL+"/mcp" {
			fail("token exchange: %v", f)
		}
		fmt.Fprint(w, `{"access_token":"the.id.jag","issued_token_type":"urn:ietf:params:oauth:token-type:id-jag","token_type":"N_A"}`)
	}))
	defer idp.Close()
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/.well-known/oauth-authorization-server" {
			json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token", "authorization_endpoint": as.URL + "/authorize",
				"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
			return
		}
		r.ParseForm()
		if id, secret, _ := r.BasicAuth(); id != "junction" || secret != "s3cret" || r.PostForm.Get("grant_type") != jwtBearerGrant || r.PostForm.Get("assertion") != "the.id.jag" {
			fail("JWT bearer grant: %v", r.PostForm)
		}
		fmt.Fprint(w, `{"access_token":"at-1","token_type":"Bearer","expires_in":3600}`)
	}))
	defer as.Close()
	mcp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": mcp.URL + "/mcp", "authorization_servers": []string{as.URL}})
			return
		}
		if r.Header.Get("Authorization") != "Bearer at-1" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+mcp.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer mcp.Close()

	idToken := filepath.Join(t.TempDir(), "id-token")
	os.WriteFile(idToken, []byte("a.b.c\n"), 0o600)
	s := Settings{URL: mcp.URL + "/mcp", Mode: ModeEnterprise, ClientID: "junction", ClientSecret: "s3cret",
		IdPIssuer: idp.URL, IdPClientID: "junction-at-idp", IDTokenFile: idToken}
	hc := &http.Client{Transport: New(s, Options{}).WrapTransport(nil)}
	resp, err := hc.Get(mcp.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != 200 || len(problems) > 0 {
		t.Errorf("GET with enterprise-managed authorization: %s; the servers saw: %s", resp.Status, strings.Join(problems, "; "))
	}
	if _, err := newEnterprise(Settings{ClientID: "junction", IdPIssuer: idp.URL, IdPClientID: "x"}, nil); err == nil || !strings.Contains(err.Error(), "oauth_id_token_file") {
		t.Errorf("newEnterprise without an ID token file: %v", err)
	}
}
