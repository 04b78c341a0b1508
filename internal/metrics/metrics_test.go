package metrics

import (
	"bytes"
	"net/http/httptest"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads text with Prometheus's own parser (a test-only dependency),
// so the format is checked by the reference implementation.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus's parser rejects the output: %v\n%s", err, text)
	}
	return fams
}

func text(t *testing.T, r *Registry) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteText(t *testing.T) {
	r := NewRegistry()
	calls := r.NewCounterVec("x_calls_total", "Calls,\nby outcome \\ source.", "source", "outcome")
	calls.WithLabelValues("b", "ok").Inc()
	calls.WithLabelValues("a", "ok").Add(2)
	calls.WithLabelValues(`q"uote\back`+"\nline", "err").Inc()
	lat := r.NewHistogramVec("x_seconds", "Latency.", []float64{0.5, 1, 2.5}, "source")
	for _, v := range []float64{0.1, 0.5, 0.7, 3, 1} {
		lat.WithLabelValues("a").Observe(v)
	}
	r.NewCounterVec("x_unused_total", "Never incremented: left out.", "source")
	r.GaugeFunc("x_up", "Up.", []string{"source"}, func(emit func(float64, ...string)) {
		emit(1, "z")
		emit(0, "a")
	})
	r.GaugeFunc("x_plain", "No labels.", nil, func(emit func(float64, ...string)) { emit(1e6) })

	want := `# HELP x_calls_total Calls,\nby outcome \\ source.
# TYPE x_calls_total counter
x_calls_total{outcome="ok",source="a"} 2
x_calls_total{outcome="ok",source="b"} 1
x_calls_total{outcome="err",source="q\"uote\\back\nline"} 1
# HELP x_plain No labels.
# TYPE x_plain gauge
x_plain 1e+06
# HELP x_seconds Latency.
# TYPE x_seconds histogram
x_seconds_bucket{source="a",le="0.5"} 2
x_seconds_bucket{source="a",le="1"} 4
x_seconds_bucket{source="a",le="2.5"} 4
x_seconds_bucket{source="a",le="+Inf"} 5
x_seconds_sum{source="a"} 5.3
x_seconds_count{source="a"} 5
# HELP x_up Up.
# TYPE x_up gauge
x_up{source="a"} 0
x_up{source="z"} 1
`
	got := text(t, r)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WriteText (-want +got):\n%s", diff)
	}

	fams := parse(t, got)
	h := fams["x_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 5 || h.GetSampleSum() != 5.3 {
		t.Errorf("parsed histogram: count %d sum %v, want 5 and 5.3", h.GetSampleCount(), h.GetSampleSum())
	}
	var quoted string
	for _, m := range fams["x_calls_total"].GetMetric() {
		if m.GetLabel()[0].GetValue() == "err" {
			quoted = m.GetLabel()[1].GetValue()
		}
	}
	if want := `q"uote\back` + "\nline"; quoted != want {
		t.Errorf("parsed label value = %q, want %q", quoted, want)
	}
}

func TestHandler(t *testing.T) {
	r := NewRegistry()
	r.NewCounterVec("x_total", "X.").WithLabelValues().Inc()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if ct := rec.Header().Get("Content-Type"); ct != ContentType {
		t.Errorf("Content-Type = %q, want %q", ct, ContentType)
	}
	if body := rec.Body.String(); !strings.Contains(body, "\nx_total 1\n") {
		t.Errorf("body lacks the counter:\n%s", body)
	}
}

