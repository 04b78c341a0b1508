package config

import (
	"strings"
	"testing"
)

// TestHTTPPublicURL: http.public_url is read (with ${...} expanded), and
// config check refuses anything but an absolute http(s) URL without
// user information, query or fragment, naming the key and its line.
func TestHTTPPublicURL(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"https://hub.example.com", "https://hub.example.com/", "http://10.0.0.7:8080",
		"https://example.com/junction/", "https://[::1]:7331"} {
		c, err := Parse(strings.NewReader("http:\n  public_url: ${URL}\n"), "yaml", mapEnv(map[string]string{"URL": ok}))
		if err != nil {
			t.Errorf("public_url %q: %v", ok, err)
			continue
		}
		if c.HTTP.PublicURL != ok {
			t.Errorf("public_url %q read as %q", ok, c.HTTP.PublicURL)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"hub.example.com", `line 2: http.public_url: "hub.example.com": want an absolute http:// or https:// URL`},
		{"/auth", `line 2: http.public_url: "/auth": want an absolute http:// or https:// URL`},
		{"ftp://hub.example.com", `line 2: http.public_url: "ftp://hub.example.com": want an absolute http:// or https:// URL`},
		{"https://", `line 2: http.public_url: "https://": names no host`},
		{"https://:443/", `line 2: http.public_url: "https://:443/": names no host`},
		{"https://a:b@hub.example.com", `must not hold a user name or password`},
		{"https://hub.example.com/?x=1", `line 2: http.public_url: "https://hub.example.com/?x=1": must not have a query`},
		{"https://hub.example.com/?", `must not have a query`},
		{"https://hub.example.com/#top", `line 2: http.public_url: "https://hub.example.com/#top": must not have a fragment`},
		{"https://hub.example.com/#", `must not have a fragment`},
		{"https://hub example.com", `http.public_url: "https://hub example.com": not a URL`},
	} {
		_, err := Parse(strings.NewReader("http:\n  public_url: '"+tt.in+"'\n"), "yaml", mapEnv(nil))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("public_url %q: %v; want an error with %q", tt.in, err, tt.want)
		}
	}
}
