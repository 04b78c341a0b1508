package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// clientCredentials is the client_credentials grant (machine to machine,
// the MCP OAuth client credentials extension): on a challenge it finds
// the authorization server as the code flow does (RFC 9728, then RFC
// 8414 or OpenID discovery), and asks its token endpoint for a token for
// the server (resource, RFC 8707) with the scopes the challenge or the
// metadata name. The client authenticates with its secret
// (client_secret_post or _basic, as the server prefers) or, with a
// private key, with a signed JWT assertion (private_key_jwt, RFC 7523).
// go-sdk's extauth handler has no private_key_jwt and sends no resource.
type clientCredentials struct {
	clientID string
	secret   string        // or
	key      crypto.Signer // with alg
	alg      jose.SignatureAlgorithm
	// assertionFile, for the JWT bearer grant (ModeJWTBearer): the
	// workload's JWT, presented as the grant itself (RFC 7523 §2.1).
	assertionFile string
	hc            *http.Client

	ts      oauth2.TokenSource // set by Authorize; guarded by Client.authMu
	granted map[string][]string
}

var _ auth.OAuthHandler = (*clientCredentials)(nil)

// assertionType is RFC 7523's client_assertion_type.
const assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// newClientCredentials returns the handler for s: a secret, or the
// private key in s.ClientKeyFile.
func newClientCredentials(s Settings, hc *http.Client) (*clientCredentials, error) {
	h := &clientCredentials{clientID: s.ClientID, secret: s.ClientSecret, hc: hc, granted: map[string][]string{}}
	if s.Mode == ModeJWTBearer {
		if s.AssertionFile == "" {
			return nil, errors.New("OAuth jwt_bearer needs the file of the workload's JWT (oauth_assertion_file)")
		}
		h.assertionFile = s.AssertionFile
		return h, nil
	}
	switch {
	case s.ClientID == "":
		return nil, errors.New("OAuth client_credentials needs a client id (oauth_client_id)")
	case s.ClientKeyFile != "" && s.ClientSecret != "":
		return nil, errors.New("OAuth client_credentials: a client secret or a private key (oauth_client_key_file), not both")
	case s.ClientKeyFile != "":
		key, alg, err := ReadClientKey(s.ClientKeyFile)
		if err != nil {
			return nil, err
		}
		h.key, h.alg = key, alg
	case s.ClientSecret == "":
		return nil, errors.New("OAuth client_credentials needs a client secret (oauth_client_secret) or a private key (oauth_client_key_file)")
	}
	return h, nil
}

// ReadClientKey reads a PEM private key (PKCS#8, SEC 1 EC or PKCS#1 RSA)
// for private_key_jwt and returns it with the JWS algorithm it signs
// with: ES256, ES384 or ES512 by curve, RS256, or EdDSA.
func ReadClientKey(path string) (crypto.Signer, jose.SignatureAlgorithm, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("OAuth client key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, "", fmt.Errorf("OAuth client key %s: no PEM block (want a PEM private key)", path)
	}
	var key any
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, "", fmt.Errorf("OAuth client key %s: %v", path, err)
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return k, jose.ES256, nil
		case elliptic.P384():
			return k, jose.ES384, nil
		case elliptic.P521():
			return k, jose.ES512, nil
		}
	case *rsa.PrivateKey:
		return k, jose.RS256, nil
	case ed25519.PrivateKey:
		return k, jose.EdDSA, nil
	}
	return nil, "", fmt.Errorf("OAuth client key %s: %T is not an EC (P-256, P-384, P-521), RSA or Ed25519 key", path, key)
}

func (h *clientCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return h.ts, nil
}

func (h *clientCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer drain(resp)
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return fmt.Errorf("WWW-Authenticate: %v", err)
	}
	resource := req.URL.String()
	prm, err := resourceMetadata(ctx, chs, resource, h.hc)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.hc)
	if err != nil {
		return fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil { // none published: the 2025-03-26 defaults
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], TokenEndpoint: strings.TrimRight(prm.AuthorizationServers[0], "/") + "/token"}
	}
	var scopes []string
	for _, ch := range chs {
		if ch.Scheme == "bearer" && ch.Params["scope"] != "" {
			scopes = strings.Fields(ch.Params["scope"])
		}
	}
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	for _, s := range h.granted[asm.Issuer] { // step-up keeps what was granted
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	if prm.Resource != "" {
		resource = prm.Resource
	}
	cfg := &clientcredentials.Config{ClientID: h.clientID, ClientSecret: h.secret, TokenURL: asm.TokenEndpoint, Scopes: scopes,
		EndpointParams: url.Values{"resource": {resource}}, AuthStyle: secretStyle(asm.TokenEndpointAuthMethodsSupported)}
	cctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, h.hc)
	var src oauth2.TokenSource = cfg.TokenSource(cctx)
	switch {
	case h.assertionFile != "":
		src = &bearerGrantSource{h: h, cfg: cfg, ctx: cctx}
	case h.key != nil:
		src = &assertingSource{h: h, cfg: cfg, ctx: cctx, audience: asm.Issuer}
	}
	ts := oauth2.ReuseTokenSource(nil, src)
	tok, err := ts.Token()
	if err != nil {
		return fmt.Errorf("client_credentials token request: %w", err)
	}
	h.ts = ts
	h.granted[asm.Issuer] = grantedScopes(scopes, tok)
	return nil
}

