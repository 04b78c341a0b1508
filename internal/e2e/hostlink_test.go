package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestModernCallsLogAndProgressThroughHub: a 2026-07-28 host over HTTP,
// which has no session, names its own log level and asks for progress in
// calls to a stdio upstream (a junction serving the conformance pack,
// spoken to at 2026-07-28 and at 2025-11-25). The upstream's log messages
// at that level or above, and its progress under the host's token, come
// on the call's response before the answer; every call takes the data
// plane's path (junction_tool_calls_raw_total).
func TestModernCallsLogAndProgressThroughHub(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
		t.Run("upstream-"+protocol, func(t *testing.T) {
			t.Parallel()
			url := startServe(t, "-config", hubConfig(t, "never", protocol), "-insecure-no-auth")
			waitForTool(t, url, "test_tool_with_logging")
			for _, tc := range []struct {
				tool, meta string
				want       []string
			}{
				{"test_tool_with_logging", `"io.modelcontextprotocol/logLevel":"info"`,
					[]string{"info Tool execution started", "info Tool processing data", "info Tool execution completed"}},
				{"test_tool_with_logging", `"io.modelcontextprotocol/logLevel":"error"`, nil},
				{"test_tool_with_progress", `"progressToken":"host-token"`,
					[]string{"progress host-token 0", "progress host-token 50", "progress host-token 100"}},
			} {
				got, answered := postModern(t, url, tc.tool, tc.meta)
				if !answered {
					t.Errorf("%s with %s: no answer; got %q", tc.tool, tc.meta, got)
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s with %s: before the answer the host got %q, want %q", tc.tool, tc.meta, got, tc.want)
				}
			}
			if raw, all := rawCalls(t, url, ""), packCalls(t, url, ""); raw != 3 || all != 3 {
				t.Errorf("%d of %d calls took the data plane's path; want 3 of 3", raw, all)
			}
		})
	}
}

// postModern POSTs a 2026-07-28 tools/call of tool, with meta added to
// its _meta, to the hub at url, and returns the notifications that came
// before the answer ("LEVEL DATA" for a log message, "progress TOKEN
// PROGRESS" for progress) and whether the answer was a result.
func postModern(t *testing.T, url, tool, meta string) (got []string, answered bool) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},` + meta + `}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	record := func(data []byte) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Params struct {
				Level         string  `json:"level"`
				Data          any     `json:"data"`
				ProgressToken any     `json:"progressToken"`
				Progress      float64 `json:"progress"`
			} `json:"params"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Errorf("%s: a message that is not JSON: %q", tool, data)
			return
		}
		switch {
		case m.ID != nil:
			answered = m.Result != nil && !answered
		case m.Method == "notifications/message":
			got = append(got, fmt.Sprint(m.Params.Level, " ", m.Params.Data))
		case m.Method == "notifications/progress":
			got = append(got, fmt.Sprint("progress ", m.Params.ProgressToken, " ", m.Params.Progress))
		default:
			t.Errorf("%s: unexpected message %s", tool, data)
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if err := readSSEEvents(resp.Body, record); err != nil {
			t.Fatal(err)
		}
	} else {
		var b json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
			t.Fatalf("%s: %s answer: %v", tool, resp.Status, err)
		}
		record(b)
	}
	return got, answered
}
