package oauth

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// A HubFlow is the authorization code flow with PKCE that a hub starts
// for one of its users (a server with per-user credentials) and finishes
// at its own callback: the user's browser opens AuthURL, signs in at the
// server's authorization server, and comes back to the hub's redirect
// URL with a code, which Finish exchanges for the user's token. Unlike a
// [Login], nothing waits on the person: the flow is kept by the hub
// between the two requests of the browser, in its memory or, for a
// callback that may reach another replica, as its [HubFlowState].
type HubFlow struct {
	// AuthURL is where the user's browser goes to sign in.
	AuthURL string

	c        *Client
	conf     *oauth2.Config
	verifier string
	resource string
	issuer   string
	reg      bool // the client was registered by junction (RFC 7591)
}

// BeginHubFlow prepares the flow to the client's server for a browser
// that is to come back to redirectURL with state: it finds the server's
// authorization server (its protected resource metadata, then the
// authorization server's metadata), takes the configured client or
// registers one for redirectURL (once per authorization server and
// redirect URL for the client's life), and makes a PKCE verifier.
func (c *Client) BeginHubFlow(ctx context.Context, redirectURL, state string) (*HubFlow, error) {
	if c.s.Mode.machine() || c.s.Mode == ModeEnterprise {
		return nil, fmt.Errorf("server %q logs in as the hub itself (auth %s): there is no sign-in for a user", c.s.Name, c.s.Mode)
	}
	prm, err := resourceMetadata(ctx, nil, c.s.URL, c.hc)
	if err != nil {
		return nil, err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], c.hc)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil { // none published: the 2025-03-26 defaults
		base := strings.TrimRight(prm.AuthorizationServers[0], "/")
		asm = &oauthex.AuthServerMeta{Issuer: prm.AuthorizationServers[0], AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint: base + "/token", RegistrationEndpoint: base + "/register"}
	}
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s names no authorization or token endpoint", asm.Issuer)
	}
	id, secret, reg, err := c.hubClient(ctx, asm, redirectURL)
	if err != nil {
		return nil, err
	}
	resource := c.s.URL
	if prm.Resource != "" {
		resource = prm.Resource
	}
	f := &HubFlow{c: c, resource: resource, issuer: asm.Issuer, reg: reg, verifier: oauth2.GenerateVerifier(),
		conf: &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: redirectURL, Scopes: prm.ScopesSupported,
			Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: secretStyle(asm.TokenEndpointAuthMethodsSupported)}}}
	f.AuthURL = f.conf.AuthCodeURL(state, oauth2.S256ChallengeOption(f.verifier), oauth2.SetAuthURLParam("resource", resource))
	return f, nil
}

// A HubFlowState is what finishing a [HubFlow] takes, apart from the
// client: a hub whose replicas share no memory seals it into the browser
// (see package daemon) so that the callback finishes the flow on any of
// them ([Client.ResumeHubFlow]). It holds the PKCE verifier and the
// client's secret: keep it sealed.
type HubFlowState struct {
	ClientID     string   `json:"client_id"`
	ClientSecret string   `json:"client_secret,omitempty"`
	TokenURL     string   `json:"token_url"`
	AuthStyle    int      `json:"auth_style,omitempty"`
	RedirectURL  string   `json:"redirect_url"`
	Scopes       []string `json:"scopes,omitempty"`
	Verifier     string   `json:"verifier"`
	Resource     string   `json:"resource"`
	Issuer       string   `json:"issuer,omitempty"`
	Registered   bool     `json:"registered,omitempty"`
}

// State returns what [Client.ResumeHubFlow] needs to finish f.
func (f *HubFlow) State() HubFlowState {
	return HubFlowState{ClientID: f.conf.ClientID, ClientSecret: f.conf.ClientSecret, TokenURL: f.conf.Endpoint.TokenURL,
		AuthStyle: int(f.conf.Endpoint.AuthStyle), RedirectURL: f.conf.RedirectURL, Scopes: f.conf.Scopes,
		Verifier: f.verifier, Resource: f.resource, Issuer: f.issuer, Registered: f.reg}
}

// ResumeHubFlow returns the flow st describes (see [HubFlow.State]),
// begun by this client or by the same server's client in another
// process, ready for Finish; its AuthURL is empty. st must come from
// State, sealed on the way: nothing in it is checked again.
func (c *Client) ResumeHubFlow(st HubFlowState) *HubFlow {
	return &HubFlow{c: c, verifier: st.Verifier, resource: st.Resource, issuer: st.Issuer, reg: st.Registered,
		conf: &oauth2.Config{ClientID: st.ClientID, ClientSecret: st.ClientSecret, RedirectURL: st.RedirectURL, Scopes: st.Scopes,
			Endpoint: oauth2.Endpoint{TokenURL: st.TokenURL, AuthStyle: oauth2.AuthStyle(st.AuthStyle)}}}
}

// hubClient is the client the hub's flows use at asm: the configured one,
// else one registered for redirectURL, kept for the client's life.
func (c *Client) hubClient(ctx context.Context, asm *oauthex.AuthServerMeta, redirectURL string) (id, secret string, registered bool, err error) {
	if c.s.ClientID != "" {
		return c.s.ClientID, c.s.ClientSecret, false, nil
	}
	key := asm.Issuer + " " + redirectURL
	c.mu.Lock()
	reg, ok := c.hubRegs[key]
	c.mu.Unlock()
	if ok {
		return reg.ClientID, reg.ClientSecret, true, nil
	}
	if asm.RegistrationEndpoint == "" {
		return "", "", false, fmt.Errorf("authorization server %s takes no client registration, and the config names no client: set oauth_client_id (a client whose redirect URI is %s)", asm.Issuer, redirectURL)
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{redirectURL}, ClientName: "junction", GrantTypes: []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"},
	}, c.hc)
	if err != nil {
		return "", "", false, fmt.Errorf("registering a client at %s: %w", asm.Issuer, err)
	}
	c.mu.Lock()
	if c.hubRegs == nil {
		c.hubRegs = map[string]*oauthex.ClientRegistrationResponse{}
	}
	c.hubRegs[key] = resp
	c.mu.Unlock()
	return resp.ClientID, resp.ClientSecret, true, nil
}

// Finish exchanges the code the browser brought back for the user's
// token, and returns the entry to store for them (with the client, so
// that the hub refreshes it).
func (f *HubFlow) Finish(ctx context.Context, code string) (*Entry, error) {
	if code == "" {
		return nil, errors.New("the authorization server sent no code")
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, f.c.hc)
	tok, err := f.conf.Exchange(ctx, code, oauth2.VerifierOption(f.verifier), oauth2.SetAuthURLParam("resource", f.resource))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			return nil, fmt.Errorf("the authorization server refused the code: %s %s", re.ErrorCode, re.ErrorDescription)
		}
		return nil, fmt.Errorf("exchanging the code: %w", err)
	}
	return &Entry{Name: f.c.s.Name, Resource: f.c.s.URL, ClientID: f.conf.ClientID, ClientSecret: f.conf.ClientSecret,
		TokenURL: f.conf.Endpoint.TokenURL, AuthStyle: int(f.conf.Endpoint.AuthStyle), Scopes: grantedScopes(f.conf.Scopes, tok),
		Issuer: f.issuer, Registered: f.reg, Token: tok}, nil
}