// secretStyle is how the client secret is sent: client_secret_post where
// the server lists it (OAuth 2.1 prefers it), else _basic where it lists
// that, else whatever works.
func secretStyle(supported []string) oauth2.AuthStyle {
	switch {
	case slices.Contains(supported, "client_secret_post"):
		return oauth2.AuthStyleInParams
	case slices.Contains(supported, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}

// assertingSource asks for each token with a new client assertion (each
// is short-lived and single-use: its own jti).
type assertingSource struct {
	h        *clientCredentials
	cfg      *clientcredentials.Config
	ctx      context.Context
	audience string // the authorization server's issuer
}

func (s *assertingSource) Token() (*oauth2.Token, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: s.h.alg, Key: s.h.key}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return nil, fmt.Errorf("client assertion: %v", err)
	}
	now := time.Now()
	assertion, err := jwt.Signed(signer).Claims(jwt.Claims{
		Issuer: s.h.clientID, Subject: s.h.clientID, Audience: jwt.Audience{s.audience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Minute)), ID: rand.Text(),
	}).Serialize()
	if err != nil {
		return nil, fmt.Errorf("client assertion: %v", err)
	}
	cfg := *s.cfg
	cfg.AuthStyle = oauth2.AuthStyleInParams // client_id in the body, no secret
	cfg.EndpointParams = url.Values{"client_assertion_type": {assertionType}, "client_assertion": {assertion}}
	for k, v := range s.cfg.EndpointParams {
		cfg.EndpointParams[k] = v
	}
	return cfg.Token(s.ctx)
}

// bearerGrantSource asks for each token with the JWT bearer grant: the
// workload's JWT, read from its file each time, is the grant; the client
// id, if any, goes in the body. A refused grant is the answer: no retry,
// no other grant.
type bearerGrantSource struct {
	h   *clientCredentials
	cfg *clientcredentials.Config
	ctx context.Context
}

// jwtBearerGrant is RFC 7523's grant type.
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

func (s *bearerGrantSource) Token() (*oauth2.Token, error) {
	b, err := os.ReadFile(s.h.assertionFile)
	if err != nil {
		return nil, fmt.Errorf("workload JWT: %w", err)
	}
	assertion := strings.TrimSpace(string(b))
	if strings.Count(assertion, ".") != 2 {
		return nil, fmt.Errorf("workload JWT %s: not a JWT (want header.payload.signature)", s.h.assertionFile)
	}
	cfg := *s.cfg
	cfg.AuthStyle = oauth2.AuthStyleInParams
	// clientcredentials lets grant_type be replaced.
	cfg.EndpointParams = url.Values{"grant_type": {jwtBearerGrant}, "assertion": {assertion}}
	for k, v := range s.cfg.EndpointParams {
		cfg.EndpointParams[k] = v
	}
	return cfg.Token(s.ctx)
}

// resourceMetadata finds the server's protected resource metadata where
// the MCP specification says to look, in its order: the challenge's
// resource_metadata, the well-known URL with the server's path, the
// well-known URL at the root. A server that publishes none is its own
// authorization server (the 2025-03-26 revision).
func resourceMetadata(ctx context.Context, chs []oauthex.Challenge, resource string, hc *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %v", resource, err)
	}
	type candidate struct{ url, resource string }
	var cands []candidate
	for _, ch := range chs {
		if u := ch.Params["resource_metadata"]; u != "" {
			cands = append(cands, candidate{u, resource})
			break
		}
	}
	mu := *ru
	mu.RawQuery, mu.Fragment = "", ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	cands = append(cands, candidate{mu.String(), resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery, root.Fragment = "", "", ""
	cands = append(cands, candidate{mu.String(), root.String()})
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, hc)
		if err != nil || prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, errors.New("protected resource metadata names no authorization server")
		}
		return prm, nil
	}
	return &oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{root.String()}}, nil
}
