package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestConnectHints: a refused connection says what to do: a 401 without a
// token asks for one, with a token says it was refused, and a 4xx from a
// path ending in /sse points at -transport sse.
func TestConnectHints(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/sse") {
			http.Error(w, "Bad Request", http.StatusBadRequest)
			return
		}
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "list", "-url", srv.URL + "/mcp"}, "the server wants a token; give it with -token or JUNCTION_TOKEN"},
		{[]string{"tools", "list", "-url", srv.URL + "/mcp", "-token", "x"}, "the server refused the token; check -token or JUNCTION_TOKEN"},
		{[]string{"tools", "list", "-url", srv.URL + "/sse"}, "/sse looks like a legacy SSE endpoint; add -transport sse"},
	} {
		_, errOut, code := run(t, nil, tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("junction %q: exit %d, stderr %q; want exit 1 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
