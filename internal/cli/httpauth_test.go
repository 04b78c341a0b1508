package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestTokenOnlyGuard: a junction hub's 401 whose Bearer challenge names
// no resource metadata, from a hub with no OAuth metadata at the
// well-known URLs, asks for -token; the same 401 from a server that publishes metadata
// (at the path-suffixed URL, or only the 2025-03-26 authorization server
// metadata) still goes to OAuth, which without a terminal says to log in;
// and so does a challenge that names its metadata.
func TestTokenOnlyGuard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		challenge string
		metadata  string // a well-known path served with a JSON object
		want      string
		notWant   string
	}{
		{name: "static token", challenge: `Bearer realm="junction"`, want: "the server wants a token", notWant: "auth login"},
		{name: "protected resource metadata", challenge: `Bearer realm="junction"`, metadata: "/.well-known/oauth-protected-resource/mcp", want: "needs an OAuth login"},
		{name: "authorization server metadata", challenge: `Bearer realm="junction"`, metadata: "/.well-known/oauth-authorization-server", want: "needs an OAuth login"},
		// Another server without metadata may be a 2025-03-26 one whose
		// OAuth endpoints are at their default paths: it goes to OAuth.
		{name: "another server without metadata", challenge: `Bearer realm="other"`, want: "needs an OAuth login"},
		{name: "challenge names metadata", challenge: `Bearer resource_metadata="http://127.0.0.1:1/x"`, want: "needs an OAuth login"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.metadata != "" && r.URL.Path == tc.metadata {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprintf(w, `{"resource": "http://%s/mcp", "issuer": "http://%s", "authorization_servers": ["http://%s"]}`, r.Host, r.Host, r.Host)
					return
				}
				w.Header().Set("WWW-Authenticate", tc.challenge)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprintln(w, `{"error": "authentication required"}`)
			}))
			t.Cleanup(srv.Close)
			env := map[string]string{"JUNCTION_OAUTH_DIR": t.TempDir(), "JUNCTION_OAUTH_KEYCHAIN": "0"}
			_, errOut, code := run(t, env, "tools", "list", "-url", srv.URL+"/mcp", "-timeout", "10s")
			if code != 1 || !strings.Contains(errOut, tc.want) || (tc.notWant != "" && strings.Contains(errOut, tc.notWant)) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut, tc.want)
			}
		})
	}
}

// TestConnectHintReason: a refusal's reason, from the challenge's
// error_description or the JSON body, is in the command's error.
func TestConnectHintReason(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/scope") {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", error_description="the token's scopes open no profile"`)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, `{"error": "invalid token"}`)
	}))
	t.Cleanup(srv.Close)
	for path, want := range map[string]string{
		"/scope": `HTTP 403: the server refused the token, saying "the token's scopes open no profile"; check -token`,
		"/mcp":   `HTTP 401: the server refused the token, saying "invalid token"; check -token`,
	} {
		_, errOut, code := run(t, nil, "tools", "list", "-url", srv.URL+path, "-token", "t", "-timeout", "10s")
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", path, code, errOut, want)
		}
	}
}
