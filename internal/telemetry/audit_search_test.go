package telemetry_test

import (
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAuditSearchLine: a search_tools call is an audit line with its
// query and the number of tools matched, even with arguments off.
func TestAuditSearchLine(t *testing.T) {
	var buf syncBuffer
	a := telemetry.NewAudit(&buf, telemetry.AuditOptions{})
	h := junction.New(&junction.Options{Observe: a.Observe})
	t.Cleanup(func() { h.Close() })
	if err := h.Add(t.Context(), "src", &fakeSource{call: answer(okResult, nil)}, nil); err != nil {
		t.Fatal(err)
	}
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, v).CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "op"}}); err != nil {
		t.Fatal(err)
	}
	lines := buf.lines(t)
	if len(lines) != 1 {
		t.Fatalf("%d audit lines, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l["tool"] != "search_tools" || l["source"] != junction.MetaSource || l["query"] != "op" || l["matched"] != float64(1) || l["outcome"] != "ok" || l["arguments"] != nil {
		t.Errorf("audit line = %v", l)
	}
}
