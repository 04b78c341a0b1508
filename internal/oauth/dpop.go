package oauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// DPoP (RFC 9449, the MCP DPoP extension, SEP-1932): when a server's
// challenge uses the DPoP scheme, junction binds its tokens to a key of
// its own. Each token request and each request to the server carries a
// fresh proof (a JWT signed with the key, naming the method and URL, and
// for the server the hash of the token), and the token is sent as
// "Authorization: DPoP <token>". A nonce asked for (use_dpop_nonce, the
// DPoP-Nonce header) is put in the proofs to that origin from then on.
// The key is stored with the token, so that another process (a hub) can
// use a token that a login stored.

// dpopKey is a client's DPoP key and the nonces servers gave it.
type dpopKey struct {
	priv *ecdsa.PrivateKey

	mu     sync.Mutex
	nonces map[string]string // by origin (scheme://host)
}

func newDPoPKey() (*dpopKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &dpopKey{priv: priv, nonces: map[string]string{}}, nil
}

// dpopKeyFrom reads a key stored as a private JWK.
func dpopKeyFrom(b []byte) (*dpopKey, error) {
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("stored DPoP key: %v", err)
	}
	priv, ok := jwk.Key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("stored DPoP key: %T, want an EC private key", jwk.Key)
	}
	return &dpopKey{priv: priv, nonces: map[string]string{}}, nil
}

// marshal returns the private key as a JWK, for the encrypted store.
func (k *dpopKey) marshal() json.RawMessage {
	b, _ := jose.JSONWebKey{Key: k.priv, Algorithm: string(jose.ES256)}.MarshalJSON()
	return b
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// proof returns a DPoP proof for a request (RFC 9449 §4.2); token, if
// not empty, is bound by its hash (ath).
func (k *dpopKey) proof(method string, u *url.URL, token string) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k.priv},
		(&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		return "", err
	}
	htu := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path} // no query, no fragment
	claims := map[string]any{"jti": rand.Text(), "htm": method, "htu": htu.String(), "iat": time.Now().Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	k.mu.Lock()
	if n := k.nonces[origin(u)]; n != "" {
		claims["nonce"] = n
	}
	k.mu.Unlock()
	return jwt.Signed(signer).Claims(claims).Serialize()
}

// noteNonce keeps the DPoP-Nonce of resp, if any, for its origin, and
// reports whether there was a new one.
func (k *dpopKey) noteNonce(resp *http.Response) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" || resp.Request == nil {
		return false
	}
	o := origin(resp.Request.URL)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.nonces[o] == n {
		return false
	}
	k.nonces[o] = n
	return true
}

// wantsNonce reports whether resp asks for a DPoP nonce: a token
// endpoint's 400 (or a server's 401) with error use_dpop_nonce.
func wantsNonce(resp *http.Response) bool {
	if resp.Header.Get("DPoP-Nonce") == "" {
		return false
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		for _, ch := range chs {
			if ch.Params["error"] == "use_dpop_nonce" {
				return true
			}
		}
	case http.StatusBadRequest:
		return true // the token endpoint: the body says use_dpop_nonce
	}
	return false
}

// dpopTokenTransport adds proofs to the token requests of a client that
// uses DPoP (the code exchange, refreshes), and resends a request once
// with the nonce the authorization server asks for.
type dpopTokenTransport struct {
	c    *Client
	base http.RoundTripper
}

func (t *dpopTokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := t.c.dpopKey()
	if key == nil || req.Method != http.MethodPost || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || req.Body == nil {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if form, err := url.ParseQuery(string(body)); err != nil || form.Get("grant_type") == "" {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		return t.base.RoundTrip(r)
	}
	send := func() (*http.Response, error) {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		p, err := key.proof(http.MethodPost, req.URL, "")
		if err != nil {
			return nil, fmt.Errorf("DPoP proof: %v", err)
		}
		r.Header.Set("DPoP", p)
		return t.base.RoundTrip(r)
	}
	resp, err := send()
	if err != nil {
		return nil, err
	}
	if key.noteNonce(resp) && wantsNonce(resp) {
		drain(resp)
		return send()
	}
	return resp, nil
}

// usesDPoP reports whether a challenge names the DPoP scheme.
func usesDPoP(resp *http.Response) bool {
	chs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	for _, ch := range chs {
		if ch.Scheme == "dpop" {
			return true
		}
	}
	return false
}
