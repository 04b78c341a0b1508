package daemon

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/junction-mcp/junction/internal/oauth"
)

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A flood of refused tokens writes one short INFO line, not one per
// token (and never the token's own long values); opaque tokens the hub
// has no capacity to introspect are answered 503, not 401.
func TestFrontAuthRefusalFlood(t *testing.T) {
	t.Parallel()
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/jwks" {
			w.Write([]byte(`{"keys":[]}`))
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"active": false})
	}))
	defer idp.Close()
	r, err := oauth.NewResource(oauth.ResourceOptions{Issuer: "https://idp.example.com", Audience: "https://hub.example.com/mcp",
		JWKSURL: idp.URL + "/jwks", IntrospectionURL: idp.URL + "/introspect", IntrospectionClientID: "hub", IntrospectionClientSecret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	f := &FrontAuth{Resource: r}
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := f.front(http.NotFoundHandler(), http.NotFoundHandler(), nil, logger)
	long := strings.Repeat("k", 10_000)
	header := `{"alg":"ES256","kid":"` + long + `"}`
	statuses := map[int]int{}
	for i := range 200 {
		token := "opaque-" + fmt.Sprint(i)
		if i%2 == 0 { // a JWT with a long made-up kid
			token = b64(header) + "." + b64(`{"sub":"x"}`) + ".c2ln"
		}
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		statuses[w.Code]++
		if w.Code == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
			t.Error("503 without Retry-After")
		}
	}
	if statuses[http.StatusServiceUnavailable] == 0 || statuses[http.StatusUnauthorized] == 0 {
		t.Errorf("statuses %v: want 401s and, once introspection is at its limit, 503s", statuses)
	}
	if n := strings.Count(logs.String(), "access token refused"); n != refusalBurst {
		t.Errorf("%d INFO lines for 200 refused tokens at once, want %d:\n%.2000s", n, refusalBurst, logs.String())
	}
	if len(logs.String()) > 2000 {
		t.Errorf("%d bytes of log for 200 refused tokens, want under 2000", len(logs.String()))
	}
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
