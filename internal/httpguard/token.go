package httpguard

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// Tokens are the API tokens a server accepts. Presented tokens are
// compared as SHA-256 digests in constant time, so that neither a token's
// content nor its length leaks through timing. The zero value accepts
// nothing.
type Tokens struct {
	digests [][32]byte
}

// NewTokens returns the set of accepted tokens; empty ones are left out.
func NewTokens(tokens ...string) Tokens {
	var t Tokens
	for _, s := range tokens {
		if s != "" {
			t.digests = append(t.digests, sha256.Sum256([]byte(s)))
		}
	}
	return t
}

// Empty reports whether no token is accepted (a server without auth).
func (t Tokens) Empty() bool { return len(t.digests) == 0 }

// Match reports whether presented is one of the tokens. Every token is
// compared, whichever matches.
func (t Tokens) Match(presented string) bool {
	_, ok := t.Check(presented)
	return ok
}

// Check is [Tokens.Match] that also names who presented the token: user
// is "token:" and the first 8 bytes of the token's SHA-256 digest in hex,
// the same for the same token on every replica, and saying nothing of the
// token itself. Sessions are bound to it (docs/security.md).
func (t Tokens) Check(presented string) (user string, ok bool) {
	if presented == "" {
		return "", false
	}
	got := sha256.Sum256([]byte(presented))
	match := 0
	for i := range t.digests {
		match |= subtle.ConstantTimeCompare(got[:], t.digests[i][:])
	}
	if match != 1 {
		return "", false
	}
	return "token:" + hex.EncodeToString(got[:8]), true
}

// Bearer returns the token of r's "Authorization: Bearer <token>" header
// (the scheme in any case), or "".
func Bearer(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}
