package embed

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchEmbedder returns an Embedder holding n random unit vectors of
// dims dimensions, and the query whose vector its query cache holds, so
// that Similar measures the scoring alone. It never reaches its URL.
func benchEmbedder(b *testing.B, n, dims int) (*Embedder, string) {
	e, err := New(Config{URL: "http://127.0.0.1:1/v1", Model: "bench"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	r := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		normalise(v)
		return v
	}
	e.mu.Lock()
	tools := map[string]*entry{}
	for i := range n {
		name := fmt.Sprintf("server%d_tool%d", i%40, i)
		ent := &entry{h: contentHash("bench", 0, name), vec: vec(), state: stDone, refs: 1}
		e.entries[ent.h] = ent
		e.byName[name] = named{src: "s", e: ent}
		tools[name] = ent
	}
	e.sources["s"] = tools
	e.dims = dims
	e.mu.Unlock()
	const query = "find the open pull requests of a repository"
	e.qcache.put(query, vec())
	return e, query
}

// BenchmarkSimilar: one search over 3,000 tools of 1,536 dimensions
// (text-embedding-3-small's), its query vector cached.
func BenchmarkSimilar(b *testing.B) {
	for _, k := range []int{10, 50} {
		b.Run(fmt.Sprintf("n=3000/dims=1536/k=%d", k), func(b *testing.B) {
			e, q := benchEmbedder(b, 3000, 1536)
			b.ReportAllocs()
			for b.Loop() {
				got, err := e.Similar(b.Context(), q, nil, k)
				if err != nil || len(got) != k {
					b.Fatal(got, err)
				}
			}
		})
	}
	b.Run("n=3000/dims=1536/candidates=300", func(b *testing.B) {
		e, q := benchEmbedder(b, 3000, 1536)
		var cand []string
		for name := range e.byName {
			if len(cand) == 300 {
				break
			}
			cand = append(cand, name)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.Similar(b.Context(), q, cand, 10); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDot1536(b *testing.B) {
	x, y := make([]float32, 1536), make([]float32, 1536)
	for i := range x {
		x[i], y[i] = float32(i%7), float32(i%5)
	}
	var s float32
	for b.Loop() {
		s += dot(x, y)
	}
	_ = s
}

func BenchmarkFuse(b *testing.B) {
	lex := make([]string, 50)
	sem := make([]Scored, 50)
	for i := range 50 {
		lex[i] = fmt.Sprint("tool", i)
		sem[i] = Scored{fmt.Sprint("tool", 49-i*2), 0.9 - float64(i)/100}
	}
	b.ReportAllocs()
	for b.Loop() {
		Fuse(lex, sem, FuseOptions{Limit: 10})
	}
}