func TestGoAndProcessMetrics(t *testing.T) {
	r := NewRegistry()
	r.AddGoMetrics()
	r.AddProcessMetrics()
	fams := parse(t, text(t, r))
	value := func(name string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("no %s", name)
			return 0
		}
		m := f.GetMetric()[0]
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		}
		return m.GetSummary().GetSampleSum()
	}
	for _, name := range []string{"go_goroutines", "go_threads", "go_info", "go_memstats_alloc_bytes", "go_memstats_sys_bytes", "go_memstats_heap_inuse_bytes", "go_sched_gomaxprocs_threads", "go_gc_gomemlimit_bytes"} {
		if v := value(name); v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	if s := fams["go_gc_duration_seconds"]; s == nil || len(s.GetMetric()[0].GetSummary().GetQuantile()) != 5 {
		t.Errorf("go_gc_duration_seconds = %v, want a summary with 5 quantiles", s)
	}
	if fams["process_resident_memory_bytes"] == nil {
		return // not Linux: no process metrics
	}
	for _, name := range []string{"process_cpu_seconds_total", "process_open_fds", "process_max_fds", "process_resident_memory_bytes", "process_virtual_memory_bytes"} {
		if v := value(name); v <= 0 {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	if value("process_virtual_memory_bytes") < value("process_resident_memory_bytes") {
		t.Error("virtual memory smaller than resident memory")
	}
	start := value("process_start_time_seconds")
	now := float64(time.Now().Unix())
	if start > now+1 || start < now-3600 {
		t.Errorf("process_start_time_seconds = %v, now is %v: want within the last hour", start, now)
	}
}

// Counting is exact under concurrent updates and scrapes.
func TestConcurrent(t *testing.T) {
	r := NewRegistry()
	c := r.NewCounterVec("x_total", "X.", "k")
	h := r.NewHistogramVec("x_seconds", "X.", []float64{1}, "k")
	var wg sync.WaitGroup
	const workers, each = 8, 500
	for i := range workers {
		wg.Go(func() {
			for range each {
				c.WithLabelValues([]string{"a", "b"}[i%2]).Inc()
				h.WithLabelValues("a").Observe(0.5)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			parse(t, text(t, r))
		}
	})
	wg.Wait()
	if a, b := c.WithLabelValues("a").Value(), c.WithLabelValues("b").Value(); a+b != workers*each || a != b {
		t.Errorf("counts %d + %d, want %d each", a, b, workers*each/2)
	}
	if n := c.Sum(); n != workers*each {
		t.Errorf("Sum() = %d, want %d", n, workers*each)
	}
	fams := parse(t, text(t, r))
	if n := fams["x_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); n != workers*each {
		t.Errorf("histogram count %d, want %d", n, workers*each)
	}
}

// Label values that would run together if joined are distinct series.
func TestSeriesKeys(t *testing.T) {
	r := NewRegistry()
	c := r.NewCounterVec("x_total", "X.", "a", "b")
	c.WithLabelValues("a\xff", "b").Inc()
	c.WithLabelValues("a", "\xffb").Inc()
	c.WithLabelValues("ab", "").Inc()
	c.WithLabelValues("", "ab").Inc()
	for _, v := range [][2]string{{"a\xff", "b"}, {"a", "\xffb"}, {"ab", ""}, {"", "ab"}} {
		if n := c.WithLabelValues(v[0], v[1]).Value(); n != 1 {
			t.Errorf("series %q = %d, want 1", v, n)
		}
	}
}

func TestMisuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(r *Registry)
	}{
		{"bad metric name", func(r *Registry) { r.NewCounterVec("1x", "") }},
		{"empty metric name", func(r *Registry) { r.NewCounterVec("", "") }},
		{"bad label name", func(r *Registry) { r.NewCounterVec("x", "", "a-b") }},
		{"reserved label name", func(r *Registry) { r.NewCounterVec("x", "", "__x") }},
		{"le on a histogram", func(r *Registry) { r.NewHistogramVec("x", "", nil, "le") }},
		{"unsorted buckets", func(r *Registry) { r.NewHistogramVec("x", "", []float64{2, 1}) }},
		{"twice", func(r *Registry) { r.NewCounterVec("x", ""); r.GaugeFunc("x", "", nil, nil) }},
		{"label count", func(r *Registry) { r.NewCounterVec("x", "", "a").WithLabelValues("1", "2") }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f(NewRegistry())
		}()
	}
}

// Any label value survives the round trip through Prometheus's parser.
func FuzzLabelValue(f *testing.F) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "new\nline", `\n`, "ünïcode"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if !utf8.ValidString(v) {
			return // the text format is UTF-8
		}
		r := NewRegistry()
		r.NewCounterVec("x_total", "X.", "v").WithLabelValues(v).Inc()
		fams := parse(t, text(t, r))
		if got := fams["x_total"].GetMetric()[0].GetLabel()[0].GetValue(); got != v {
			t.Errorf("label value %q came back as %q", v, got)
		}
	})
}

