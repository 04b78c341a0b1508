package embed

import (
	"slices"
	"testing"
)

func TestFuse(t *testing.T) {
	sem := func(names ...string) []Scored {
		out := make([]Scored, len(names))
		for i, n := range names {
			out[i] = Scored{n, 0.9 - float64(i)*0.1}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		lex  []string
		sem  []Scored
		opts FuseOptions
		want []string
	}{
		{"lexical only", []string{"a", "b"}, nil, FuseOptions{}, []string{"a", "b"}},
		{"semantic only", nil, sem("x", "y"), FuseOptions{}, []string{"x", "y"}},
		{"agreement wins", []string{"a", "b", "c"}, sem("c", "d"), FuseOptions{}, []string{"c", "a", "b", "d"}}, // b and d tie: lexical first
		// Equal scores: a (lexical 1) and x (semantic 1) tie; the lexical rank goes first.
		{"tie to lexical", []string{"a"}, sem("x"), FuseOptions{}, []string{"a", "x"}},
		{"weight favours semantic", []string{"a"}, sem("x"), FuseOptions{SemanticWeight: 2}, []string{"x", "a"}},
		{"weight below one", []string{"a", "b"}, sem("x"), FuseOptions{SemanticWeight: 0.5}, []string{"a", "b", "x"}},
		{"duplicates count once", []string{"a", "a", "b"}, sem("b", "b", "c"), FuseOptions{}, []string{"b", "a", "c"}},
		{"limit", []string{"a", "b", "c"}, sem("c"), FuseOptions{Limit: 2}, []string{"c", "a"}},
		{"min score", []string{"a"}, []Scored{{"x", 0.5}, {"y", 0.1}}, FuseOptions{MinScore: 0.3}, []string{"a", "x"}},
		{"negative dropped by default", nil, []Scored{{"x", 0.5}, {"y", -0.1}}, FuseOptions{}, []string{"x"}},
		{"min score -1 keeps all", nil, []Scored{{"x", 0.5}, {"y", -0.1}}, FuseOptions{MinScore: -1}, []string{"x", "y"}},
		// Small k: ranks weigh more: lexical 1 + semantic 3 beats lexical 2 + semantic 1 at k=1? 1/2+1/4=.75 vs 1/3+1/2=.83.
		{"k", []string{"a", "b"}, sem("b", "z", "a"), FuseOptions{K: 1}, []string{"b", "a", "z"}},
		// Equal similarities: the semantic list's order stands.
		{"semantic order", nil, []Scored{{"b", 0.5}, {"a", 0.5}}, FuseOptions{}, []string{"b", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Fuse(tc.lex, tc.sem, tc.opts)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			// Deterministic: the same inputs give the same answer.
			if again := Fuse(tc.lex, tc.sem, tc.opts); !slices.Equal(got, again) {
				t.Errorf("second answer %v", again)
			}
		})
	}
}

func TestFuseTieBySemanticRank(t *testing.T) {
	// a: lexical 2, semantic 1; b: lexical 1, semantic 2: equal scores,
	// and b's lexical rank is the better.
	got := Fuse([]string{"b", "a"}, []Scored{{"a", 0.9}, {"b", 0.8}}, FuseOptions{})
	if !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("got %v", got)
	}
}
