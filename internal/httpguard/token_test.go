package httpguard_test

import (
	"net/http"
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
