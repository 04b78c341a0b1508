package oauth

// The hub as an OAuth 2.1 protected resource (the other side of this
// package): [Resource] checks the access tokens hosts send to the HTTP
// front, JWTs against the issuer's keys and opaque tokens by
// introspection (RFC 7662), and describes the hub in protected resource
// metadata (RFC 9728).

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// DefaultAlgorithms are the JWS algorithms a [Resource] accepts when its
// options name none: the asymmetric ones. HS* is never accepted (its key
// is a shared secret, and a verifier given the issuer's public key as one
// would let anyone forge tokens), nor "none".
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Bounds of a [Resource]'s caches and requests.
const (
	// keysMaxAge is how long fetched signing keys are used before they
	// are fetched again.
	keysMaxAge = time.Hour
	// keysMinRefresh is the least time between two fetches of the keys:
	// tokens naming unknown key ids cannot make the hub hammer the
	// issuer.
	keysMinRefresh = 10 * time.Second
	// introspectionTTL bounds how long an introspection answer is reused;
	// an inactive answer is reused for introspectionNegativeTTL.
	introspectionTTL         = 30 * time.Second
	introspectionNegativeTTL = 10 * time.Second
	// introspectionCacheSize bounds the cached answers.
	introspectionCacheSize = 4096
	// fetchTimeout bounds one request to the authorization server.
	fetchTimeout = 10 * time.Second
	// maxBody bounds a key set or introspection answer.
	maxBody = 1 << 20
	// DefaultLeeway is the clock skew allowed on exp and nbf.
	DefaultLeeway = 30 * time.Second
)

