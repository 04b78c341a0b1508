package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawHTTPUpstream is a minimal hand-written Streamable HTTP server that
// answers tools/call with content of a type go-sdk does not know, as JSON
// or (sse) as an event stream.
func rawHTTPUpstream(sse bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil || msg.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var body string
		switch msg.Method {
		case "initialize":
			body = `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"rawhttp","version":"0"}}`
		case "tools/list":
			body = `"result":{"tools":[{"name":"widget","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			body = `"result":{"content":[{"type":"text","text":"before"},{"type":"widget","spin":3}]}`
		default:
			body = `"error":{"code":-32601,"message":"method not found"}`
		}
		out := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,%s}`, msg.ID, body)
		if sse && msg.Method == "tools/call" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, ": a comment\nevent: message\nid: 7\ndata: %s\n\n", out)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, out)
	})
}

func TestUnknownContentOverHTTP(t *testing.T) {
	t.Parallel()
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(rawHTTPUpstream(sse))
			t.Cleanup(ts.Close)
			r, logs := newRegistry(t, &Options{MinBackoff: time.Hour})
			s := addReady(t, r, "w", Config{URL: ts.URL})
			res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "widget"}})
			if err != nil {
				t.Fatalf("CallTool(widget) = %v", err)
			}
			if got := resultText(t, res); got != `before[unsupported content type "widget"]` {
				t.Errorf("result text = %q", got)
			}
			if !strings.Contains(logs.String(), "replaced content blocks of unknown type") {
				t.Error("replacement not logged")
			}
		})
	}
}
