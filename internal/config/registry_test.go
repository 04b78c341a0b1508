package config

import (
	"slices"
	"strings"
	"testing"
)

func TestRegistryKeys(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
registries: [https://mcp.corp.example, "https://registry.modelcontextprotocol.io/v0.1"]
servers:
  m:
    command: npx
    args: [-y, "@modelcontextprotocol/server-memory@2026.8.31"]
    registry: {name: io.github.modelcontextprotocol/server-memory, version: 2026.8.31, url: https://mcp.corp.example}
  hand: {command: x}
`)
	if want := []string{"https://mcp.corp.example", "https://registry.modelcontextprotocol.io/v0.1"}; !slices.Equal(c.Registries, want) {
		t.Errorf("Registries = %q, want %q", c.Registries, want)
	}
	want := RegistryRef{Name: "io.github.modelcontextprotocol/server-memory", Version: "2026.8.31", URL: "https://mcp.corp.example"}
	if r := c.Servers["m"].Registry; r == nil || *r != want {
		t.Errorf("Registry = %+v, want %+v", r, want)
	}
	if c.Servers["hand"].Registry != nil {
		t.Errorf("a server without the key has Registry %+v", c.Servers["hand"].Registry)
	}
}

func TestRegistryKeysValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"registries: [ftp://x]\n", `registries[0]: "ftp://x": want the registry's http:// or https:// base URL`},
		{"registries: [\"https://r.example/?key=1\"]\n", `registries[0]: "https://r.example/?key=1": a registry's base URL has no query or fragment`},
		{"registries: https://r.example\n", "registries: expected a list"},
		{"servers:\n  x: {command: a, registry: io.github.a/b}\n", "servers.x.registry: expected a mapping {name, version, url}"},
		{"servers:\n  x: {command: a, registry: {name: io.github.a/b}}\n", "servers.x.registry: needs name and version"},
		{"servers:\n  x: {command: a, registry: {name: io.github.a/b, version: 1, tag: x}}\n", "servers.x.registry.tag"},
		{"servers:\n  x: {command: a, registry: {name: io.github.a/b, version: 1, url: \"mailto:x\"}}\n", "servers.x.registry.url"},
	} {
		_, err := Parse(strings.NewReader(tc.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestDiffRegistryRef: a change to where a server came from alone
// restarts nothing (update changes the pin with it, which does).
func TestDiffRegistryRef(t *testing.T) {
	t.Parallel()
	a := mustParse(t, "servers:\n  s: {command: a, registry: {name: io.github.a/b, version: 1}}\n")
	b := mustParse(t, "servers:\n  s: {command: a, registry: {name: io.github.a/b, version: 2}}\n")
	if d := Diff(a, b); !d.Empty() {
		t.Errorf("registry.version alone: %+v, want no change", d.Servers)
	}
}

func TestCredentialsKey(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "servers:\n  a: {url: \"https://a.example/mcp\", credentials: per_user}\n  b: {url: \"https://b.example/mcp\"}\n")
	if c.Servers["a"].Credentials != CredentialsPerUser || c.Servers["b"].Credentials != "" {
		t.Errorf("credentials: a %q, b %q", c.Servers["a"].Credentials, c.Servers["b"].Credentials)
	}
	for _, tc := range []struct{ in, want string }{
		{"servers:\n  x: {command: a, credentials: per_user}\n", "servers.x.credentials: per_user is for http and sse servers"},
		{"servers:\n  x: {url: \"https://a.example\", auth: none, credentials: per_user}\n", "per_user needs OAuth"},
		{"servers:\n  x: {url: \"https://a.example\", auth: client_credentials, oauth_client_id: c, oauth_client_secret: s, credentials: per_user}\n", "auth client_credentials is the hub's own machine login"},
		{"servers:\n  x: {url: \"https://a.example\", sessions: per_host, credentials: per_user}\n", "remove sessions: per_host"},
		{"servers:\n  x: {url: \"https://a.example\", credentials: mine}\n", `unknown credentials mode "mine"`},
	} {
		_, err := Parse(strings.NewReader(tc.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestTokenExchangeKey(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "servers:\n  a: {url: \"https://a.example/mcp\", credentials: per_user, oauth_token_exchange: true, oauth_client_id: hub}\n")
	if !c.Servers["a"].OAuthTokenExchange {
		t.Error("oauth_token_exchange not read")
	}
	for _, tc := range []struct{ in, want string }{
		{"servers:\n  x: {url: \"https://a.example\", oauth_token_exchange: true, oauth_client_id: hub}\n", "oauth_token_exchange: only applies with credentials: per_user"},
		{"servers:\n  x: {url: \"https://a.example\", credentials: per_user, oauth_token_exchange: true}\n", "oauth_token_exchange: needs oauth_client_id"},
	} {
		_, err := Parse(strings.NewReader(tc.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}