// ResourceOptions configure a [Resource].
type ResourceOptions struct {
	// Issuer is the authorization server's issuer identifier; tokens
	// must carry it in iss. Required.
	Issuer string
	// Audience is the hub's resource URI; tokens must name it in aud.
	// Required.
	Audience string
	// JWKSURL is where the issuer's signing keys are; empty means the
	// jwks_uri of the issuer's metadata (RFC 8414 or OpenID discovery),
	// read when the first JWT arrives.
	JWKSURL string
	// Algorithms accepted; nil means [DefaultAlgorithms].
	Algorithms []string
	// IntrospectionURL, if set, checks tokens that are not JWTs there,
	// authenticating as IntrospectionClientID and
	// IntrospectionClientSecret (HTTP Basic).
	IntrospectionURL          string
	IntrospectionClientID     string
	IntrospectionClientSecret string
	// Required scopes must all be in every token.
	Required []string
	// ScopesSupported are advertised in the metadata (with Required).
	ScopesSupported []string
	// Leeway is the clock skew allowed on exp and nbf; zero means
	// [DefaultLeeway].
	Leeway time.Duration
	// HTTPClient fetches keys and metadata and introspects; nil means
	// a client of its own.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Grant is what an accepted token grants.
type Grant struct {
	Subject string // "sub": who the token is for
	Client  string // "client_id": the client it was issued to, if the token says
	Scopes  []string
	Expiry  time.Time
}

// User names who holds the grant, for binding sessions to it: its
// subject, or, for a token that has none, the client it was issued to.
func (g *Grant) User() string {
	if g.Subject != "" {
		return "oauth:" + g.Subject
	}
	if g.Client != "" {
		return "oauth-client:" + g.Client
	}
	return "oauth:"
}

// Has reports whether g carries scope.
func (g *Grant) Has(scope string) bool { return slices.Contains(g.Scopes, scope) }

// ErrInvalidToken is what every refused token's error wraps (a
// [*TokenError]).
var ErrInvalidToken = auth.ErrInvalidToken

// TokenError says why a token was refused, in words safe to log and to
// send back: never the token itself.
type TokenError struct{ Reason string }

func (e *TokenError) Error() string { return "invalid token: " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidToken) true.
func (e *TokenError) Unwrap() error { return ErrInvalidToken }

func refuse(format string, args ...any) error {
	return &TokenError{Reason: fmt.Sprintf(format, args...)}
}

// Resource checks access tokens for one protected resource: the hub's
// HTTP front. It is safe for concurrent use.
type Resource struct {
	o     ResourceOptions
	algs  []jose.SignatureAlgorithm
	keys  keySet
	intro *introspector // nil without IntrospectionURL
}

// NewResource checks o and returns its Resource. Nothing is fetched yet:
// the hub starts while its authorization server is down, and refuses
// tokens, saying why, until it is up.
func NewResource(o ResourceOptions) (*Resource, error) {
	if o.Issuer == "" || o.Audience == "" {
		return nil, errors.New("OAuth resource: issuer and audience must be set")
	}
	if _, err := url.Parse(o.Audience); err != nil {
		return nil, fmt.Errorf("OAuth resource: audience %q: %v", o.Audience, err)
	}
	if o.Leeway == 0 {
		o.Leeway = DefaultLeeway
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: fetchTimeout}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	names := o.Algorithms
	if len(names) == 0 {
		names = DefaultAlgorithms
	}
	r := &Resource{o: o}
	for _, n := range names {
		if !slices.Contains(DefaultAlgorithms, n) {
			return nil, fmt.Errorf("OAuth resource: algorithm %q is not accepted (use some of %s)", n, strings.Join(DefaultAlgorithms, ", "))
		}
		r.algs = append(r.algs, jose.SignatureAlgorithm(n))
	}
	r.keys = keySet{client: o.HTTPClient, now: o.Now, url: o.JWKSURL, issuer: o.Issuer}
	if o.IntrospectionURL != "" {
		r.intro = &introspector{o: &r.o, cache: map[[sha256.Size]byte]introspected{}}
	}
	return r, nil
}

// Required returns the scopes every token must carry.
func (r *Resource) Required() []string { return r.o.Required }

// Verify checks a bearer token. A refused token's error is a
// [*TokenError]; the token's scopes are not checked against Required
// here (the caller answers a missing scope with 403, not 401).
func (r *Resource) Verify(ctx context.Context, token string) (*Grant, error) {
	if token == "" {
		return nil, refuse("no bearer token")
	}
	if strings.Count(token, ".") == 2 {
		return r.verifyJWT(ctx, token)
	}
	if r.intro == nil {
		return nil, refuse("not a JWT, and no introspection endpoint is configured for opaque tokens")
	}
	return r.intro.check(ctx, token)
}

// claims are the access token claims junction reads (RFC 9068).
type claims struct {
	jwt.Claims
	Scope    string   `json:"scope"`
	Scp      scopeSet `json:"scp"`
	ClientID string   `json:"client_id"`
}

// scopeSet reads "scp" as a list or as a space-separated string (both
// are in use).
type scopeSet []string

func (s *scopeSet) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*s = list
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err != nil {
		return err
	}
	*s = strings.Fields(one)
	return nil
}

func (r *Resource) verifyJWT(ctx context.Context, token string) (*Grant, error) {
	tok, err := jwt.ParseSigned(token, r.algs)
	if err != nil {
		if alg := headerAlg(token); alg != "" && !slices.Contains(r.algs, jose.SignatureAlgorithm(alg)) {
			return nil, refuse("signing algorithm %q is not accepted", alg)
		}
		return nil, refuse("malformed JWT")
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("want one signature, got %d", len(tok.Headers))
	}
	h := tok.Headers[0]
	key, err := r.keys.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	var c claims
	if err := tok.Claims(key, &c); err != nil {
		return nil, refuse("bad signature")
	}
	now := r.o.Now()
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: r.o.Issuer, Time: now}, r.o.Leeway); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return nil, refuse("token expired")
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			return nil, refuse("token not valid yet")
		case errors.Is(err, jwt.ErrInvalidIssuer):
			return nil, refuse("issuer %q is not %q", c.Issuer, r.o.Issuer)
		}
		return nil, refuse("claims: %v", err)
	}
	if c.Expiry == nil {
		return nil, refuse("token has no exp")
	}
	if !slices.Contains([]string(c.Audience), r.o.Audience) {
		return nil, refuse("token is for %q, not this resource (%q)", []string(c.Audience), r.o.Audience)
	}
	scopes := strings.Fields(c.Scope)
	if len(scopes) == 0 {
		scopes = c.Scp
	}
	return &Grant{Subject: c.Subject, Client: c.ClientID, Scopes: scopes, Expiry: c.Expiry.Time()}, nil
}

