package httpguard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/httpguard"
)

func TestTokens(t *testing.T) {
	ts := httpguard.NewTokens("one", "", "two-longer")
	for _, tc := range []struct {
		presented string
		want      bool
	}{{"one", true}, {"two-longer", true}, {"", false}, {"on", false}, {"one ", false}, {"ONE", false}, {"two", false}} {
		if got := ts.Match(tc.presented); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.presented, got, tc.want)
		}
	}
	if ts.Empty() || !httpguard.NewTokens("").Empty() || (httpguard.Tokens{}).Match("x") {
		t.Error("Empty, or the zero value, is wrong")
	}
	for h, want := range map[string]string{"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "": ""} {
		r, _ := http.NewRequest("GET", "http://x/", nil)
		r.Header.Set("Authorization", h)
		if got := httpguard.Bearer(r); got != want {
			t.Errorf("Bearer(%q) = %q, want %q", h, got, want)
		}
	}
}

// Check names the holder of a token after the token, the same every time
// and for no other token, and nobody for a refused one.
func TestTokensCheck(t *testing.T) {
	ts := httpguard.NewTokens("one", "two-longer")
	u1, ok1 := ts.Check("one")
	again, _ := ts.Check("one")
	u2, ok2 := ts.Check("two-longer")
	if !ok1 || !ok2 || u1 != again || u1 == u2 || !strings.HasPrefix(u1, "token:") || strings.Contains(u1, "one") {
		t.Errorf("Check: %q %v, %q %v, again %q", u1, ok1, u2, ok2, again)
	}
	if u, ok := ts.Check("three"); ok || u != "" {
		t.Errorf("Check of a refused token: %q %v", u, ok)
	}
}
