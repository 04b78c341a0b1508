package toolsearch

import (
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// catalogEnv names the benchmark catalog: a JSON list of {server, name,
// description, inputSchema}, as in the tool-search benchmark's
// catalog.json (docs/performance.md, "Tool search").
const catalogEnv = "JUNCTION_TOOLSEARCH_CATALOG"

type benchTool struct {
	Server      string          `json:"server"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// benchCatalog reads the catalog named by $JUNCTION_TOOLSEARCH_CATALOG,
// grouped by server in the catalog's order; it skips the benchmark when
// the variable is unset or the file is absent.
func benchCatalog(b *testing.B) (servers []string, tools map[string][]Tool) {
	path := os.Getenv(catalogEnv)
	if path == "" {
		b.Skip("set " + catalogEnv + " to the tool-search catalog (catalog.json) to run this benchmark")
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		b.Skipf("%s=%s: no such file", catalogEnv, path)
	}
	if err != nil {
		b.Fatal(err)
	}
	var cat []benchTool
	if err := json.Unmarshal(data, &cat); err != nil {
		b.Fatal(err)
	}
	tools = map[string][]Tool{}
	for _, t := range cat {
		if _, ok := tools[t.Server]; !ok {
			servers = append(servers, t.Server)
		}
		tools[t.Server] = append(tools[t.Server], Tool{Name: t.Server + "/" + t.Name, LocalName: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return servers, tools
}

func buildIndex(b *testing.B, servers []string, tools map[string][]Tool) *Index {
	x := New()
	for _, s := range servers {
		if err := x.SetSource(Source{Name: s}, tools[s]); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

// BenchmarkSearch runs one search per iteration over the whole catalog,
// the queries being the tools' own descriptions (requests of the same
// length and vocabulary as the benchmark's), and reports the median and
// 99th percentile latency.
func BenchmarkSearch(b *testing.B) {
	servers, tools := benchCatalog(b)
	x := buildIndex(b, servers, tools)
	var queries []string
	for _, s := range servers {
		for _, t := range tools[s] {
			if strings.TrimSpace(t.Description) != "" && len(t.Description) <= MaxQueryBytes {
				queries = append(queries, t.Description)
			}
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		if _, err := x.Search(queries[i%len(queries)], SearchOptions{Limit: 10}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkIndexMemory builds the index of the whole catalog and reports
// the live heap it adds (runtime.MemStats after a collection, before and
// after) and the index's own estimate.
func BenchmarkIndexMemory(b *testing.B) {
	servers, tools := benchCatalog(b)
	var heap, est float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		x := buildIndex(b, servers, tools)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
		est = float64(x.MemoryBytes()) / (1 << 20)
		runtime.KeepAlive(x)
	}
	b.ReportMetric(heap, "heap-MiB")
	b.ReportMetric(est, "estimate-MiB")
}

// BenchmarkSetSource replaces the tools of one server of about 20 tools
// in the full index, as a list_changed from that server would.
func BenchmarkSetSource(b *testing.B) {
	servers, tools := benchCatalog(b)
	x := buildIndex(b, servers, tools)
	var name string
	for _, s := range servers {
		if n := len(tools[s]); n >= 18 && n <= 24 {
			name = s
			break
		}
	}
	if name == "" {
		b.Fatal("no server of about 20 tools in the catalog")
	}
	for b.Loop() {
		if err := x.SetSource(Source{Name: name}, tools[name]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(tools[name])), "tools")
}

// BenchmarkSearchLongQuery searches with a query of MaxQueryBytes made of
// the catalog's descriptions: the most words a query can bring.
func BenchmarkSearchLongQuery(b *testing.B) {
	servers, tools := benchCatalog(b)
	x := buildIndex(b, servers, tools)
	var q strings.Builder
	for _, s := range servers {
		for _, t := range tools[s] {
			if q.Len()+len(t.Description)+1 <= MaxQueryBytes {
				q.WriteString(t.Description + " ")
			}
		}
	}
	for b.Loop() {
		if _, err := x.Search(q.String(), SearchOptions{Limit: MaxLimit}); err != nil {
			b.Fatal(err)
		}
	}
}
