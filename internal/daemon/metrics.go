package daemon

import (
	"net/http"

	"github.com/junction-mcp/junction"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the hub's Prometheus metrics, on a registry of their own (no
// global state).
type Metrics struct {
	Registry *prometheus.Registry

	calls    *prometheus.CounterVec
	raw      *prometheus.CounterVec
	errors   *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	requests *prometheus.CounterVec
}

// NewMetrics returns the hub metrics, registered with the Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_tool_calls_total",
			Help: "Tool calls routed by the hub, by source, tool and outcome (ok, tool_error, protocol_error, timeout, cancelled, source_unavailable, source_error, internal).",
		}, []string{"source", "tool", "outcome"}),
		raw: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_tool_calls_raw_total",
			Help: "Tool calls forwarded by the fast path (raw bytes, no decoding), by source; a subset of junction_tool_calls_total.",
		}, []string{"source"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_tool_call_errors_total",
			Help: "Tool calls that did not end ok, by source and tool.",
		}, []string{"source", "tool"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "junction_tool_call_duration_seconds",
			Help:    "Time a source took to answer a tool call.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"source", "tool"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "junction_http_requests_total",
			Help: "HTTP requests to the hub's front, by endpoint and status class.",
		}, []string{"endpoint", "code"}),
	}
	m.Registry.MustRegister(m.calls, m.raw, m.errors, m.latency, m.requests,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
