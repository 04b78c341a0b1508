package toolsearch

import "slices"

// Typo tolerance. A query word the dictionary lacks may be misspelt
// ("retreive", "dokcer"): it then also looks for the dictionary's words
// at one edit from it (one letter deleted, inserted, replaced, or two
// neighbours swapped: Damerau–Levenshtein distance 1), at reduced
// weight (scoring.typo). The edits are made on the stem and looked up in
// the dictionary, about 54 lookups per letter, so that the cost is
// bounded without an index of its own; only words of minTypoLen to
// maxTypoLen letters a-z are tried, since a short word has too many
// neighbours to guess from, and only maxTypoWords of a query.
const (
	minTypoLen   = 4
	maxTypoLen   = 24
	maxTypoWords = 8
	maxTypoTerms = 3 // the most neighbours kept for one word, the most frequent first
)

// nearTermsLocked returns the ids of the dictionary's terms at one edit
// from w, at most maxTypoTerms of them, the most frequent first.
func (x *Index) nearTermsLocked(w string) []int32 {
	if len(w) < minTypoLen || len(w) > maxTypoLen {
		return nil
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return nil
		}
	}
	var out []int32
	var buf [maxTypoLen + 1]byte
	try := func(b []byte) {
		if id, ok := x.terms[string(b)]; ok && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	n := len(w)
	for i := 0; i < n; i++ { // deletion
		b := append(append(buf[:0], w[:i]...), w[i+1:]...)
		try(b)
	}
	for i := 0; i+1 < n; i++ { // transposition
		if w[i] == w[i+1] {
			continue
		}
		b := append(buf[:0], w...)
		b[i], b[i+1] = b[i+1], b[i]
		try(b)
	}
	for i := 0; i < n; i++ { // substitution
		b := append(buf[:0], w...)
		for c := byte('a'); c <= 'z'; c++ {
			if c != w[i] {
				b[i] = c
				try(b)
			}
		}
	}
	if n < maxTypoLen {
		for i := 0; i <= n; i++ { // insertion
			b := append(append(buf[:0], w[:i]...), 0)
			b = append(b, w[i:]...)
			for c := byte('a'); c <= 'z'; c++ {
				b[i] = c
				try(b)
			}
		}
	}
	slices.SortFunc(out, func(a, b int32) int {
		if da, db := x.df(a), x.df(b); da != db {
			return db - da
		}
		return int(a - b)
	})
	return out[:min(len(out), maxTypoTerms)]
}
