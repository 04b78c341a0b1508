package toolsearch

import (
	"strings"
	"sync"
)

// American spelling. Tool descriptions and requests are written in both
// British and American English ("organisation", "colour", "cancelled"),
// and Porter's stemmer does not join the two ("organis" and "organ").
// Before a word is stemmed, its British form is rewritten as the American
// one, on both sides: the -ise family by rule, the rest from a short list.
// A word the rule rewrites that has no American twin ("promise") becomes
// a form nobody writes, on both sides alike, so it still matches itself.

// britishSuffixes are rewritten at a word's end, longest first, where
// the word's base (the word with "ise" or "yse" for the suffix) has at
// least minBritish letters: "organising" and "advised" are rewritten,
// "rising" and "raised" are not (nor are "rise" and "raise", which they
// must keep matching).
var britishSuffixes = [][2]string{
	{"isations", "izations"}, {"isation", "ization"},
	{"ising", "izing"}, {"isers", "izers"}, {"iser", "izer"},
	{"ised", "ized"}, {"ises", "izes"}, {"ise", "ize"},
	{"ysing", "yzing"}, {"ysed", "yzed"}, {"yse", "yze"},
}

const minBritish = 6

// britishWords are British words whose American spelling no rule gives.
// A word made of one and an ending of britishEndings ("colours",
// "behavioural", "favourite") has it rewritten; "programmed", which both
// spell so, is not "programme" and an ending.
var britishWords = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for _, pair := range strings.Fields(`colour:color behaviour:behavior favour:favor honour:honor
labour:labor neighbour:neighbor flavour:flavor humour:humor harbour:harbor rumour:rumor
endeavour:endeavor centre:center metre:meter litre:liter theatre:theater fibre:fiber
catalogue:catalog dialogue:dialog analogue:analog licence:license defence:defense
offence:offense programme:program grey:gray cheque:check
cancelled:canceled cancelling:canceling travelled:traveled travelling:traveling
modelled:modeled modelling:modeling labelled:labeled labelling:labeling
levelled:leveled levelling:leveling signalled:signaled signalling:signaling
totalled:totaled totalling:totaling fuelled:fueled channelled:channeled`) {
		b, a, _ := strings.Cut(pair, ":")
		m[b] = a
	}
	return m
})

// maxBritishWord is the longest of britishWords.
const maxBritishWord = 10

var britishEndings = sync.OnceValue(func() map[string]bool { return setOf("s ed ing al ite ites able less ful ly er ers") })

// britishStarts are the first four letters of britishWords: a word that
// begins otherwise is not looked up.
var britishStarts = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for w := range britishWords() {
		m[w[:4]] = true
	}
	return m
})

// american returns w, a lower-case word of letters a-z, in American
// spelling. Most words are neither: they cost a lookup of their first
// four letters and a look at their last eight.
func american(w string) string {
	if len(w) >= 4 && britishStarts()[w[:4]] {
		for n := min(len(w), maxBritishWord); n >= 4; n-- {
			if a, ok := britishWords()[w[:n]]; ok && (n == len(w) || britishEndings()[w[n:]]) {
				return a + w[n:]
			}
		}
	}
	tail := w[max(0, len(w)-8):]
	if !strings.Contains(tail, "is") && !strings.Contains(tail, "ys") {
		return w
	}
	for _, s := range britishSuffixes {
		if strings.HasSuffix(w, s[0]) && len(w)-len(s[0])+3 >= minBritish {
			return w[:len(w)-len(s[0])] + s[1]
		}
	}
	return w
}