// headerAlg returns the alg of a compact JWS's header, or "".
func headerAlg(token string) string {
	head, _, _ := strings.Cut(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(b, &h) != nil {
		return ""
	}
	return h.Alg
}

// keySet is the issuer's signing keys, fetched when first needed, again
// after keysMaxAge, and again when a token names a key id it does not
// have, at most once per keysMinRefresh.
type keySet struct {
	client *http.Client
	now    func() time.Time
	issuer string

	mu      sync.Mutex // guards the fields below; held during a fetch
	url     string     // from the options or the issuer's metadata
	keys    *jose.JSONWebKeySet
	fetched time.Time // last attempt
	err     error     // of the last attempt
}

func (k *keySet) key(ctx context.Context, kid string, alg string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	stale := k.keys == nil || now.Sub(k.fetched) > keysMaxAge
	if stale {
		k.fetch(ctx, now)
	}
	if key := k.find(kid, alg); key != nil {
		return key, nil
	}
	if !stale && now.Sub(k.fetched) >= keysMinRefresh {
		// Perhaps the issuer rotated its keys.
		k.fetch(ctx, now)
		if key := k.find(kid, alg); key != nil {
			return key, nil
		}
	}
	if k.keys == nil {
		return nil, refuse("the issuer's signing keys cannot be fetched: %v", k.err)
	}
	return nil, refuse("no signing key %q in the issuer's key set", kid)
}

// fetch reads the key set, keeping the old one if it fails; at most once
// per keysMinRefresh.
func (k *keySet) fetch(ctx context.Context, now time.Time) {
	if !k.fetched.IsZero() && now.Sub(k.fetched) < keysMinRefresh {
		return
	}
	k.fetched = now
	// The fetch serves every request waiting for the keys: one client
	// that goes away must not fail it (and have the failure remembered).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	if k.url == "" {
		meta, err := auth.GetAuthServerMetadata(ctx, k.issuer, k.client)
		switch {
		case err != nil:
			k.err = fmt.Errorf("issuer metadata: %v", err)
			return
		case meta == nil || meta.JWKSURI == "":
			k.err = fmt.Errorf("issuer %s publishes no jwks_uri in its metadata; set http.auth.jwks_url", k.issuer)
			return
		}
		k.url = meta.JWKSURI
	}
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, k.client, k.url, &set); err != nil {
		k.err = err
		return
	}
	k.keys, k.err = &set, nil
}

// find returns the public key for kid, or the one key usable for alg
// when the token names no kid.
func (k *keySet) find(kid, alg string) *jose.JSONWebKey {
	if k.keys == nil {
		return nil
	}
	var match []*jose.JSONWebKey
	for i := range k.keys.Keys {
		key := &k.keys.Keys[i]
		if !key.IsPublic() || (key.Use != "" && key.Use != "sig") || (key.Algorithm != "" && key.Algorithm != alg) {
			continue
		}
		if kid != "" && key.KeyID == kid {
			return key
		}
		match = append(match, key)
	}
	if kid == "" && len(match) == 1 {
		return match[0]
	}
	return nil
}

func getJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %v", u, err)
	}
	return nil
}

// introspector asks the authorization server about opaque tokens (RFC
// 7662) and reuses its answers briefly.
type introspector struct {
	o *ResourceOptions

	mu    sync.Mutex
	cache map[[sha256.Size]byte]introspected // by the token's hash
}

type introspected struct {
	grant *Grant
	err   error
	until time.Time
}

func (in *introspector) check(ctx context.Context, token string) (*Grant, error) {
	sum := sha256.Sum256([]byte(token))
	now := in.o.Now()
	in.mu.Lock()
	e, ok := in.cache[sum]
	in.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.grant, e.err
	}
	g, err, final := in.ask(ctx, token, now)
	if !final {
		return nil, err
	}
	e = introspected{grant: g, err: err, until: now.Add(introspectionNegativeTTL)}
	if g != nil {
		e.until = now.Add(introspectionTTL)
		if !g.Expiry.IsZero() && g.Expiry.Before(e.until) {
			e.until = g.Expiry
		}
	}
	in.mu.Lock()
	if len(in.cache) >= introspectionCacheSize {
		for k, old := range in.cache {
			if !now.Before(old.until) {
				delete(in.cache, k)
			}
		}
		if len(in.cache) >= introspectionCacheSize {
			clear(in.cache)
		}
	}
	in.cache[sum] = e
	in.mu.Unlock()
	return g, err
}

