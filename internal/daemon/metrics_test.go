package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
)

// ObserveCall counts a call in its tool's series: the calls by outcome,
// the latency, the raw calls and the errors, and only in the series that
// counted (a tool whose calls all failed has no "ok" series).
func TestObserveCallSeries(t *testing.T) {
	m := NewMetrics()
	for range 2 {
		m.ObserveCall(junction.CallInfo{Source: "up", Tool: "fine", Outcome: "ok", Raw: true, Duration: time.Millisecond})
	}
	m.ObserveCall(junction.CallInfo{Source: "up", Tool: "broken", Outcome: "tool_error", Duration: time.Millisecond})
	var b strings.Builder
	if err := m.Registry.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`junction_tool_calls_total{outcome="ok",source="up",tool="fine"} 2`,
		`junction_tool_calls_total{outcome="tool_error",source="up",tool="broken"} 1`,
		`junction_tool_call_errors_total{source="up",tool="broken"} 1`,
		`junction_tool_calls_raw_total{source="up"} 2`,
		`junction_tool_call_duration_seconds_count{source="up",tool="fine"} 2`,
		`junction_tool_call_duration_seconds_count{source="up",tool="broken"} 1`,
		`junction_mcp_requests_total{front="stdio",method="tools/call"} 2`,
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, absent := range []string{`outcome="ok",source="up",tool="broken"`, `junction_tool_call_errors_total{source="up",tool="fine"}`} {
		if strings.Contains(text, absent) {
			t.Errorf("metrics hold a series that never counted: %s", absent)
		}
	}
}
