package oauth

import (
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/oauth/oauthtest"
)

// A 2025-03-26 server (no protected resource metadata) whose origin's
// authorization server metadata names a path issuer on that origin
// (conformance 0.1.16's auth/2025-03-26-oauth-metadata-backcompat): the
// login goes through, with that issuer recorded.
func TestLoginLegacyPathIssuer(t *testing.T) {
	t.Parallel()
	srv := oauthtest.NewWith(oauthtest.Options{NoResourceMetadata: true, IssuerPath: "/oauth"})
	defer srv.Close()
	store := NewFileStore(t.TempDir())
	c := New(Settings{Name: "legacy", URL: srv.Resource()}, Options{Store: store, Login: HeadlessLogin{}, Fresh: true})
	if err := callEcho(t, c, srv); err != nil {
		t.Fatalf("login with a 2025-03-26 server whose issuer is %s/oauth: %v", srv.URL, err)
	}
	if reg, auths, _ := srv.Counts(); reg != 1 || auths != 1 {
		t.Errorf("%d registrations, %d authorizations; want 1 and 1", reg, auths)
	}
	if e, err := store.Load(srv.Resource()); err != nil || e == nil || e.Issuer != srv.URL+"/oauth" {
		t.Errorf("stored entry %+v, %v: want issuer %s/oauth", e, err, srv.URL)
	}
}

// The 2025-03-26 allowance goes no further: an issuer on another origin
// is refused, and so is a path issuer where the server publishes
// protected resource metadata (RFC 8414's issuer equality holds).
func TestLoginIssuerMismatchRefused(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]oauthtest.Options{
		"2025-03-26, issuer on another origin": {NoResourceMetadata: true, IssuerPath: "/oauth", Issuer: "http://127.0.0.2:1/oauth"},
		"2025-03-26, issuer on another port":   {NoResourceMetadata: true, IssuerPath: "/oauth", Issuer: "http://127.0.0.1:1/oauth"},
		"resource metadata, path issuer":       {IssuerPath: "/oauth"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := oauthtest.NewWith(o)
			defer srv.Close()
			c := New(Settings{Name: "x", URL: srv.Resource()}, Options{Store: &MemoryStore{}, Login: HeadlessLogin{}, Fresh: true})
			err := callEcho(t, c, srv)
			if err == nil || !strings.Contains(err.Error(), "does not match issuer URL") {
				t.Errorf("login = %v, want the issuer mismatch refused", err)
			}
			if _, auths, _ := srv.Counts(); auths != 0 {
				t.Errorf("%d authorizations at an authorization server whose metadata was refused", auths)
			}
		})
	}
}