// go_gc_gogc_percent is the runtime's GOGC as it is now, set by the
// environment or at run time.
func TestGOGC(t *testing.T) {
	old := debug.SetGCPercent(250)
	defer debug.SetGCPercent(old)
	if got := gogc(); got != 250 {
		t.Errorf("gogc() = %v after SetGCPercent(250)", got)
	}
	debug.SetGCPercent(-1)
	if got := gogc(); got != -1 {
		t.Errorf("gogc() = %v with collection off, want -1", got)
	}
}

// The hub observes every tool call: a counter and a histogram by labels.
func BenchmarkObserve(b *testing.B) {
	r := NewRegistry()
	c := r.NewCounterVec("x_total", "X.", "source", "tool", "outcome")
	h := r.NewHistogramVec("x_seconds", "X.", []float64{.001, .01, .1, 1}, "source", "tool")
	b.ReportAllocs()
	for b.Loop() {
		c.WithLabelValues("echo", "echo__echo", "ok").Inc()
		h.WithLabelValues("echo", "echo__echo").Observe(0.002)
	}
}

// The same, from as many goroutines as there are processors: lookups take
// no lock.
func BenchmarkObserveParallel(b *testing.B) {
	r := NewRegistry()
	c := r.NewCounterVec("x_total", "X.", "source", "tool", "outcome")
	h := r.NewHistogramVec("x_seconds", "X.", []float64{.001, .01, .1, 1}, "source", "tool")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.WithLabelValues("echo", "echo__echo", "ok").Inc()
			h.WithLabelValues("echo", "echo__echo").Observe(0.002)
		}
	})
}

// Series made from many goroutines at once, while others count on the
// ones already made, are each made once: every increment is in the total
// and in its own series.
func TestSeriesMadeConcurrently(t *testing.T) {
	r := NewRegistry()
	c := r.NewCounterVec("x_total", "X.", "n")
	const workers, series, rounds = 8, 50, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range series * rounds {
				c.WithLabelValues(strconv.Itoa((i + w) % series)).Inc()
			}
		})
	}
	wg.Wait()
	if got, want := c.Sum(), uint64(workers*series*rounds); got != want {
		t.Fatalf("Sum() = %d, want %d", got, want)
	}
	for i := range series {
		if got, want := c.WithLabelValues(strconv.Itoa(i)).Value(), uint64(workers*rounds); got != want {
			t.Errorf("series %d: %d, want %d", i, got, want)
		}
	}
	if n := len(c.l.sorted()); n != series {
		t.Errorf("%d series, want %d", n, series)
	}
}

// A Memo makes a value once per combination of label values, and finds it
// again without allocating.
func TestMemo(t *testing.T) {
	made := 0
	m := NewMemo(func(v []string) *[2]string {
		made++
		return &[2]string{v[0], v[1]}
	}, "a", "b")
	first := m.Get("x", "y")
	if *first != [2]string{"x", "y"} || m.Get("x", "y") != first || m.Get("xy", "") == first {
		t.Fatalf("Get(x, y) = %v, then %v; Get(xy, \"\") the same value", first, m.Get("x", "y"))
	}
	if made != 2 {
		t.Errorf("made %d values for two combinations", made)
	}
	if n := testing.AllocsPerRun(100, func() { m.Get("x", "y") }); n != 0 {
		t.Errorf("Get of a known combination allocates %v times", n)
	}
}
