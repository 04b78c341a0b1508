package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"testing"

	"github.com/junction-mcp/junction/internal/httpguard"
	"github.com/junction-mcp/junction/internal/statuspage"
)

func TestHostOriginChecks(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := checkHostOrigin(ok, "10.0.0.5", []string{"hub.example.com"}, []string{"https://app.example.com"})
	// Twice: the handler remembers the last Host it allowed, so the second
	// pass meets each case with another one's Host remembered.
	for pass := range 2 {
		for _, tc := range []struct {
			host, origin string
			want         int
		}{
			{"127.0.0.1:7331", "", 200},
			{"localhost:7331", "http://localhost:3000", 200},
			{"[::1]:7331", "", 200},
			{"10.0.0.5:7331", "", 200},                                      // the listen host
			{"hub.example.com", "https://app.example.com", 200},             // -allowed-host, -allowed-origin
			{"hub.example.com", "https://hub.example.com", 200},             // same origin as the request
			{"evil.example.com", "", 403},                                   // DNS rebinding
			{"hub.example.com", "https://evil.example.com", 403},            // foreign origin
			{"127.0.0.1:7331", "null", 403},                                 // opaque origin
			{"127.0.0.1.evil.example.com", "", 403},                         // looks loopback, is not
			{"hub.example.com.", "", 403},                                   // not the configured name
			{"127.0.0.1:7331", "http://127.0.0.1.evil.example.com:80", 403}, // origin that only looks loopback
		} {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tc.want {
				t.Errorf("pass %d: Host %q Origin %q: HTTP %d, want %d", pass, tc.host, tc.origin, rec.Code, tc.want)
			}
		}
	}
}

func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	tokens := httpguard.NewTokens("first-token", "second")
	h := requireToken(ok, tokens, statuspage.NewAuth(tokens))
	for _, tc := range []struct {
		name, header, value string
		want                int
	}{
		{"bearer", "Authorization", "Bearer first-token", 200},
		{"bearer any case", "Authorization", "bearer second", 200},
		{"api key", "X-API-Key", "second", 200},
		{"none", "", "", 401},
		{"wrong", "Authorization", "Bearer first-tokeN", 401},
		{"prefix of a token", "X-API-Key", "first", 401},
		{"longer than a token", "X-API-Key", "first-token-and-more", 401},
		{"basic auth", "Authorization", "Basic Zmlyc3QtdG9rZW4=", 401},
	} {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if tc.header != "" {
			r.Header.Set(tc.header, tc.value)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != tc.want {
			t.Errorf("%s: HTTP %d, want %d", tc.name, rec.Code, tc.want)
		}
		if rec.Code == 401 && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
}

// The /mcp handler reads ProfileHeader by map key, as net/http stores it.
func TestProfileHeaderCanonical(t *testing.T) {
	if c := textproto.CanonicalMIMEHeaderKey(ProfileHeader); c != ProfileHeader {
		t.Fatalf("ProfileHeader %q is not canonical: net/http stores it as %q", ProfileHeader, c)
	}
}

// TestByPath: the MCP endpoint's requests reach its handler without the
// mux, and every other request, one whose path only looks like it
// (escaped, or with more after it) among them, goes through the mux as
// before.
func TestByPath(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "mux /mcp") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "mux /") })
	h := byPath("/mcp", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "direct") }), mux)
	for _, c := range []struct{ method, target, want string }{
		{http.MethodPost, "/mcp", "direct"},
		{http.MethodGet, "/mcp?x=1", "direct"},
		{http.MethodPost, "/%6Dcp", "mux /mcp"},
		{http.MethodPost, "/mcp/", "mux /"},
		{http.MethodPost, "/mcpx", "mux /"},
		{http.MethodPost, "/", "mux /"},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(c.method, c.target, nil))
		if got := w.Body.String(); got != c.want {
			t.Errorf("%s %s: served by %q, want %q", c.method, c.target, got, c.want)
		}
	}
}
