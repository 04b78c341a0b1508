package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHTTPAuth(t *testing.T) {
	t.Parallel()
	in := `
profiles:
  reviewer: {tools: [search]}
http:
  auth:
    mode: oauth
    issuer: https://idp.example.com/realms/acme
    audience: https://hub.example.com/mcp
    algorithms: [RS256, ES256]
    introspection:
      url: https://idp.example.com/introspect
      client_id: hub
      client_secret: ${SECRET}
    scopes:
      required: [mcp]
      profiles: {"mcp:review": reviewer, "mcp:admin": "*"}
`
	c, err := Parse(strings.NewReader(in), "yaml", mapEnv(map[string]string{"SECRET": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	want := HTTPAuth{
		Mode:          HTTPAuthOAuth,
		Issuer:        "https://idp.example.com/realms/acme",
		Audience:      "https://hub.example.com/mcp",
		Algorithms:    []string{"RS256", "ES256"},
		Introspection: Introspection{URL: "https://idp.example.com/introspect", ClientID: "hub", ClientSecret: "s3cret"},
		Scopes:        AuthScopes{Required: []string{"mcp"}, Profiles: map[string]string{"mcp:review": "reviewer", "mcp:admin": AllProfiles}},
	}
	if diff := cmp.Diff(want, c.HTTP.Auth); diff != "" {
		t.Errorf("http.auth (-want +got):\n%s", diff)
	}
}

func TestHTTPAuthErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"no issuer", "http:\n  auth: {mode: oauth, audience: 'https://h.example.com/mcp'}\n",
			"line 2: http.auth.issuer: must be set for mode oauth"},
		{"http issuer off loopback", "http:\n  auth: {mode: oauth, issuer: 'http://idp.example.com', audience: 'https://h.example.com/mcp'}\n",
			`line 2: http.auth.issuer: "http://idp.example.com": must be https (http only on a loopback host)`},
		{"unknown mode", "http:\n  auth: jwt\n", `line 2: http.auth.mode: unknown mode "jwt" (use oauth or tokens)`},
		{"keys without mode", "http:\n  auth: {issuer: 'https://idp.example.com'}\n", "line 2: http.auth.mode: must be oauth for the other http.auth keys to apply"},
		{"HS256", "http:\n  auth: {mode: oauth, issuer: 'https://i.example.com', audience: 'https://h.example.com/mcp', algorithms: [HS256]}\n",
			`line 2: http.auth.algorithms[0]: "HS256" is not accepted (use some of RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA)`},
		{"unknown profile", "http:\n  auth:\n    mode: oauth\n    issuer: https://i.example.com\n    audience: https://h.example.com/mcp\n    scopes:\n      profiles:\n        mcp:x: nope\n",
			`line 8: http.auth.scopes.profiles["mcp:x"]: unknown profile "nope" (or "*" for the whole hub)`},
		{"introspection without client", "http:\n  auth:\n    mode: oauth\n    issuer: https://i.example.com\n    audience: https://h.example.com/mcp\n    introspection: {url: https://i.example.com/introspect}\n",
			"line 6: http.auth.introspection.client_id: must be set with introspection.url (the client the hub authenticates as)"},
		{"unknown key", "http:\n  auth: {mode: oauth, issuer: 'https://i.example.com', audience: 'https://h.example.com/mcp', issuers: x}\n", `line 2: http.auth.issuers: unknown key (did you mean "issuer"?)`},
		{"with insecure_no_auth", "http:\n  listen: 127.0.0.1:1\n  insecure_no_auth: true\n  auth: {mode: oauth, issuer: 'https://i.example.com', audience: 'https://h.example.com/mcp'}\n",
			"line 3: http.insecure_no_auth: contradicts http.auth oauth; keep one"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(tt.in), "yaml", mapEnv(nil))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q) error =\n  %v\nwant\n  %s", tt.in, err, tt.want)
			}
		})
	}
}

// TestServerClientKeyFile: oauth_client_key_file, the private key of
// auth: client_credentials with private_key_jwt, is relative to the
// config file and excludes a secret.
func TestServerClientKeyFile(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader("servers:\n  s:\n    url: https://s.example.com/mcp\n    auth: client_credentials\n    oauth_client_id: bot\n    oauth_client_key_file: ${KEY}\n"), "yaml", mapEnv(map[string]string{"KEY": "/etc/junction/bot.pem"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Servers["s"].OAuthClientKeyFile; got != "/etc/junction/bot.pem" {
		t.Errorf("oauth_client_key_file = %q", got)
	}
	for in, want := range map[string]string{
		"servers:\n  s:\n    url: https://s.example.com/mcp\n    auth: client_credentials\n    oauth_client_id: bot\n    oauth_client_secret: x\n    oauth_client_key_file: k.pem\n": "line 4: servers.s.auth: client_credentials needs oauth_client_id and one of oauth_client_secret and oauth_client_key_file",
		"servers:\n  s:\n    url: https://s.example.com/mcp\n    auth: jwt_bearer\n":                                                                                                 "line 4: servers.s.auth: jwt_bearer needs oauth_assertion_file (the file of the workload's JWT)",
		"servers:\n  s:\n    url: https://s.example.com/mcp\n    auth: oauth\n    oauth_client_key_file: k.pem\n":                                                                    "line 5: servers.s.oauth_client_key_file: only with auth: client_credentials (private_key_jwt)",
	} {
		if _, err := Parse(strings.NewReader(in), "yaml", mapEnv(nil)); err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v, want %s", in, err, want)
		}
	}
}
