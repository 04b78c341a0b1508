package e2e

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestHubOAuthResource: the binary as an OAuth 2.1 protected resource
// behind a real OpenID provider (oidc-provider, started here on
// 127.0.0.1). The hub serves its protected resource metadata; answers a
// request without a token with 401 naming it; accepts the provider's JWT
// access tokens and (by introspection) its opaque ones; serves a token
// whose scope opens one profile that profile's tools only, and refuses it
// /status with 403 insufficient_scope; refuses a token for another
// resource, an alg "none" token and a forged one with 401, logging the
// reason and no token. junction's own client (client_credentials with a
// secret, and with a private key, discovered from the hub's metadata,
// naming the hub as the resource) calls a tool through it.
func TestHubOAuthResource(t *testing.T) {
	node, modules := nodeTools(t)
	npmPackageDir(t, modules, "oidc-provider")

	port := freePort(t)
	audience := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	dir := t.TempDir()
	agentKey, agentJWK := clientKey(t, dir)
	issuer := startOIDCProvider(t, node, modules, agentJWK)

	hubConfig := writeFile(t, dir, "hub.yaml", `packs: [core, conformance]
profiles:
  small: {tools: [greet]}
http:
  auth:
    mode: oauth
    issuer: `+issuer+`
    audience: `+audience+`
    introspection:
      url: `+issuer+`/token/introspection
      client_id: hub
      client_secret: hub-secret
    scopes:
      profiles: {"mcp:small": small, "mcp:all": "*"}
`)
	hub := startServer(t, "-http", fmt.Sprintf("127.0.0.1:%d", port), "-config", hubConfig)
	base := strings.TrimSuffix(hub.URL, "/mcp")

	// Protected resource metadata, at the path-suffixed well-known URL.
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		ScopesSupported      []string `json:"scopes_supported"`
	}
	resp := httpDo(t, http.MethodGet, base+"/.well-known/oauth-protected-resource/mcp", "", nil)
	if err := json.Unmarshal([]byte(resp.body), &meta); err != nil || resp.status != 200 || meta.Resource != audience || !slices.Equal(meta.AuthorizationServers, []string{issuer}) {
		t.Fatalf("metadata: %d %s (%v)", resp.status, resp.body, err)
	}

	// No token: 401 naming the metadata.
	resp = httpDo(t, http.MethodPost, hub.URL, "", nil)
	wantMeta := `resource_metadata="` + base + `/.well-known/oauth-protected-resource/mcp"`
	if resp.status != 401 || !strings.Contains(resp.challenge, wantMeta) {
		t.Errorf("no token: %d, WWW-Authenticate %q; want 401 with %s", resp.status, resp.challenge, wantMeta)
	}

	// A JWT whose scope opens profile small: its tools only, and no /status.
	small := providerToken(t, issuer, "agent", "mcp:small", audience)
	if got := toolNames(t, connectHTTP(t, hub.URL, small)); !slices.Equal(got, []string{"greet"}) {
		t.Errorf("tools for a mcp:small token = %v, want [greet]", got)
	}
	resp = httpDo(t, http.MethodGet, base+"/status", small, nil)
	if resp.status != 403 || !strings.Contains(resp.challenge, `error="insufficient_scope"`) || !strings.Contains(resp.challenge, `scope="mcp:all"`) {
		t.Errorf("/status with a mcp:small token: %d, WWW-Authenticate %q; want 403 insufficient_scope, scope mcp:all", resp.status, resp.challenge)
	}

	// The whole hub for mcp:all.
	all := providerToken(t, issuer, "agent", "mcp:all", audience)
	if got := sorted(toolNames(t, connectHTTP(t, hub.URL, all))); !slices.Contains(got, "junction_version") || !slices.Contains(got, "greet") {
		t.Errorf("tools for a mcp:all token = %v, want the whole hub", got)
	}
	if resp = httpDo(t, http.MethodGet, base+"/status", all, nil); resp.status != 200 {
		t.Errorf("/status with a mcp:all token: %d %s", resp.status, resp.body)
	}

	// An opaque token, checked by introspection.
	opaque := providerToken(t, issuer, "agent-opaque", "mcp:small", audience)
	if strings.Count(opaque, ".") == 2 {
		t.Fatalf("agent-opaque got a JWT")
	}
	if got := toolNames(t, connectHTTP(t, hub.URL, opaque)); !slices.Equal(got, []string{"greet"}) {
		t.Errorf("tools for an opaque mcp:small token = %v, want [greet]", got)
	}

	// A session belongs to the client whose token opened it: another
	// client's token, with the same scopes, gets 403 for it; another token
	// of the same client is the same holder.
	opaqueAll := providerToken(t, issuer, "agent-opaque", "mcp:all", audience)
	allAgain := providerToken(t, issuer, "agent", "mcp:all", audience)
	init := httpDo(t, http.MethodPost, hub.URL, all, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
	if init.status != 200 || init.session == "" {
		t.Fatalf("initialize with a mcp:all token: %d, session %q", init.status, init.session)
	}
	inSession := []string{"Mcp-Session-Id", init.session, "Mcp-Protocol-Version", "2025-11-25"}
	httpDo(t, http.MethodPost, hub.URL, all, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), inSession...)
	list := []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	for _, tc := range []struct {
		name, token string
		want        int
	}{{"another client", opaqueAll, 403}, {"the same client", allAgain, 200}, {"the same token", all, 200}} {
		if resp := httpDo(t, http.MethodPost, hub.URL, tc.token, list, inSession...); resp.status != tc.want {
			t.Errorf("tools/list in the session with %s's token: %d %s, want %d", tc.name, resp.status, resp.body, tc.want)
		}
	}

	// Refused with 401 and the reason: a token for another resource, alg
	// none, a forged signature, an opaque token the provider never issued.
	other := providerToken(t, issuer, "agent", "mcp:all", "http://127.0.0.1:9/mcp")
	_, payload, _ := strings.Cut(all, ".")
	payload, _, _ = strings.Cut(payload, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + payload + "."
	forged := forgeToken(t, issuer, audience)
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	for _, tc := range []struct{ name, token, reason string }{
		{"another resource", other, "not this resource"},
		{"alg none", none, `algorithm "none" is not accepted`},
		{"forged", forged, "bad signature"},
		{"unknown opaque", "not-a-token-the-provider-issued", "not active"},
	} {
		resp := httpDo(t, http.MethodPost, hub.URL, tc.token, initialize)
		var refusal struct{ Error string }
		json.Unmarshal([]byte(resp.body), &refusal)
		if resp.status != 401 || !strings.Contains(resp.challenge, `error="invalid_token"`) || !strings.Contains(resp.challenge, wantMeta) || !strings.Contains(refusal.Error, tc.reason) {
			t.Errorf("%s: %d, WWW-Authenticate %q, body %s; want 401 invalid_token saying %q", tc.name, resp.status, resp.challenge, resp.body, tc.reason)
		}
	}

	// junction's own client: client_credentials with the provider, found
	// through the hub's metadata.
	clientConfig := writeFile(t, dir, "client.yaml", `packs: []
servers:
  hub:
    url: `+audience+`
    auth: client_credentials
    oauth_client_id: agent
    oauth_client_secret: agent-secret
`)
	env := []string{"JUNCTION_OAUTH_DIR=" + filepath.Join(dir, "oauth"), "JUNCTION_OAUTH_KEYCHAIN=0"}
	out, errOut, code := runJunction(t, env, "tools", "call", "hub__greet", "-json", `{"name":"oauth"}`, "-config", clientConfig)
	if code != 0 || !strings.Contains(out, "Hello, oauth!") {
		t.Errorf("junction tools call through the hub with client_credentials: exit %d\n%s%s", code, out, errOut)
	}
	// The same with a private key instead of a secret (private_key_jwt).
	jwtConfig := writeFile(t, dir, "client-jwt.yaml", `packs: []
servers:
  hub:
    url: `+audience+`
    auth: client_credentials
    oauth_client_id: agent-jwt
    oauth_client_key_file: `+agentKey+`
`)
	out, errOut, code = runJunction(t, env, "tools", "call", "hub__greet", "-json", `{"name":"key"}`, "-config", jwtConfig)
	if code != 0 || !strings.Contains(out, "Hello, key!") {
		t.Errorf("junction tools call through the hub with client_credentials and private_key_jwt: exit %d\n%s%s", code, out, errOut)
	}

	log := hub.Stderr()
	for _, tok := range []string{small, all, opaque, other, forged} {
		if strings.Contains(log, tok) {
			t.Errorf("a token is in the hub's log")
		}
	}
	if !strings.Contains(log, "access token refused") || !strings.Contains(log, "bad signature") {
		t.Errorf("the hub's log does not give the reasons for refusals:\n%s", log)
	}
}

