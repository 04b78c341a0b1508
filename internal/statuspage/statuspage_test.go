package statuspage

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
)

func TestRing(t *testing.T) {
	r := NewRing[int](3)
	if got := r.List(); len(got) != 0 {
		t.Fatalf("empty ring lists %v", got)
	}
	r.Add(1)
	r.Add(2)
	if got := r.List(); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("List() = %v, want [2 1]", got)
	}
	for i := 3; i <= 7; i++ {
		r.Add(i)
	}
	if got := r.List(); !slices.Equal(got, []int{7, 6, 5}) {
		t.Errorf("after 7 adds, List() = %v, want the last three, newest first", got)
	}
}

// login posts the form as a browser on host would, and returns the answer.
func login(a *Auth, token, origin string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "http://127.0.0.1:7331/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	rec := httptest.NewRecorder()
	a.Login(rec, r)
	return rec
}

func sessionCookie(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie in %d answer %v", CookieName, rec.Code, rec.Header())
	return nil
}

func withCookie(c *http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", "http://127.0.0.1:7331/", nil)
	r.AddCookie(c)
	return r
}

func TestLogin(t *testing.T) {
	const token = "s3cret-token-value"
	a := NewAuth(httpguard.NewTokens(token))

	rec := httptest.NewRecorder()
	a.Login(rec, httptest.NewRequest("GET", "http://127.0.0.1:7331/login", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `<form method="post" action="/login">`) {
		t.Fatalf("GET /login = %d %q, want the form", rec.Code, rec.Body.String())
	}
	if csp := rec.Header().Get("Content-Security-Policy"); csp != CSP {
		t.Errorf("CSP = %q, want %q", csp, CSP)
	}

	rec = login(a, token, "http://127.0.0.1:7331")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
		t.Fatalf("login = %d to %q, want 303 to /", rec.Code, rec.Header().Get("Location"))
	}
	c := sessionCookie(t, rec)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", c)
	}
	if strings.Contains(c.Value, token) || len(c.Value) < 32 {
		t.Errorf("cookie value %q: want a long random id, not the token", c.Value)
	}
	if !a.Valid(withCookie(c)) {
		t.Error("the new cookie is not accepted")
	}
	if a.Valid(withCookie(&http.Cookie{Name: CookieName, Value: token})) {
		t.Error("the token itself is accepted as a cookie")
	}
	if a.Valid(withCookie(&http.Cookie{Name: CookieName, Value: c.Value + "0"})) {
		t.Error("a changed cookie is accepted")
	}

	// A browser that reached junction over TLS (a proxy in front) gets a
	// Secure cookie.
	r := httptest.NewRequest("POST", "http://127.0.0.1:7331/login", strings.NewReader("token="+token))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "https://127.0.0.1:7331")
	r.Header.Set("X-Forwarded-Proto", "https")
	rec = httptest.NewRecorder()
	a.Login(rec, r)
	if c := sessionCookie(t, rec); !c.Secure {
		t.Error("login over https: cookie not Secure")
	}
}

func TestLoginRefusals(t *testing.T) {
	const token = "s3cret-token-value"
	a := NewAuth(httpguard.NewTokens(token))
	for _, tc := range []struct {
		name, token, origin string
		want                int
	}{
		{"wrong token", "s3cret-token-valuE", "http://127.0.0.1:7331", http.StatusUnauthorized},
		{"empty token", "", "http://127.0.0.1:7331", http.StatusUnauthorized},
		{"another site", token, "https://evil.example", http.StatusForbidden},
		{"another port on the same host", token, "http://127.0.0.1:9999", http.StatusForbidden},
		{"no origin and no referer", token, "", http.StatusForbidden},
		{"opaque origin", token, "null", http.StatusForbidden},
	} {
		rec := login(a, tc.token, tc.origin)
		if rec.Code != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, rec.Code, tc.want)
		}
		for _, c := range rec.Result().Cookies() {
			t.Errorf("%s: a cookie was set: %v", tc.name, c)
		}
	}
	if n := a.Sessions(); n != 0 {
		t.Errorf("%d sessions after refused logins, want 0", n)
	}

	// The public origin of a proxy that passes another Host on, when the
	// server was told it (-allowed-origin); "*" does not open the login.
	proxied := NewAuth(httpguard.NewTokens(token), "https://hub.example.com/", "*")
	if rec := login(proxied, token, "https://hub.example.com"); rec.Code != http.StatusSeeOther {
		t.Errorf("login from an allowed origin = %d, want 303", rec.Code)
	}
	if rec := login(proxied, token, "https://evil.example"); rec.Code != http.StatusForbidden {
		t.Errorf("login from another origin with \"*\" allowed = %d, want 403", rec.Code)
	}

	// A Referer from the server's own page does for a browser that sends
	// no Origin.
	r := httptest.NewRequest("POST", "http://127.0.0.1:7331/login", strings.NewReader("token="+token))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Referer", "http://127.0.0.1:7331/login")
	rec := httptest.NewRecorder()
	a.Login(rec, r)
	if rec.Code != http.StatusSeeOther {
		t.Errorf("login with a same-origin Referer = %d, want 303", rec.Code)
	}
}

