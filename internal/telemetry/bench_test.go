package telemetry_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/telemetry"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// BenchmarkCall measures one raw tool call through a hub's Begin/Finish
// with nothing observing it, with an audit trail (to io.Discard), and
// with a span per call (recorded in memory, then dropped): what each
// costs per call.
func BenchmarkCall(b *testing.B) {
	params := json.RawMessage(`{"name":"op","arguments":{"msg":"hello, hub"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`)
	for _, tc := range []struct {
		name string
		opts func() *junction.Options
	}{
		{"plain", func() *junction.Options { return &junction.Options{Observe: func(junction.CallInfo) {}} }},
		{"audit", func() *junction.Options {
			return &junction.Options{Observe: telemetry.NewAudit(io.Discard, telemetry.AuditOptions{}).Observe}
		}},
		{"trace", func() *junction.Options {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(discardExporter{}))
			tr := telemetry.NewTracer(tp)
			return &junction.Options{Trace: tr.Start, Observe: tr.Observe}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := junction.New(tc.opts())
			defer h.Close()
			if err := h.Add(b.Context(), "src", &fakeSource{call: answer(okResult, nil)}, nil); err != nil {
				b.Fatal(err)
			}
			v, err := h.NewView("", junction.Selection{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c, rc := v.BeginRaw(b.Context(), "src__op")
				if _, werr := c.CallToolRaw(rc, params); werr != nil {
					b.Fatal(werr)
				}
			}
		})
	}
}

// discardExporter drops what it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }
