package upstream

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestURLQuerySecretHidden: an upstream URL with a key in its query
// reaches the upstream whole, and no error, log line or snapshot shows
// the key.
func TestURLQuerySecretHidden(t *testing.T) {
	t.Parallel()
	const secret = "q-s3cret-value"
	server := newGoServer(t)
	handlers := map[Transport]http.Handler{
		TransportStreamableHTTP: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil),
		TransportSSE:            mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil),
	}
	for kind, h := range handlers {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			// The SSE message endpoint go-sdk names carries its own query,
			// not the key: only requests for the configured URL need it.
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("sessionid") == "" && r.URL.Query().Get("api_key") != secret {
					http.Error(w, "unauthorized: api_key is "+r.URL.Query().Get("api_key"), http.StatusUnauthorized)
					return
				}
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			r, logs := newRegistry(t, &Options{MinBackoff: time.Hour})
			s := addReady(t, r, "h", Config{Transport: kind, URL: ts.URL + "/mcp?api_key=" + secret + "&region=eu"})
			res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"a":1}`)}})
			if err != nil || resultText(t, res) != `{"a":1}` {
				t.Errorf("CallTool(echo) over %s = %v, %v", kind, res, err)
			}

			// An upstream that cannot be reached: go-sdk's error names the
			// URL, with the values hidden.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			gone := "http://" + ln.Addr().String() + "/mcp?api_key=" + secret
			ln.Close()
			b, err := r.Add("gone", Config{Transport: kind, URL: gone})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil {
				t.Fatal("WaitReady on a closed port succeeded")
			}
			snap := b.Snapshot()
			if strings.Contains(snap.LastError, secret) || !strings.Contains(snap.LastError, "api_key=xxxxx") {
				t.Errorf("last error %q: want the URL with api_key=xxxxx, not the key", snap.LastError)
			}
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log shows the key:\n%s", logs.String())
			}
		})
	}
}