func TestNoTokenInURL(t *testing.T) {
	const token = "s3cret-token-value"
	a := NewAuth(httpguard.NewTokens(token))
	for _, target := range []string{"/login?token=" + token, "/login?access_token=" + token, "/login?api_key=x"} {
		for _, method := range []string{"GET", "POST"} {
			r := httptest.NewRequest(method, "http://127.0.0.1:7331"+target, strings.NewReader(""))
			r.Header.Set("Origin", "http://127.0.0.1:7331")
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			rec := httptest.NewRecorder()
			a.Login(rec, r)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "never accepted in a URL") {
				t.Errorf("%s %s = %d %q, want 400 saying a token is never accepted in a URL", method, target, rec.Code, rec.Body.String())
			}
			if len(rec.Result().Cookies()) > 0 {
				t.Errorf("%s %s set a cookie", method, target)
			}
		}
	}
}

func TestLogout(t *testing.T) {
	const token = "s3cret-token-value"
	a := NewAuth(httpguard.NewTokens(token))
	c := sessionCookie(t, login(a, token, "http://127.0.0.1:7331"))

	// Not from this server's page: refused, the session lives on.
	r := httptest.NewRequest("POST", "http://127.0.0.1:7331/logout", nil)
	r.AddCookie(c)
	r.Header.Set("Origin", "https://evil.example")
	rec := httptest.NewRecorder()
	a.Logout(rec, r)
	if rec.Code != http.StatusForbidden || !a.Valid(withCookie(c)) {
		t.Fatalf("cross-site logout = %d (session valid %v), want 403 and the session kept", rec.Code, a.Valid(withCookie(c)))
	}
	// GET does not log out (a link or an image could).
	r = httptest.NewRequest("GET", "http://127.0.0.1:7331/logout", nil)
	r.AddCookie(c)
	rec = httptest.NewRecorder()
	a.Logout(rec, r)
	if rec.Code != http.StatusMethodNotAllowed || !a.Valid(withCookie(c)) {
		t.Fatalf("GET /logout = %d, want 405 and the session kept", rec.Code)
	}

	r = httptest.NewRequest("POST", "http://127.0.0.1:7331/logout", nil)
	r.AddCookie(c)
	r.Header.Set("Origin", "http://127.0.0.1:7331")
	rec = httptest.NewRecorder()
	a.Logout(rec, r)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Fatalf("logout = %d to %q, want 303 to /login", rec.Code, rec.Header().Get("Location"))
	}
	if a.Valid(withCookie(c)) {
		t.Error("the cookie is still accepted after logout")
	}
	if cleared := sessionCookie(t, rec); cleared.MaxAge >= 0 || cleared.Value != "" {
		t.Errorf("logout cookie %+v: want it cleared", cleared)
	}
}

func TestSessionExpiry(t *testing.T) {
	const token = "s3cret-token-value"
	a := NewAuth(httpguard.NewTokens(token))
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a.now = func() time.Time { return now }
	c := sessionCookie(t, login(a, token, "http://127.0.0.1:7331"))
	now = now.Add(SessionTTL - time.Second)
	if !a.Valid(withCookie(c)) {
		t.Fatal("session refused before its expiry")
	}
	now = now.Add(time.Second)
	if a.Valid(withCookie(c)) {
		t.Fatal("session accepted at its expiry")
	}
	if n := a.Sessions(); n != 0 {
		t.Errorf("%d sessions kept after expiry, want 0", n)
	}
}

func TestSessionBound(t *testing.T) {
	a := NewAuth(httpguard.NewTokens("t"))
	for range MaxSessions + 10 {
		a.newSession()
	}
	if n := a.Sessions(); n != MaxSessions {
		t.Errorf("%d sessions kept, want at most %d", n, MaxSessions)
	}
}

