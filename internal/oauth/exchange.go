package oauth

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// TokenTypeAccessToken is RFC 8693's type of an access token, the
// subject token a user's client exchanges and the token it asks for.
const TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// exchange trades subject, the user's access token at the hub's front,
// for a token to the server at its authorization server (RFC 8693), as
// the configured client, and keeps it as the user's (it is exchanged
// again when it expires or is refused: the front's token is the user's
// standing proof).
func (c *Client) exchange(ctx context.Context, req *http.Request, resp *http.Response, subject string) error {
	if c.s.ClientID == "" {
		return fmt.Errorf("oauth_token_exchange needs oauth_client_id (the hub's client at the server's authorization server)")
	}
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	prm, err := resourceMetadata(ctx, chs, req.URL.String(), c.hc)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], c.hc)
	if err != nil {
		return fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], TokenEndpoint: strings.TrimRight(prm.AuthorizationServers[0], "/") + "/token"}
	}
	resource := c.s.URL
	if prm.Resource != "" {
		resource = prm.Resource
	}
	creds := &oauthex.ClientCredentials{ClientID: c.s.ClientID}
	if c.s.ClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.s.ClientSecret}
	}
	tok, err := oauthex.ExchangeToken(ctx, asm.TokenEndpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: TokenTypeAccessToken,
		Audience:           asm.Issuer,
		Resource:           resource,
		SubjectToken:       subject,
		SubjectTokenType:   TokenTypeAccessToken,
	}, creds, c.hc)
	if err != nil {
		return fmt.Errorf("token exchange at %s: %w", asm.Issuer, err)
	}
	e := &Entry{Name: c.s.Name, Resource: c.s.URL, ClientID: c.s.ClientID, Issuer: asm.Issuer, Token: tok}
	if c.opts.Store != nil {
		if err := c.opts.Store.Save(e); err != nil {
			return fmt.Errorf("token store: %w", err)
		}
	}
	c.mu.Lock()
	c.ts = oauth2.StaticTokenSource(tok)
	c.mu.Unlock()
	return nil
}
