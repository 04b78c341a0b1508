package daemon

import (
	"net/http"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/metrics"
)

// Metrics are the hub's Prometheus metrics, on a registry of their own (no
// global state). They are built with [internal/metrics] rather than
// client_golang, whose package init cost every start about 1 ms
// (docs/performance.md); the Go and process metrics keep client_golang's
// names and are read only when /metrics is scraped.
type Metrics struct {
	Registry *metrics.Registry

	calls    *metrics.CounterVec
	raw      *metrics.CounterVec
	errors   *metrics.CounterVec
	latency  *metrics.HistogramVec
	requests *metrics.CounterVec
}

// NewMetrics returns the hub metrics, with the Go and process metrics.
func NewMetrics() *Metrics {
	r := metrics.NewRegistry()
	m := &Metrics{
		Registry: r,
		calls: r.NewCounterVec("junction_tool_calls_total",
			"Tool calls routed by the hub, by source, tool and outcome (ok, tool_error, protocol_error, timeout, cancelled, source_unavailable, source_error, internal).",
			"source", "tool", "outcome"),
		raw: r.NewCounterVec("junction_tool_calls_raw_total",
			"Tool calls forwarded by the fast path (raw bytes, no decoding), by source; a subset of junction_tool_calls_total.",
			"source"),
		errors: r.NewCounterVec("junction_tool_call_errors_total",
			"Tool calls that did not end ok, by source and tool.",
			"source", "tool"),
		latency: r.NewHistogramVec("junction_tool_call_duration_seconds",
			"Time a source took to answer a tool call.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
			"source", "tool"),
		requests: r.NewCounterVec("junction_http_requests_total",
			"HTTP requests to the hub's front, by endpoint and status class.",
			"endpoint", "code"),
	}
	r.AddGoMetrics()
	r.AddProcessMetrics()
	return m
}

// ObserveCall records one routed tool call; it is the hub's Observe hook.
func (m *Metrics) ObserveCall(c junction.CallInfo) {
	m.calls.WithLabelValues(c.Source, c.Tool, c.Outcome).Inc()
	m.latency.WithLabelValues(c.Source, c.Tool).Observe(c.Duration.Seconds())
	if c.Raw {
		m.raw.WithLabelValues(c.Source).Inc()
	}
	if c.Outcome != "ok" {
		m.errors.WithLabelValues(c.Source, c.Tool).Inc()
	}
}

// CallTotals returns how many tool calls the hub has routed, and how many
// of them the fast path forwarded as raw bytes.
func (m *Metrics) CallTotals() (calls, raw uint64) {
	return m.calls.Sum(), m.raw.Sum()
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return m.Registry.Handler()
}

// watchSources exports per-source state, read at scrape time.
func (m *Metrics) watchSources(d *Daemon) {
	sources := func(each func(s SourceStatus)) {
		if d.View == nil {
			return
		}
		for _, s := range d.Status().Sources {
			each(s)
		}
	}
	m.Registry.GaugeFunc("junction_source_up", "1 if the source is connected (upstreams) or ready (packs, plugins), else 0.",
		[]string{"source", "kind", "state"}, func(emit func(float64, ...string)) {
			sources(func(s SourceStatus) {
				up := 0.0
				if s.State == "connected" || s.State == "ready" {
					up = 1
				}
				emit(up, s.Name, s.Kind, s.State)
			})
		})
	m.Registry.GaugeFunc("junction_source_tools", "Tools the hub serves from the source.",
		[]string{"source"}, func(emit func(float64, ...string)) {
			sources(func(s SourceStatus) { emit(float64(s.Tools), s.Name) })
		})
	m.Registry.GaugeFunc("junction_source_drift", "1 if the source's tools differ from the lock file.",
		[]string{"source"}, func(emit func(float64, ...string)) {
			sources(func(s SourceStatus) {
				drift := 0.0
				if s.Drift != nil {
					drift = 1
				}
				emit(drift, s.Name)
			})
		})
}
