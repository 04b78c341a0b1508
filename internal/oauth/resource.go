package oauth

// The hub as an OAuth 2.1 protected resource (the other side of this
// package): [Resource] checks the access tokens hosts send to the HTTP
// front, JWTs against the issuer's keys and opaque tokens by
// introspection (RFC 7662), and describes the hub in protected resource
// metadata (RFC 9728).

import (
	"container/list"
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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
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
	// introspectionCacheSize bounds the cached accepted answers,
	// introspectionNegativeCacheSize the cached refusals.
	introspectionCacheSize         = 4096
	introspectionNegativeCacheSize = 1024
	// introspectionRate is how many introspection requests a second the
	// hub sends at most, in bursts of up to introspectionBurst, and
	// introspectionConcurrency how many at once (answers from the cache
	// do not count).
	introspectionRate        = 20
	introspectionBurst       = 50
	introspectionConcurrency = 8
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
// [Resource.Verify] refuses tokens that name neither, so every grant it
// returns has an owner of its own.
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
		r.intro = newIntrospector(&r.o)
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
			return nil, refuse("signing algorithm %s is not accepted", short(alg))
		}
		return nil, refuse("malformed JWT")
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("want one signature, got %d", len(tok.Headers))
	}
	h := tok.Headers[0]
	if err := checkType(h.ExtraHeaders[jose.HeaderType]); err != nil {
		return nil, err
	}
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
			return nil, refuse("issuer %s is not %q", short(c.Issuer), r.o.Issuer)
		}
		return nil, refuse("claims: %v", err)
	}
	if c.Expiry == nil {
		return nil, refuse("token has no exp")
	}
	if !slices.Contains([]string(c.Audience), r.o.Audience) {
		return nil, refuse("token is for %s, not this resource (%q)", shortList(c.Audience), r.o.Audience)
	}
	if c.Subject == "" && c.ClientID == "" {
		return nil, errNoOwner
	}
	scopes := strings.Fields(c.Scope)
	if len(scopes) == 0 {
		scopes = c.Scp
	}
	return &Grant{Subject: c.Subject, Client: c.ClientID, Scopes: scopes, Expiry: c.Expiry.Time()}, nil
}

// errNoOwner refuses a token that names no subject (sub) and no client
// (client_id): the hub binds sessions to one of them, and every such
// token would share one owner, each able to drive the others' sessions.
var errNoOwner = refuse("the token names no subject (sub) or client (client_id), so no session can be bound to it; have the authorization server put sub in access tokens")

// checkType checks a JWT's typ header (RFC 9068 §2.1 asks for at+jwt).
// Accepted: at+jwt and application/at+jwt, and, as many authorization
// servers still issue access tokens so, JWT, application/jwt or no typ;
// any other value names another kind of token (an ID token's
// "id_token+jwt", a DPoP proof's "dpop+jwt", a logout token...) that
// must not pass for an access token.
func checkType(v any) error {
	if v == nil {
		return nil
	}
	typ, ok := v.(string)
	if !ok {
		return refuse("typ header is not a string")
	}
	switch strings.ToLower(typ) {
	case "at+jwt", "application/at+jwt", "jwt", "application/jwt":
		return nil
	}
	return refuse("token type (typ) %s is not an access token's (want at+jwt)", short(typ))
}

// maxShown bounds each value from a token that a refusal quotes: the
// reason is logged and sent back, and the value is the sender's.
const maxShown = 40

// short quotes s, cut to maxShown bytes.
func short(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	cut := maxShown
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// shortList quotes at most three values of list, each cut by short.
func shortList(list []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range list {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more", len(list)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(short(s))
	}
	b.WriteByte(']')
	return b.String()
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
// have, at most once per keysMinRefresh. A fetch runs without the lock:
// tokens signed with a key already known are checked at once while it
// runs (after keysMaxAge the old keys serve until the new ones are in),
// and tokens that need the fetch wait for that one fetch, never start
// another.
type keySet struct {
	client *http.Client
	now    func() time.Time
	issuer string

	mu     sync.Mutex // guards the fields below; never held during a fetch
	url    string     // from the options or the issuer's metadata
	keys   *jose.JSONWebKeySet
	got    time.Time     // when keys were fetched
	tried  time.Time     // when the last fetch started
	err    error         // of the last fetch
	flight chan struct{} // while a fetch runs: closed when it ends
}

func (k *keySet) key(ctx context.Context, kid string, alg string) (*jose.JSONWebKey, error) {
	k.mu.Lock()
	now := k.now()
	if key := k.find(kid, alg); key != nil {
		if now.Sub(k.got) > keysMaxAge {
			k.startLocked(ctx, now) // refresh, but serve this token now
		}
		k.mu.Unlock()
		return key, nil
	}
	// A key id not in the set (or no set yet): perhaps the issuer
	// rotated its keys. Wait for the fetch running, or start one if
	// the last started keysMinRefresh ago.
	done := k.startLocked(ctx, now)
	k.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, refuse("gave up waiting for the issuer's signing keys: %v", ctx.Err())
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if key := k.find(kid, alg); key != nil {
		return key, nil
	}
	if k.keys == nil {
		return nil, refuse("the issuer's signing keys cannot be fetched: %v", k.err)
	}
	return nil, refuse("no signing key %s in the issuer's key set", short(kid))
}

// startLocked starts a fetch of the key set unless one is running or the
// last one started less than keysMinRefresh ago, and returns the channel
// closed when the running fetch ends (nil when none runs). k.mu is held.
func (k *keySet) startLocked(ctx context.Context, now time.Time) chan struct{} {
	if k.flight != nil {
		return k.flight
	}
	if !k.tried.IsZero() && now.Sub(k.tried) < keysMinRefresh {
		return nil
	}
	k.tried = now
	done := make(chan struct{})
	k.flight = done
	// The fetch serves every request waiting for the keys: one client
	// that goes away must not fail it (and have the failure remembered).
	fctx, known := context.WithoutCancel(ctx), k.url
	go func() {
		defer close(done)
		set, u, err := k.fetch(fctx, known)
		k.mu.Lock()
		defer k.mu.Unlock()
		k.flight = nil
		if u != "" {
			k.url = u
		}
		if err != nil {
			k.err = err // the old keys, if any, stay
			return
		}
		k.keys, k.got, k.err = set, now, nil
	}()
	return done
}

// fetch reads the key set at u, or at the jwks_uri of the issuer's
// metadata when u is "", and returns it with the URL it read.
func (k *keySet) fetch(ctx context.Context, u string) (*jose.JSONWebKeySet, string, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	if u == "" {
		meta, err := auth.GetAuthServerMetadata(ctx, k.issuer, k.client)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("issuer metadata: %v", err)
		case meta == nil || meta.JWKSURI == "":
			return nil, "", fmt.Errorf("issuer %s publishes no jwks_uri in its metadata; set http.auth.jwks_url", k.issuer)
		}
		u = meta.JWKSURI
	}
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, k.client, u, &set); err != nil {
		return nil, u, err
	}
	return &set, u, nil
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

// ErrBusy is the error of [Resource.Verify] for an opaque token when the
// introspection endpoint is asked as often, or by as many requests at
// once, as the hub allows: the token was not checked, so the request is
// answered 503 with Retry-After rather than 401 (a valid token is not to
// be dropped). Floods of made-up tokens end here, not at the
// authorization server.
var ErrBusy = errors.New("too many opaque tokens to introspect at once: try again shortly")

// introspector asks the authorization server about opaque tokens (RFC
// 7662) and reuses its answers briefly: accepted ones for up to
// introspectionTTL in one cache, refusals for introspectionNegativeTTL in
// another, each dropping its least recently used answer when full, so
// that floods of bad tokens never push out good ones. It asks at most
// introspectionConcurrency questions at once and introspectionRate a
// second (bursts of introspectionBurst); one token asked about by many
// requests at once is asked about once.
type introspector struct {
	o *ResourceOptions

	good, bad *lru // answers by the token's hash
	limit     *rate.Limiter
	slots     chan struct{} // one per introspection request running
	flight    singleflight.Group
}

func newIntrospector(o *ResourceOptions) *introspector {
	return &introspector{o: o,
		good:  newLRU(introspectionCacheSize),
		bad:   newLRU(introspectionNegativeCacheSize),
		limit: rate.NewLimiter(introspectionRate, introspectionBurst),
		slots: make(chan struct{}, introspectionConcurrency),
	}
}

type introspected struct {
	grant *Grant
	err   error
	until time.Time
}

func (in *introspector) check(ctx context.Context, token string) (*Grant, error) {
	sum := sha256.Sum256([]byte(token))
	now := in.o.Now()
	for _, c := range []*lru{in.good, in.bad} {
		if e, ok := c.get(sum, now); ok {
			return e.grant, e.err
		}
	}
	v, err, _ := in.flight.Do(string(sum[:]), func() (any, error) {
		if !in.limit.AllowN(now, 1) {
			return nil, ErrBusy
		}
		select {
		case in.slots <- struct{}{}:
		default:
			return nil, ErrBusy
		}
		defer func() { <-in.slots }()
		// The answer serves every request asking about the token.
		g, err, final := in.ask(context.WithoutCancel(ctx), token, now)
		if !final {
			return nil, err
		}
		if err != nil {
			in.bad.put(sum, introspected{err: err, until: now.Add(introspectionNegativeTTL)})
			return nil, err
		}
		until := now.Add(introspectionTTL)
		if !g.Expiry.IsZero() && g.Expiry.Before(until) {
			until = g.Expiry
		}
		in.good.put(sum, introspected{grant: g, until: until})
		return g, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*Grant), nil
}

// lru is a bounded cache of introspection answers that drops the least
// recently used one when full, and expired ones when met.
type lru struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *lruEntry, most recently used first
	items map[[sha256.Size]byte]*list.Element
}

type lruEntry struct {
	key [sha256.Size]byte
	val introspected
}

func newLRU(max int) *lru {
	return &lru{max: max, order: list.New(), items: map[[sha256.Size]byte]*list.Element{}}
}

func (c *lru) get(key [sha256.Size]byte, now time.Time) (introspected, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return introspected{}, false
	}
	e := el.Value.(*lruEntry)
	if !now.Before(e.val.until) {
		c.order.Remove(el)
		delete(c.items, key)
		return introspected{}, false
	}
	c.order.MoveToFront(el)
	return e.val, true
}

func (c *lru) put(key [sha256.Size]byte, v introspected) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		el.Value.(*lruEntry).val = v
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*lruEntry).key)
	}
	c.items[key] = c.order.PushFront(&lruEntry{key: key, val: v})
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
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
		return nil, refuse("issuer %s is not %q", short(ans.Iss), in.o.Issuer), true
	case len(ans.Aud) == 0:
		return nil, refuse("the introspection answer names no audience, so the token may be for any resource"), true
	case !slices.Contains([]string(ans.Aud), in.o.Audience):
		return nil, refuse("token is for %s, not this resource (%q)", shortList(ans.Aud), in.o.Audience), true
	case ans.Exp != nil && now.After(ans.Exp.Time().Add(in.o.Leeway)):
		return nil, refuse("token expired"), true
	case ans.Nbf != nil && now.Add(in.o.Leeway).Before(ans.Nbf.Time()):
		return nil, refuse("token not valid yet"), true
	case ans.Sub == "" && ans.ClientID == "":
		return nil, errNoOwner, true
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
