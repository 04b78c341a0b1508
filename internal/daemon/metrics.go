package daemon

import (
	"maps"
	"net/http"
	"runtime"
	"sync/atomic"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
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
	methods  *metrics.CounterVec
	// auditLines counts the audit trail's lines by result (see
	// telemetry.AuditOptions.Lines).
	auditLines *metrics.CounterVec
	// toolCalls are the methods series of a host's tools/call over stdio
	// and over HTTP, found once: every raw call counts in one.
	toolCalls [2]atomic.Pointer[metrics.Counter]
	// tools are the series each tool's calls count in, by source and
	// tool: one lookup per call instead of one per family.
	tools *metrics.Memo[toolSeries]
}

// toolSeries are the series the calls of one tool of one source count in,
// the counters made by the first call that counts in them, so a family
// lists only the series that counted.
type toolSeries struct {
	latency *metrics.Histogram
	ok, raw atomic.Pointer[metrics.Counter]
}

// counter returns the counter p holds, storing series' first. series
// returns a family's series, the same one each time, so callers that race
// store the same counter.
func counter(p *atomic.Pointer[metrics.Counter], series func() *metrics.Counter) *metrics.Counter {
	if c := p.Load(); c != nil {
		return c
	}
	c := series()
	p.Store(c)
	return c
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
		methods: r.NewCounterVec("junction_mcp_requests_total",
			"JSON-RPC requests and notifications from hosts, by front (stdio or http) and MCP method; a method the MCP specification does not name is counted as other.",
			"front", "method"),
		auditLines: r.NewCounterVec("junction_audit_lines_total",
			"Audit trail lines, by result: written; truncated (written without the arguments, the line being over the file's max_size_mb); dropped (not written: too long even so, or the write failed).",
			"result"),
	}
	m.tools = metrics.NewMemo(func(v []string) *toolSeries {
		return &toolSeries{latency: m.latency.WithLabelValues(v[0], v[1])}
	}, "source", "tool")
	r.GaugeFunc("junction_build_info", "1, labelled with the version, the Go version and the VCS revision junction was built from.",
		[]string{"version", "go_version", "revision"}, func(emit func(float64, ...string)) {
			emit(1, buildinfo.Version(), runtime.Version(), buildinfo.Revision())
		})
	r.AddGoMetrics()
	r.AddProcessMetrics()
	return m
}

