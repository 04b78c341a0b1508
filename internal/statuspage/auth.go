package statuspage

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// CookieName is the browser session cookie that [Auth] sets.
const CookieName = "junction_session"

// Defaults for [Auth].
const (
	// SessionTTL is how long a browser login lasts.
	SessionTTL = 12 * time.Hour
	// MaxSessions bounds the browser logins kept; past it the one that
	// expires first is dropped.
	MaxSessions = 1000
	// maxLoginBody bounds a POST /login body.
	maxLoginBody = 4 << 10
)

// Auth turns an API token into a browser session: a login form (GET and
// POST /login) checks the token and sets a cookie holding a random
// session id, never the token; [Auth.Valid] accepts the cookie; POST
// /logout ends the session. Session ids are kept in memory as SHA-256
// digests, so a restart logs every browser out and a map lookup's timing
// says nothing about an id. POSTs are refused unless their Origin (or,
// without one, their Referer) is the server itself, or one of the origins
// it was given (the public address of a reverse proxy that does not pass
// the Host on): with the cookie's SameSite=Strict, no other site can log a
// browser in or out.
//
// Failed logins are limited per remote address and in all (see
// [LoginBurst]): past the limits a login is answered 429 with
// Retry-After, without its token being looked at. Tokens are compared in
// constant time (httpguard.Tokens). Each failed login is logged as a
// warning with its remote address; the logins refused by the limits are
// summed up in one warning every ten seconds at most, so that a flood
// of guesses does not flood the log.
type Auth struct {
	// Logger gets the warnings about failed and refused logins; nil
	// logs nothing. Set it before serving.
	Logger *slog.Logger

	tokens  httpguard.Tokens
	origins []string // scheme://host[:port], lower case
	ttl     time.Duration
	now     func() time.Time
	limit   *loginLimiter

	mu       sync.Mutex
	sessions map[[32]byte]time.Time // digest of the id -> expiry
}

// NewAuth returns the login for a server that accepts tokens. A POST
// from one of origins (scheme://host[:port]) counts as the server's own;
// "*" is not taken to mean every origin here.
func NewAuth(tokens httpguard.Tokens, origins ...string) *Auth {
	a := &Auth{tokens: tokens, ttl: SessionTTL, now: time.Now, limit: newLoginLimiter(), sessions: map[[32]byte]time.Time{}}
	for _, o := range origins {
		if o != "*" {
			a.origins = append(a.origins, strings.ToLower(strings.TrimRight(o, "/")))
		}
	}
	return a
}

// Valid reports whether r carries the cookie of a live session.
func (a *Auth) Valid(r *http.Request) bool {
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return false
	}
	key := sha256.Sum256([]byte(c.Value))
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.sessions[key]
	if !ok {
		return false
	}
	if !a.now().Before(exp) {
		delete(a.sessions, key)
		return false
	}
	return true
}

// newSession records a new session and returns its id.
func (a *Auth) newSession() string {
	b := make([]byte, 32)
	rand.Read(b)
	id := hex.EncodeToString(b)
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, exp := range a.sessions {
		if !now.Before(exp) {
			delete(a.sessions, k)
		}
	}
	for len(a.sessions) >= MaxSessions {
		var oldest [32]byte
		var first time.Time
		for k, exp := range a.sessions {
			if first.IsZero() || exp.Before(first) {
				oldest, first = k, exp
			}
		}
		delete(a.sessions, oldest)
	}
	a.sessions[sha256.Sum256([]byte(id))] = now.Add(a.ttl)
	return id
}

// Sessions returns how many browser sessions are live.
func (a *Auth) Sessions() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// Login serves GET /login (the form) and POST /login (the token, as the
// form field "token"; a good one sets the cookie and redirects to /).
func (a *Auth) Login(w http.ResponseWriter, r *http.Request) {
	if tokenInURL(r) {
		// Never read it, and say so: a token in a URL ends up in
		// histories, logs and Referer headers.
		writeLogin(w, http.StatusBadRequest, "A token is never accepted in a URL. Type it in the form below, and replace it if that URL was shared or logged.")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if a.Valid(r) {
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		writeLogin(w, http.StatusOK, "")
	case http.MethodPost:
		if !a.sameOrigin(r) {
			writeLogin(w, http.StatusForbidden, "Refused: this login did not come from this server's own form (its Origin or Referer is missing or another site's).")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
		if err := r.ParseForm(); err != nil {
			writeLogin(w, http.StatusBadRequest, "The form could not be read: "+err.Error())
			return
		}
		key := limitKey(r.RemoteAddr)
		try, wait, ok := a.limit.take(a.now(), key)
		if !ok {
			a.refused(r)
			secs := retryAfter(wait)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeLogin(w, http.StatusTooManyRequests, fmt.Sprintf("Too many failed logins. Try again in %d s.", secs))
			return
		}
		if !a.tokens.Match(r.PostForm.Get("token")) {
			a.warn("status page login failed: invalid token", "remote", r.RemoteAddr)
			writeLogin(w, http.StatusUnauthorized, "Invalid token. Use a token junction accepts: -token, -token-file, JUNCTION_TOKEN, or the one it printed on start.")
			return
		}
		try.giveBack(a.now())
		http.SetCookie(w, &http.Cookie{
			Name:     CookieName,
			Value:    a.newSession(),
			Path:     "/",
			MaxAge:   int(a.ttl / time.Second),
			HttpOnly: true,
			Secure:   overTLS(r),
			SameSite: http.SameSiteStrictMode,
		})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed: use GET or POST", http.StatusMethodNotAllowed)
	}
}

// refused notes a login the limits refused, and now and then logs how
// many were.
func (a *Auth) refused(r *http.Request) {
	if n, warn := a.limit.refusal(a.now()); warn {
		a.warn("status page logins refused: too many failed logins", "refused", n, "last_remote", r.RemoteAddr,
			"limits", fmt.Sprintf("%d at once and %g/s per address, %d and %g/s in all", LoginBurst, LoginRate, GlobalLoginBurst, GlobalLoginRate))
	}
}

func (a *Auth) warn(msg string, args ...any) {
	if a.Logger != nil {
		a.Logger.Warn(msg, args...)
	}
}

// Logout serves POST /logout: it ends the session of the cookie, clears
// the cookie and redirects to /login.
func (a *Auth) Logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: log out with POST (the page's Log out button)", http.StatusMethodNotAllowed)
		return
	}
	if !a.sameOrigin(r) {
		http.Error(w, "forbidden: this logout did not come from this server's own page (its Origin or Referer is missing or another site's)", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(CookieName); err == nil {
		key := sha256.Sum256([]byte(c.Value))
		a.mu.Lock()
		delete(a.sessions, key)
		a.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// tokenInURL reports whether r's query names a token or key, which
// nothing here accepts.
func tokenInURL(r *http.Request) bool {
	for k := range r.URL.Query() {
		switch strings.ToLower(k) {
		case "token", "access_token", "api_key", "apikey", "key":
			return true
		}
	}
	return false
}

// sameOrigin reports whether a POST comes from a page of this server: its
// Origin, or without one its Referer, names r's own Host or is one of
// a.origins.
func (a *Auth) sameOrigin(r *http.Request) bool {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" || src == "null" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || slices.Contains(a.origins, strings.ToLower(u.Scheme+"://"+u.Host))
}

// overTLS reports whether the browser reached the server over HTTPS:
// directly, or through a proxy that says so.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}
