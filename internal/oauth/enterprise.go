package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// enterprise is enterprise-managed authorization (SEP-990): the ID token
// a person got from the company's identity provider is exchanged there
// for an identity assertion grant (ID-JAG, RFC 8693 token exchange) for
// the server's authorization server and the server, and that grant for
// an access token (RFC 7523 JWT bearer), with go-sdk's token exchange
// (oauthex.ExchangeToken). The server's authorization server and resource
// are found as in the other flows; the ID token is read from its file at
// each authorization.
type enterprise struct {
	s  Settings
	hc *http.Client
	ts oauth2.TokenSource // set by Authorize; guarded by Client.authMu
}

var _ auth.OAuthHandler = (*enterprise)(nil)

func newEnterprise(s Settings, hc *http.Client) (*enterprise, error) {
	switch {
	case s.IdPIssuer == "" || s.IdPClientID == "":
		return nil, errors.New("OAuth enterprise needs the identity provider's issuer and the client id junction has there (oauth_idp_issuer, oauth_idp_client_id)")
	case s.IDTokenFile == "":
		return nil, errors.New("OAuth enterprise needs the file of the ID token from the identity provider (oauth_id_token_file)")
	case s.ClientID == "":
		return nil, errors.New("OAuth enterprise needs the client id junction has at the server's authorization server (oauth_client_id)")
	}
	return &enterprise{s: s, hc: hc}, nil
}

func (h *enterprise) TokenSource(context.Context) (oauth2.TokenSource, error) { return h.ts, nil }

func (h *enterprise) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer drain(resp)
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	prm, err := resourceMetadata(ctx, chs, req.URL.String(), h.hc)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(h.s.IDTokenFile)
	if err != nil {
		return fmt.Errorf("OAuth enterprise: ID token: %w", err)
	}
	idToken := strings.TrimSpace(string(b))
	if strings.Count(idToken, ".") != 2 {
		return fmt.Errorf("OAuth enterprise: ID token %s: not a JWT (want header.payload.signature)", h.s.IDTokenFile)
	}
	// The identity provider's token endpoint, from its OpenID metadata
	// (an identity provider need not list PKCE, which go-sdk's discovery
	// insists on, so it is read here).
	var idp struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := getJSON(ctx, h.hc, strings.TrimRight(h.s.IdPIssuer, "/")+"/.well-known/openid-configuration", &idp); err != nil {
		return fmt.Errorf("OAuth enterprise: identity provider metadata: %v", err)
	}
	if idp.Issuer != h.s.IdPIssuer || idp.TokenEndpoint == "" {
		return fmt.Errorf("OAuth enterprise: identity provider metadata names issuer %q (want %q) and token endpoint %q", idp.Issuer, h.s.IdPIssuer, idp.TokenEndpoint)
	}
	creds := func(id, secret string) *oauthex.ClientCredentials {
		c := &oauthex.ClientCredentials{ClientID: id}
		if secret != "" {
			c.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
		return c
	}
	jag, err := oauthex.ExchangeToken(ctx, idp.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           prm.AuthorizationServers[0],
		Resource:           prm.Resource,
		Scope:              prm.ScopesSupported,
		SubjectToken:       idToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, creds(h.s.IdPClientID, h.s.IdPClientSecret), h.hc)
	if err != nil {
		return fmt.Errorf("OAuth enterprise: token exchange at the identity provider: %w", err)
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.hc)
	if err != nil {
		return fmt.Errorf("OAuth enterprise: authorization server metadata: %w", err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], TokenEndpoint: strings.TrimRight(prm.AuthorizationServers[0], "/") + "/token"}
	}
	// The ID-JAG is the grant (RFC 7523), with the client's secret.
	cfg := &clientcredentials.Config{ClientID: h.s.ClientID, ClientSecret: h.s.ClientSecret, TokenURL: asm.TokenEndpoint,
		Scopes: prm.ScopesSupported, AuthStyle: secretStyle(asm.TokenEndpointAuthMethodsSupported),
		EndpointParams: url.Values{"grant_type": {jwtBearerGrant}, "assertion": {jag.AccessToken}}}
	tok, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, h.hc))
	if err != nil {
		return fmt.Errorf("OAuth enterprise: JWT bearer grant: %w", err)
	}
	// The ID-JAG is single-use: a new token takes a new authorization.
	h.ts = oauth2.StaticTokenSource(tok)
	return nil
}
