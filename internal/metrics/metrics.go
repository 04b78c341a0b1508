// Package metrics is the small Prometheus registry behind junction's
// /metrics: counters and histograms with labels, gauges read at scrape
// time, and the Go runtime and process metrics, written in the Prometheus
// text exposition format (version 0.0.4).
//
// It replaces github.com/prometheus/client_golang, whose package
// initialisation (with procfs, expvar, runtime/metrics and the protobuf
// client model) cost every junction process about 1 ms before main,
// stdio servers included, which never serve /metrics (docs/performance.md).
// Nothing here runs before [NewRegistry], and the runtime and process
// metrics are read only when scraped.
//
//	reg := metrics.NewRegistry()
//	calls := reg.NewCounterVec("app_calls_total", "Calls, by outcome.", "outcome")
//	calls.WithLabelValues("ok").Inc()
//	http.Handle("/metrics", reg.Handler())
package metrics

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ContentType is the media type of [Registry.WriteText]'s output.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// A Registry holds metric families and writes them in the text format.
// It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	families map[string]family
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{families: map[string]family{}}
}

// family is one metric name with its samples.
type family interface {
	// write appends the family (HELP, TYPE and samples) to w; nothing if
	// it has no samples.
	write(w *writer)
}

func (r *Registry) add(name string, f family) {
	if !validName(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.families[name]; dup {
		panic(fmt.Sprintf("metrics: %q registered twice", name))
	}
	r.families[name] = f
}

// WriteText writes every family, sorted by name, in the text format.
func (r *Registry) WriteText(out io.Writer) error {
	r.mu.Lock()
	names := make([]string, 0, len(r.families))
	for n := range r.families {
		names = append(names, n)
	}
	fams := make([]family, 0, len(names))
	slices.Sort(names)
	for _, n := range names {
		fams = append(fams, r.families[n])
	}
	r.mu.Unlock()
	w := &writer{Writer: bufio.NewWriter(out)}
	for _, f := range fams {
		f.write(w)
	}
	return w.Flush()
}

// Handler serves the registry in the text format.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		r.WriteText(w)
	})
}

// labelled is the part every family with labels shares: its name, help,
// label names and the series by label values.
//
// A series is looked up on every observation (a routed call makes one
// lookup, in a Memo of its tool's series), from many goroutines at once,
// so a lookup takes no lock: it reads read, a map that is never written
// once stored. A series not in it is found or made in all, under mu; once
// as many lookups have missed read as all holds, read is replaced by a
// copy of all. A new series thus costs its copy once in a while,
// amortised over the lookups that missed, and a family whose series are
// all made reads nothing but read.
type labelled[S any] struct {
	name, help, typ string
	labels          []string
	order           []int                    // label indexes sorted by label name
	newSeries       func(values []string) *S // makes the series of values (a copy the caller keeps)

	read atomic.Pointer[map[string]*labelledSeries[S]] // by label values, see get

	mu     sync.Mutex
	all    map[string]*labelledSeries[S] // every series, read's and those made since
	misses int                           // lookups that missed read since it was stored
}

type labelledSeries[S any] struct {
	values []string
	s      *S
}

func (l *labelled[S]) get(values []string) *S {
	if len(values) != len(l.labels) {
		panic(fmt.Sprintf("metrics: %s: %d label values for %d labels", l.name, len(values), len(l.labels)))
	}
	// The key is each value preceded by its length, so that no two lists
	// of values share one; built on the stack, a lookup allocates nothing.
	var buf [128]byte
	key := buf[:0]
	for _, v := range values {
		if len(v) < 0x80 {
			key = append(key, byte(len(v))) // its uvarint, without the call
		} else {
			key = binary.AppendUvarint(key, uint64(len(v)))
		}
		key = append(key, v...)
	}
	if ls := (*l.read.Load())[string(key)]; ls != nil {
		return ls.s
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.all[string(key)]
	if ls == nil {
		kept := slices.Clone(values) // a variable of its own, so values does not escape
		ls = &labelledSeries[S]{values: kept, s: l.newSeries(kept)}
		l.all[string(key)] = ls
	}
	if l.misses++; l.misses >= len(l.all) {
		read := maps.Clone(l.all)
		l.read.Store(&read)
		l.misses = 0
	}
	return ls.s
}

// A Memo keeps a value per combination of label values, made by its
// newValue func on first use and found afterwards as a family finds its series
// (see labelled): without a lock. It is for a caller that observes several
// families with the same labels at once, such as the series a tool's calls
// count in: one lookup in a Memo of them, not one per family. It is not
// registered and not written.
type Memo[S any] struct{ l *labelled[S] }

// NewMemo returns an empty Memo whose values newValue makes, keyed by
// the given labels' values.
func NewMemo[S any](newValue func(values []string) *S, labels ...string) *Memo[S] {
	l := newLabelled[S]("memo", "", "", labels)
	l.newSeries = newValue
	return &Memo[S]{l: l}
}

// Get returns the value for the label values, in the order the labels
// were given, making it the first time. It panics on the wrong number of
// values.
func (m *Memo[S]) Get(values ...string) *S { return m.l.get(values) }

// each calls fn with every series, in no order.
func (l *labelled[S]) each(fn func(*labelledSeries[S])) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.all {
		fn(s)
	}
}

