package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAuditLineOverMaxSize: through "junction serve", a call whose audit
// line (with its arguments) is over the audit file's max_size_mb is
// written without the arguments, marked arguments_truncated, and counted
// in junction_audit_lines_total; before, lumberjack refused the write and
// the line was lost without a word.
func TestAuditLineOverMaxSize(t *testing.T) {
	t.Parallel()
	const token = "audit-limit-token"
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf("audit:\n  output: %s\n  max_size_mb: 1\n  arguments: true\n", audit))
	p := startServer(t, "-config", cfg, "-token", token)
	cs := connectHTTP(t, p.URL, token)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	blob := strings.Repeat("x", 3<<19) // 1.5 MiB
	for _, args := range []map[string]any{{"blob": blob}, {"small": 1}} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "junction_version", Arguments: args}); err != nil || res.IsError {
			t.Fatalf("junction_version: %v %v", res, err)
		}
	}
	var lines []map[string]any
	waitFor(t, "two audit lines", 10*time.Second, func() bool {
		b, _ := os.ReadFile(audit)
		lines = lines[:0]
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				lines = append(lines, m)
			}
		}
		return len(lines) == 2
	})
	big, small := lines[0], lines[1]
	if _, has := big["arguments"]; has || big["arguments_truncated"] != true || big["line_bytes"].(float64) <= float64(len(blob)) {
		t.Errorf("the big call's line = %v; want no arguments, arguments_truncated, line_bytes over %d", big, len(blob))
	}
	if small["arguments_truncated"] != nil || small["arguments"] == nil {
		t.Errorf("the small call's line = %v; want it whole", small)
	}
	m := httpDo(t, http.MethodGet, strings.TrimSuffix(p.URL, "/mcp")+"/metrics", token, nil)
	for _, want := range []string{`junction_audit_lines_total{result="truncated"} 1`, `junction_audit_lines_total{result="written"} 1`} {
		if !strings.Contains(m.body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
