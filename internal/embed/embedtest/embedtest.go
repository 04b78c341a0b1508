// Package embedtest serves an OpenAI-compatible embeddings endpoint for
// tests, on 127.0.0.1: each vector has one dimension per concept (a set
// of words that mean the same), so texts in different words but of the
// same meaning embed alike, as with a real model, and results are exact
// and known in advance.
package embedtest

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
)

// Server is a running endpoint. Its URL (httptest's) ends in no path:
// the embeddings are at URL+"/v1/embeddings".
type Server struct {
	*httptest.Server
	// Failing makes every request fail with 500 while it holds.
	Failing atomic.Bool
	// Requests counts the requests answered or failed.
	Requests atomic.Int64
	concepts [][]string
}

// NewServer starts an endpoint whose vectors have a dimension for each
// of concepts, plus one that keeps no vector all zero. A word counts for
// a concept when it is one of its words, or one of them with an "s".
// Close it when done.
func NewServer(concepts [][]string) *Server {
	s := &Server{concepts: concepts}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	if s.Failing.Load() {
		http.Error(w, "the test made this endpoint fail", http.StatusInternalServerError)
		return
	}
	var req struct{ Input []string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
	}{Object: "list"}
	for i, text := range req.Input {
		out.Data = append(out.Data, item{Object: "embedding", Index: i, Embedding: s.vector(text)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// vector embeds text: per concept, the count of its words, normalised.
func (s *Server) vector(text string) []float64 {
	v := make([]float64, len(s.concepts)+1)
	v[len(s.concepts)] = 0.01
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r < 'a' || r > 'z' })
	for _, w := range words {
		for c, cws := range s.concepts {
			for _, cw := range cws {
				if w == cw || w == cw+"s" {
					v[c]++
				}
			}
		}
	}
	n := 0.0
	for _, x := range v {
		n += x * x
	}
	for i := range v {
		v[i] /= math.Sqrt(n)
	}
	return v
}