// sorted returns the series ordered by label values.
func (l *labelled[S]) sorted() []*labelledSeries[S] {
	var out []*labelledSeries[S]
	l.each(func(s *labelledSeries[S]) { out = append(out, s) })
	slices.SortFunc(out, func(a, b *labelledSeries[S]) int { return slices.Compare(a.values, b.values) })
	return out
}

// A CounterVec is a counter per combination of label values.
type CounterVec struct {
	l *labelled[Counter]
}

// A Counter only goes up.
type Counter struct{ n atomic.Uint64 }

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.n.Add(n) }

// Value returns the count.
func (c *Counter) Value() uint64 { return c.n.Load() }

// NewCounterVec registers a counter family. The name should end in _total.
func (r *Registry) NewCounterVec(name, help string, labels ...string) *CounterVec {
	v := &CounterVec{l: newLabelled[Counter](name, help, "counter", labels)}
	r.add(name, v)
	return v
}

// sortedOrder returns the indexes of labels in label-name order: samples
// list their labels sorted by name, as client_golang does.
func sortedOrder(labels []string) []int {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return order
}

func newLabelled[S any](name, help, typ string, labels []string) *labelled[S] {
	for _, l := range labels {
		if !validLabel(l) {
			panic(fmt.Sprintf("metrics: %s: invalid label name %q", name, l))
		}
	}
	l := &labelled[S]{name: name, help: help, typ: typ, labels: labels, order: sortedOrder(labels),
		newSeries: func([]string) *S { return new(S) }, all: map[string]*labelledSeries[S]{}}
	l.read.Store(&map[string]*labelledSeries[S]{})
	return l
}

// WithLabelValues returns the counter for the label values, in the order
// the labels were declared. It panics on the wrong number of values.
func (v *CounterVec) WithLabelValues(values ...string) *Counter { return v.l.get(values) }

// Sum returns the total of every series.
func (v *CounterVec) Sum() uint64 {
	var n uint64
	v.l.each(func(s *labelledSeries[Counter]) { n += s.s.Value() })
	return n
}

func (v *CounterVec) write(w *writer) {
	series := v.l.sorted()
	if len(series) == 0 {
		return
	}
	w.header(v.l.name, v.l.help, v.l.typ)
	for _, s := range series {
		w.sample(v.l.name, "", v.l.labels, v.l.order, s.values, "", "", float64(s.s.Value()))
	}
}

// A HistogramVec is a histogram per combination of label values.
type HistogramVec struct {
	l       *labelled[Histogram]
	buckets []float64
}

// A Histogram counts observations into buckets by upper bound.
type Histogram struct {
	counts []atomic.Uint64 // one per bucket, not cumulative
	count  atomic.Uint64
	sum    atomic.Uint64 // float64 bits
	bounds []float64
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	// The first bound v is at or under, found from the first: a family
	// has a few bounds, a scan of all of them costs less than
	// slices.BinarySearch's steps for floats, and most observations fall
	// in the first few.
	i := 0
	for i < len(h.bounds) && h.bounds[i] < v {
		i++
	}
	if i < len(h.bounds) {
		h.counts[i].Add(1)
	}
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.count.Add(1)
}

// NewHistogramVec registers a histogram family with the given bucket upper
// bounds, which must be sorted; +Inf is implied.
func (r *Registry) NewHistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	if !slices.IsSorted(buckets) {
		panic(fmt.Sprintf("metrics: %s: buckets not sorted", name))
	}
	for _, l := range labels {
		if l == "le" {
			panic(fmt.Sprintf("metrics: %s: a histogram may not have a label called le", name))
		}
	}
	bounds := slices.Clone(buckets)
	l := newLabelled[Histogram](name, help, "histogram", labels)
	l.newSeries = func([]string) *Histogram {
		return &Histogram{counts: make([]atomic.Uint64, len(bounds)), bounds: bounds}
	}
	v := &HistogramVec{l: l, buckets: bounds}
	r.add(name, v)
	return v
}