func TestWantsHTML(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                 false,
		"*/*":              false,
		"application/json": false,
		"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8": true,
		"text/plain, text/html;q=0.5":                                     true,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		if got := WantsHTML(r); got != want {
			t.Errorf("Accept %q: WantsHTML = %v, want %v", accept, got, want)
		}
	}
}

func TestRender(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := httptest.NewRecorder()
	Render(rec, Data{
		Version: "v1.2.3", Now: now, Started: now.Add(-time.Hour), Tools: 2, Logout: true,
		Sources: []Source{
			{Name: "fs", Kind: "upstream", State: "connected", PID: 4242, Since: now.Add(-90 * time.Second), Connects: 2,
				Tools: []Tool{{Name: "fs__read"}, {Name: "fs__write", Drift: "changed: description"}}, Drift: "1 changed"},
			{Name: "broken", Kind: "upstream", State: "failed", Error: `server exited: exit status 3 (last line on stderr: "<script>alert(1)</script>")`,
				ErrorAt: now.Add(-5 * time.Second), BackoffUntil: now.Add(2 * time.Second)},
		},
		Calls:   []Call{{Time: now, Tool: "fs__read", Source: "fs", DurationMS: 1.5, Outcome: "ok"}},
		Reloads: []Reload{{Time: now, Changes: "servers: added fs"}, {Time: now, Error: "refused: servers.x.command: required"}},
	})
	body := rec.Body.String()
	if rec.Code != 200 || rec.Header().Get("Content-Security-Policy") != CSP {
		t.Fatalf("Render: %d, CSP %q", rec.Code, rec.Header().Get("Content-Security-Policy"))
	}
	for _, want := range []string{
		"v1.2.3", `id="source-fs"`, "4242", "1m30s", "fs__write", "changed: description",
		"exit status 3", "&lt;script&gt;alert(1)&lt;/script&gt;", "next try in 2s",
		"1.50 ms", "servers: added fs", "refused: servers.x.command: required",
		"2 tools served", "<strong>fs</strong>: 2 tools", "<strong>broken</strong>: 0 tools",
		`href="/metrics"`, `href="/status"`, `action="/logout"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>") {
		t.Error("page carries an unescaped <script>")
	}
}

// TestRenderOne: one of a thing is counted in the singular.
func TestRenderOne(t *testing.T) {
	rec := httptest.NewRecorder()
	Render(rec, Data{Version: "v1", Now: time.Now(), Tools: 1,
		Sources: []Source{{Name: "core", Kind: "pack", State: "ready", Tools: []Tool{{Name: "junction_version"}}}}})
	body := rec.Body.String()
	for _, want := range []string{"1 tool served", "<strong>core</strong>: 1 tool<"} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "1 tools") {
		t.Errorf("page says \"1 tools\":\n%s", body)
	}
}

// TestRenderSandbox: a stdio source's sandbox level is a badge, its
// events a list under it, oldest first, with their text escaped.
func TestRenderSandbox(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := httptest.NewRecorder()
	Render(rec, Data{Version: "v1", Now: now,
		Sources: []Source{
			{Name: "core", Kind: "pack", State: "ready"},
			{Name: "files", Kind: "upstream", State: "connected", Sandbox: "strict", SandboxEvents: []SandboxEvent{
				{At: now.Add(-90 * time.Second), Text: "proxy: denied CONNECT evil.example:443"},
				{At: now.Add(-5 * time.Second), Text: `denied host "<img src=x onerror=alert(1)>.example"`},
			}},
			{Name: "plain", Kind: "upstream", State: "connected", Sandbox: "off"},
		}})
	body := rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("Render: %d", rec.Code)
	}
	for _, want := range []string{
		`id="sandbox-files" class="badge sandbox-strict"`, ">sandbox strict</span>",
		`id="sandbox-plain" class="badge sandbox-off"`, ">sandbox off</span>",
		"2 sandbox events",
		"2026-01-02 03:02:35Z (1m30s ago)", "proxy: denied CONNECT evil.example:443",
		"2026-01-02 03:04:00Z (5s ago)", "&lt;img src=x onerror=alert(1)&gt;.example",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "<img") {
		t.Error("page carries an event's unescaped <img>")
	}
	if strings.Contains(body, `id="sandbox-core"`) {
		t.Error("a pack has a sandbox badge")
	}
	if first, last := strings.Index(body, "evil.example:443"), strings.Index(body, "onerror"); first > last {
		t.Error("sandbox events not oldest first")
	}
}
