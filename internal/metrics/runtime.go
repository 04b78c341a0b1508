package metrics

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// AddGoMetrics registers the Go runtime metrics under the names
// client_golang's Go collector uses (go_goroutines, go_threads, go_info,
// go_gc_duration_seconds, go_memstats_*, go_sched_gomaxprocs_threads,
// go_gc_gogc_percent, go_gc_gomemlimit_bytes), so dashboards built for it keep working. They
// are read when scraped; one scrape reads the memory statistics once.
func (r *Registry) AddGoMetrics() {
	r.GaugeFunc("go_goroutines", "Number of goroutines that currently exist.", nil, func(emit func(float64, ...string)) {
		emit(float64(runtime.NumGoroutine()))
	})
	r.GaugeFunc("go_threads", "Number of OS threads created.", nil, func(emit func(float64, ...string)) {
		n, _ := runtime.ThreadCreateProfile(nil)
		emit(float64(n))
	})
	r.GaugeFunc("go_info", "Information about the Go environment.", []string{"version"}, func(emit func(float64, ...string)) {
		emit(1, runtime.Version())
	})
	r.GaugeFunc("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously.", nil, func(emit func(float64, ...string)) {
		emit(float64(runtime.GOMAXPROCS(0)))
	})
	r.GaugeFunc("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function.", nil, func(emit func(float64, ...string)) {
		emit(gogc())
	})
	r.GaugeFunc("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64.", nil, func(emit func(float64, ...string)) {
		emit(float64(debug.SetMemoryLimit(-1))) // a negative limit only reads it
	})
	r.add("go_gc_duration_seconds", gcSummary{})

	// The go_memstats_* families of one scrape share one ReadMemStats
	// (it stops the world): a reading serves for 100 ms.
	ms := &memStats{}
	for _, m := range memStatsMetrics {
		f := func(emit func(float64, ...string)) { emit(m.value(ms.get())) }
		if m.counter {
			r.CounterFunc(m.name, m.help, nil, f)
		} else {
			r.GaugeFunc(m.name, m.help, nil, f)
		}
	}
}

// memStats caches runtime.MemStats for a short while, so that one scrape
// stops the world once, not once per family.
type memStats struct {
	mu   sync.Mutex
	at   time.Time
	stat runtime.MemStats
}

func (m *memStats) get() *runtime.MemStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if time.Since(m.at) > 100*time.Millisecond {
		runtime.ReadMemStats(&m.stat)
		m.at = time.Now()
	}
	s := m.stat
	return &s
}

var memStatsMetrics = []struct {
	name, help string
	counter    bool
	value      func(*runtime.MemStats) float64
}{
	{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", false, func(s *runtime.MemStats) float64 { return float64(s.Alloc) }},
	{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", true, func(s *runtime.MemStats) float64 { return float64(s.TotalAlloc) }},
	{"go_memstats_sys_bytes", "Number of bytes obtained from system.", false, func(s *runtime.MemStats) float64 { return float64(s.Sys) }},
	{"go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed.", true, func(s *runtime.MemStats) float64 { return float64(s.Mallocs) }},
	{"go_memstats_frees_total", "Total number of heap objects frees.", true, func(s *runtime.MemStats) float64 { return float64(s.Frees) }},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes.", false, func(s *runtime.MemStats) float64 { return float64(s.HeapAlloc) }},
	{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system.", false, func(s *runtime.MemStats) float64 { return float64(s.HeapSys) }},
	{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used.", false, func(s *runtime.MemStats) float64 { return float64(s.HeapIdle) }},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", false, func(s *runtime.MemStats) float64 { return float64(s.HeapInuse) }},
	{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS.", false, func(s *runtime.MemStats) float64 { return float64(s.HeapReleased) }},
	{"go_memstats_heap_objects", "Number of currently allocated objects.", false, func(s *runtime.MemStats) float64 { return float64(s.HeapObjects) }},
	{"go_memstats_stack_inuse_bytes", "Number of bytes in use by the stack allocator.", false, func(s *runtime.MemStats) float64 { return float64(s.StackInuse) }},
	{"go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator.", false, func(s *runtime.MemStats) float64 { return float64(s.StackSys) }},
	{"go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures.", false, func(s *runtime.MemStats) float64 { return float64(s.MSpanInuse) }},
	{"go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system.", false, func(s *runtime.MemStats) float64 { return float64(s.MSpanSys) }},
	{"go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures.", false, func(s *runtime.MemStats) float64 { return float64(s.MCacheInuse) }},
	{"go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system.", false, func(s *runtime.MemStats) float64 { return float64(s.MCacheSys) }},
	{"go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table.", false, func(s *runtime.MemStats) float64 { return float64(s.BuckHashSys) }},
	{"go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata.", false, func(s *runtime.MemStats) float64 { return float64(s.GCSys) }},
	{"go_memstats_other_sys_bytes", "Number of bytes used for other system allocations.", false, func(s *runtime.MemStats) float64 { return float64(s.OtherSys) }},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place.", false, func(s *runtime.MemStats) float64 { return float64(s.NextGC) }},
	{"go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", false, func(s *runtime.MemStats) float64 { return float64(s.LastGC) / 1e9 }},
}

// gogc returns the GOGC the runtime runs with now: the environment's, or
// what the process set since (junction serve raises it while calls come
// fast: internal/gcfloor); -1 for "off", as runtime/metrics reports it.
func gogc() float64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	return float64(int64(s[0].Value.Uint64()))
}

// gcSummary is go_gc_duration_seconds: the quantiles of recent GC pauses,
// their sum and count.
type gcSummary struct{}

func (gcSummary) write(w *writer) {
	const name = "go_gc_duration_seconds"
	var st debug.GCStats
	st.PauseQuantiles = make([]time.Duration, 5) // min, 25%, 50%, 75%, max
	debug.ReadGCStats(&st)
	w.header(name, "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", "summary")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		w.sample(name, "", nil, nil, nil, "quantile", q, st.PauseQuantiles[i].Seconds())
	}
	w.sample(name, "_sum", nil, nil, nil, "", "", st.PauseTotal.Seconds())
	w.sample(name, "_count", nil, nil, nil, "", "", float64(st.NumGC))
}
