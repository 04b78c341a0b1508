package embed

import (
	"cmp"
	"slices"
	"strings"
)

// Defaults of [FuseOptions].
const (
	DefaultRRFK           = 60 // the constant of reciprocal rank fusion, as in Cormack et al. (2009)
	DefaultSemanticWeight = 1
)

// FuseOptions tune [Fuse]. The zero value means the defaults.
type FuseOptions struct {
	// K is the constant k of 1/(k+rank): the larger, the flatter the
	// difference between the first ranks and the later. Default
	// DefaultRRFK.
	K float64
	// SemanticWeight multiplies the semantic list's terms against the
	// lexical list's (whose weight is 1): above 1 the semantic ranking
	// counts more, below 1 less. Default DefaultSemanticWeight.
	SemanticWeight float64
	// MinScore drops the semantic results whose similarity is below it
	// before the fusion, so that a query nothing is near does not bring
	// in unrelated tools. At the default, 0, only negative similarities
	// are dropped; -1 keeps all.
	MinScore float64
	// Limit is the most names returned; 0: all.
	Limit int
}

// Fuse merges a lexical ranking (names, best first) and a semantic one
// (Similar's results, best first) by reciprocal rank fusion: each name
// scores 1/(K+r) for its 1-based rank r in the lexical list plus
// SemanticWeight/(K+r) for its rank in the semantic list, and the names
// are returned by that score, highest first. A name in one list only
// scores its one term. Ties go to the better lexical rank (a name in the
// lexical list before one that is not), then the better semantic rank,
// then the name, so that the result depends on the inputs alone. A name
// given twice in a list counts at its first rank. Fuse is pure.
//
// RRF uses ranks, not scores: BM25 scores and cosine similarities are on
// scales that do not compare (and BM25's changes with every query), and
// ranks need no calibration between the two.
func Fuse(lexical []string, semantic []Scored, opts FuseOptions) []string {
	k := opts.K
	if k <= 0 {
		k = DefaultRRFK
	}
	w := opts.SemanticWeight
	if w <= 0 {
		w = DefaultSemanticWeight
	}
	type fused struct {
		name     string
		score    float64
		lex, sem int // 1-based ranks; 0: absent
	}
	at := make(map[string]int, len(lexical)+len(semantic))
	out := make([]fused, 0, len(lexical)+len(semantic))
	for i, name := range lexical {
		if _, ok := at[name]; ok {
			continue
		}
		at[name] = len(out)
		out = append(out, fused{name: name, score: 1 / (k + float64(i+1)), lex: i + 1})
	}
	r := 0
	for _, s := range semantic {
		if s.Score < opts.MinScore {
			continue
		}
		r++
		i, ok := at[s.Name]
		if !ok {
			i = len(out)
			at[s.Name] = i
			out = append(out, fused{name: s.Name})
		} else if out[i].sem != 0 {
			r-- // given twice: the first rank counts, and the next takes no rank
			continue
		}
		out[i].sem = r
		out[i].score += w / (k + float64(r))
	}
	absent := func(r int) int {
		if r == 0 {
			return int(^uint(0) >> 1)
		}
		return r
	}
	slices.SortFunc(out, func(a, b fused) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		if c := cmp.Compare(absent(a.lex), absent(b.lex)); c != 0 {
			return c
		}
		if c := cmp.Compare(absent(a.sem), absent(b.sem)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	names := make([]string, len(out))
	for i, f := range out {
		names[i] = f.name
	}
	return names
}