// ask introspects token; final is false when the answer says nothing
// about the token (the endpoint could not be reached) and must not be
// cached.
func (in *introspector) ask(ctx context.Context, token string, now time.Time) (_ *Grant, _ error, final bool) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.o.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, refuse("introspection: %v", err), false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.o.IntrospectionClientID), url.QueryEscape(in.o.IntrospectionClientSecret))
	resp, err := in.o.HTTPClient.Do(req)
	if err != nil {
		return nil, refuse("introspection endpoint cannot be reached: %v", redactURLError(err)), false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, refuse("introspection endpoint answered %s (check http.auth.introspection's client)", resp.Status), false
	}
	var ans struct {
		Active    bool             `json:"active"`
		Scope     string           `json:"scope"`
		Exp       *jwt.NumericDate `json:"exp"`
		Nbf       *jwt.NumericDate `json:"nbf"`
		Iss       string           `json:"iss"`
		Aud       jwt.Audience     `json:"aud"`
		Sub       string           `json:"sub"`
		ClientID  string           `json:"client_id"`
		TokenType string           `json:"token_type"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&ans); err != nil {
		return nil, refuse("introspection answer: %v", err), false
	}
	switch {
	case !ans.Active:
		return nil, refuse("token is not active (introspection)"), true
	case ans.Iss != "" && ans.Iss != in.o.Issuer:
		return nil, refuse("issuer %q is not %q", ans.Iss, in.o.Issuer), true
	case len(ans.Aud) == 0:
		return nil, refuse("the introspection answer names no audience, so the token may be for any resource"), true
	case !slices.Contains([]string(ans.Aud), in.o.Audience):
		return nil, refuse("token is for %q, not this resource (%q)", []string(ans.Aud), in.o.Audience), true
	case ans.Exp != nil && now.After(ans.Exp.Time().Add(in.o.Leeway)):
		return nil, refuse("token expired"), true
	case ans.Nbf != nil && now.Add(in.o.Leeway).Before(ans.Nbf.Time()):
		return nil, refuse("token not valid yet"), true
	}
	g := &Grant{Subject: ans.Sub, Client: ans.ClientID, Scopes: strings.Fields(ans.Scope)}
	if ans.Exp != nil {
		g.Expiry = ans.Exp.Time()
	}
	return g, nil, true
}

// redactURLError drops the request details from a transport error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// MetadataPath is where protected resource metadata is served (RFC 9728
// §3); [Resource.MetadataPaths] adds the form suffixed with the
// resource's path.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Metadata is the hub's protected resource metadata.
func (r *Resource) Metadata() *oauthex.ProtectedResourceMetadata {
	scopes := slices.Clone(r.o.Required)
	for _, s := range r.o.ScopesSupported {
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	return &oauthex.ProtectedResourceMetadata{
		Resource:               r.o.Audience,
		AuthorizationServers:   []string{r.o.Issuer},
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "junction MCP hub",
	}
}

// MetadataPaths are the paths the metadata is served at: the well-known
// path, and the well-known path followed by the resource URI's path
// (/.well-known/oauth-protected-resource/mcp), which clients try first.
func (r *Resource) MetadataPaths() []string {
	paths := []string{MetadataPath}
	if u, err := url.Parse(r.o.Audience); err == nil && strings.Trim(u.Path, "/") != "" {
		paths = append(paths, MetadataPath+"/"+strings.Trim(u.Path, "/"))
	}
	return paths
}

// MetadataURL is the URL of the metadata to name in WWW-Authenticate:
// the path-suffixed form on the audience's origin.
func (r *Resource) MetadataURL() string {
	u, err := url.Parse(r.o.Audience)
	if err != nil {
		return ""
	}
	paths := r.MetadataPaths()
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: paths[len(paths)-1]}).String()
}