// clientKey makes the EC key of the provider's private_key_jwt client:
// the private key in a PEM file in dir, and the public key as a JWK.
func clientKey(t *testing.T, dir string) (pemFile, publicJWK string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemFile = writeFile(t, dir, "agent-jwt.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	jwk, err := json.Marshal(jose.JSONWebKey{Key: &key.PublicKey, KeyID: "agent-jwt", Algorithm: "ES256", Use: "sig"})
	if err != nil {
		t.Fatal(err)
	}
	return pemFile, string(jwk)
}

// startOIDCProvider runs testdata/oidc/provider.mjs and returns its
// issuer URL; it stops when the test ends (its stdin closes).
func startOIDCProvider(t *testing.T, node, modules, agentJWK string) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("testdata", "oidc", "provider.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, modules, agentJWK)
	cmd.Env = childEnv(t.TempDir())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := newOutput()
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if iss, ok := strings.CutPrefix(sc.Text(), "issuer "); ok {
				lines <- iss
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case iss := <-lines:
		return iss
	case <-exited:
		t.Fatalf("the OpenID provider exited before listening:\n%s", stderr.String())
	case <-time.After(startTimeout):
		t.Fatalf("the OpenID provider did not listen within %v:\n%s", startTimeout, stderr.String())
	}
	return ""
}

// providerToken gets an access token from the provider with the
// client_credentials grant.
func providerToken(t *testing.T, issuer, client, scope, resource string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}, "resource": {resource}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token for %s (%s, %s): %s %s", client, scope, resource, resp.Status, body)
	}
	return tok.AccessToken
}

// forgeToken signs good-looking claims with a key of its own under the
// provider's key id.
func forgeToken(t *testing.T, issuer, audience string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", "e2e-1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": issuer, "aud": audience, "sub": "mallory",
		"exp": now.Add(time.Minute).Unix(), "iat": now.Unix(), "scope": "mcp:all"}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// freePort returns a port that was free on 127.0.0.1 a moment ago, for a
// server whose URL must be known before it starts (the hub's audience).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
