package toolsearch

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxTokenBytes bounds one token: longer runs of letters (base64 blobs,
// hashes) are cut, so that neither a query nor a description can make a
// term of unbounded length.
const maxTokenBytes = 64

// splitWords appends to dst the words of s, lower-cased: runs of letters
// and digits, split where snake_case, kebab-case, dots, spaces or any
// other punctuation separate them and where camelCase changes case
// ("getHTTPResponse" gives get, http, response). Letters and digits in one
// run stay together ("s3", "ec2", "base64"), as they name things. A run
// that camelCase splits is given whole as well, after its parts
// ("GitHub" gives git, hub, github), so that it matches the same name
// written in one case.
func splitWords(s string, dst []string) []string {
	start := -1         // byte offset of the word being read, or -1
	run, parts := -1, 0 // the run of letters and digits being read, and its words so far
	var prev, prev2 rune
	word := func(w string) {
		if len(w) > maxTokenBytes {
			w = w[:maxTokenBytes]
			for !utf8.ValidString(w) {
				w = w[:len(w)-1]
			}
		}
		dst = append(dst, strings.ToLower(w))
	}
	flush := func(end int) {
		if start >= 0 && end > start {
			word(s[start:end])
			parts++
		}
		start = -1
	}
	endRun := func(end int) {
		flush(end)
		if parts > 1 {
			word(s[run:end])
		}
		run, parts = -1, 0
	}
	for i, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			endRun(i)
			prev, prev2 = 0, 0
			continue
		}
		if start < 0 {
			start = i
			if run < 0 {
				run = i
			}
		} else if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) && unicode.IsLetter(prev2)) {
			// fooBar, s3Bucket: a capital after a lower-case letter (or after
			// a digit that ends a word) opens a word.
			flush(i)
			start = i
		} else if unicode.IsLower(r) && unicode.IsUpper(prev) && unicode.IsUpper(prev2) {
			// HTTPResponse: the last capital of a run opens the next word.
			j := i - utf8.RuneLen(prev)
			flush(j)
			start = j
		}
		prev2, prev = prev, r
	}
	endRun(len(s))
	return dst
}

// stopWords are function words that carry no meaning for a search. They
// are left out of both the index and queries, which also keeps the
// posting lists that every query would walk ("the", "a") out of the index.
// Like the other tables, it is made on first use, not when the program
// starts (every junction command links this package).
var stopWords = sync.OnceValue(func() map[string]bool {
	return setOf(`a an the and or but if then else of to in on at by for with from into onto
about as is are was were be been being am do does did doing have has had having can could
should would will shall may might must i me my mine we us our ours you your yours he him his she
her it its they them their this that these those there here what which who whom whose when where
why how all any some each every no nor not only own same so than too very just also please
let via etc e g i e eg ie s t whether either neither`)
})

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