// ObserveCall records one routed tool call; it is the hub's Observe hook.
func (m *Metrics) ObserveCall(c junction.CallInfo) {
	s := m.tools.Get(c.Source, c.Tool)
	if c.Outcome == "ok" {
		counter(&s.ok, func() *metrics.Counter { return m.calls.WithLabelValues(c.Source, c.Tool, "ok") }).Inc()
	} else {
		m.calls.WithLabelValues(c.Source, c.Tool, c.Outcome).Inc()
		m.errors.WithLabelValues(c.Source, c.Tool).Inc()
	}
	s.latency.Observe(c.Duration.Seconds())
	if c.Raw {
		counter(&s.raw, func() *metrics.Counter { return m.raw.WithLabelValues(c.Source) }).Inc()
		// A host's tools/call, which the data plane leaves to this count
		// (its Count hook is told of every other request).
		m.toolCallCounter(callFront(c)).Inc()
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

// callFront returns the front a call came in on, "http" or "stdio": the
// context of a request net/http serves holds the address it came to,
// whichever server and handler serve it, and a stdio host's calls have
// none.
func callFront(c junction.CallInfo) string {
	if c.Context != nil && c.Context.Value(http.LocalAddrContextKey) != nil {
		return "http"
	}
	return "stdio"
}

// toolCallCounter returns the methods series of tools/call on front.
func (m *Metrics) toolCallCounter(front string) *metrics.Counter {
	p := &m.toolCalls[0]
	if front == "http" {
		p = &m.toolCalls[1]
	}
	return counter(p, func() *metrics.Counter { return m.methods.WithLabelValues(front, "tools/call") })
}

// countRequest counts a request or notification a host sent, by front
// and method: the data plane's Count hook.
func (m *Metrics) countRequest(front, method string) {
	m.methods.WithLabelValues(front, specMethod(method)).Inc()
}

// specMethod returns method if the MCP specification names it as one a
// host sends to a server, else "other": a label value from a fixed set,
// whatever hosts send.
func specMethod(method string) string {
	switch method {
	case "initialize", "ping",
		"tools/list", "tools/call",
		"resources/list", "resources/read", "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
		"prompts/list", "prompts/get",
		"completion/complete", "logging/setLevel",
		"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update",
		"server/discover", "subscriptions/listen",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed", "notifications/elicitation/complete", "notifications/tasks/status":
		return method
	}
	return "other"
}

// watchSessions exports the hosts' live sessions, read at scrape time.
func (m *Metrics) watchSessions(d *Daemon) {
	m.Registry.GaugeFunc("junction_sessions", "Live MCP sessions of hosts, by protocol revision: HTTP sessions (a stateless request holds one while it runs), or the one session of a stdio hub.",
		[]string{"protocol"}, func(emit func(float64, ...string)) {
			counts := map[string]int{}
			count := func(version string) {
				if version == "" {
					version = "unknown"
				}
				counts[version]++
			}
			d.mu.Lock()
			planes := maps.Clone(d.planes)
			d.mu.Unlock()
			for _, plane := range planes {
				plane.Sessions(count)
			}
			for p, n := range counts {
				emit(float64(n), p)
			}
		})
	m.Registry.GaugeFunc("junction_sessions_parked", "HTTP sessions of hosts that are parked: quiet for -session-park, kept in under a KiB of heap without their connection, made anew by their host's next request (not counted in junction_sessions).",
		nil, func(emit func(float64, ...string)) {
			d.mu.Lock()
			n := 0
			for _, p := range d.planes {
				n += p.ParkedSessions()
			}
			d.mu.Unlock()
			emit(float64(n))
		})
}

// watchSources exports per-source state, read at scrape time.
// watchSemantic exports the counters of tool search's semantic stage,
// when the hub has one.
func (m *Metrics) watchSemantic(h *junction.Hub) {
	if _, ok := h.SemanticStats(); !ok {
		return
	}
	stat := func(f func(junction.SemanticStats) float64) func(emit func(float64, ...string)) {
		return func(emit func(float64, ...string)) {
			st, _ := h.SemanticStats()
			emit(f(st))
		}
	}
	m.Registry.CounterFunc("junction_search_semantic_requests_total", "Requests tool search sent to its embeddings endpoint.",
		nil, stat(func(s junction.SemanticStats) float64 { return float64(s.Requests) }))
	m.Registry.CounterFunc("junction_search_semantic_failures_total", "Requests to the embeddings endpoint that failed.",
		nil, stat(func(s junction.SemanticStats) float64 { return float64(s.Failures) }))
	m.Registry.CounterFunc("junction_search_semantic_fallbacks_total", "Searches ranked by words only because the embeddings endpoint failed.",
		nil, stat(func(s junction.SemanticStats) float64 { return float64(s.Fallbacks) }))
	m.Registry.GaugeFunc("junction_search_semantic_tools", "Tools with an embedding (state=ready) and waiting for one (state=pending).",
		[]string{"state"}, func(emit func(float64, ...string)) {
			st, _ := h.SemanticStats()
			emit(float64(st.Tools), "ready")
			emit(float64(st.Pending), "pending")
		})
}

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
	m.Registry.CounterFunc("junction_source_reconnects_total", "Sessions an upstream server established after its first one (a source restarted by a reload starts again from 0).",
		[]string{"source"}, func(emit func(float64, ...string)) {
			sources(func(s SourceStatus) {
				if s.Kind == KindUpstream {
					emit(float64(max(s.Connects-1, 0)), s.Name)
				}
			})
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
