// Package editdist measures how far a mistyped name is from the names it
// could have meant, for "did you mean" hints in config errors and on the
// command line.
package editdist

// maxRunes bounds the work: names longer than this are never suggested.
const maxRunes = 64

// Far is the distance Distance reports for names too long to compare.
const Far = 99

// Distance is the Levenshtein distance between a and b, counted in runes
// (insertions, deletions and substitutions); [Far] when either is over
// 64 runes long.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > maxRunes || len(rb) > maxRunes {
		return Far
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