// WithLabelValues returns the histogram for the label values.
func (v *HistogramVec) WithLabelValues(values ...string) *Histogram { return v.l.get(values) }

func (v *HistogramVec) write(w *writer) {
	series := v.l.sorted()
	if len(series) == 0 {
		return
	}
	w.header(v.l.name, v.l.help, v.l.typ)
	for _, s := range series {
		h := s.s
		// Read count first: a concurrent Observe may then show in a
		// bucket but not yet in the count, and the +Inf bucket (the
		// count) stays at least the last finite bucket.
		count := h.count.Load()
		var cum uint64
		for i, b := range h.bounds {
			cum += h.counts[i].Load()
			w.sample(v.l.name, "_bucket", v.l.labels, v.l.order, s.values, "le", formatFloat(b), float64(cum))
		}
		w.sample(v.l.name, "_bucket", v.l.labels, v.l.order, s.values, "le", "+Inf", float64(max(count, cum)))
		w.sample(v.l.name, "_sum", v.l.labels, v.l.order, s.values, "", "", math.Float64frombits(h.sum.Load()))
		w.sample(v.l.name, "_count", v.l.labels, v.l.order, s.values, "", "", float64(max(count, cum)))
	}
}

// GaugeFunc registers a gauge family whose samples collect reports at
// scrape time, by calling emit once per series with its value and label
// values.
func (r *Registry) GaugeFunc(name, help string, labels []string, collect func(emit func(value float64, labelValues ...string))) {
	r.add(name, &funcFamily{name: name, help: help, typ: "gauge", labels: labels, order: sortedOrder(labels), collect: collect})
}

// CounterFunc is [Registry.GaugeFunc] for a value that only goes up.
func (r *Registry) CounterFunc(name, help string, labels []string, collect func(emit func(value float64, labelValues ...string))) {
	r.add(name, &funcFamily{name: name, help: help, typ: "counter", labels: labels, order: sortedOrder(labels), collect: collect})
}

type funcFamily struct {
	name, help, typ string
	labels          []string
	order           []int
	collect         func(emit func(float64, ...string))
}

func (f *funcFamily) write(w *writer) {
	type sample struct {
		v      float64
		values []string
	}
	var samples []sample
	f.collect(func(v float64, values ...string) {
		if len(values) != len(f.labels) {
			panic(fmt.Sprintf("metrics: %s: %d label values for %d labels", f.name, len(values), len(f.labels)))
		}
		samples = append(samples, sample{v, slices.Clone(values)})
	})
	if len(samples) == 0 {
		return
	}
	slices.SortStableFunc(samples, func(a, b sample) int { return slices.Compare(a.values, b.values) })
	w.header(f.name, f.help, f.typ)
	for _, s := range samples {
		w.sample(f.name, "", f.labels, f.order, s.values, "", "", s.v)
	}
}

// writer writes the text format.
type writer struct {
	*bufio.Writer
}

func (w *writer) header(name, help, typ string) {
	w.WriteString("# HELP ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(helpEscaper.Replace(help))
	w.WriteString("\n# TYPE ")
	w.WriteString(name)
	w.WriteByte(' ')
	w.WriteString(typ)
	w.WriteByte('\n')
}

// sample writes one line: name+suffix, the labels in order (and an extra
// label, such as le, if extraName is set) and the value.
func (w *writer) sample(name, suffix string, labels []string, order []int, values []string, extraName, extraValue string, v float64) {
	w.WriteString(name)
	w.WriteString(suffix)
	if len(labels) > 0 || extraName != "" {
		w.WriteByte('{')
		for i, j := range order {
			if i > 0 {
				w.WriteByte(',')
			}
			w.label(labels[j], values[j])
		}
		if extraName != "" {
			if len(labels) > 0 {
				w.WriteByte(',')
			}
			w.label(extraName, extraValue)
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(formatFloat(v))
	w.WriteByte('\n')
}

func (w *writer) label(name, value string) {
	w.WriteString(name)
	w.WriteString(`="`)
	w.WriteString(valueEscaper.Replace(value))
	w.WriteByte('"')
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// formatFloat writes v as the text format wants it: shortest exact
// decimal, +Inf, -Inf or NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// validName reports whether s is a legal metric name:
// [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// validLabel reports whether s is a legal label name that is not reserved
// (names starting with __ are Prometheus's own).
func validLabel(s string) bool {
	return validName(s) && !strings.Contains(s, ":") && !strings.HasPrefix(s, "__")
}
