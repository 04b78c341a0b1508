package toolsearch

// stem reduces an English word to its stem with M. F. Porter's algorithm
// ("An algorithm for suffix stripping", 1980), written for this package:
// "connections", "connected" and "connecting" all become "connect",
// "repositories" becomes "repositori", as does "repository". Words of
// fewer than three letters, words with a digit or a letter outside a-z,
// and words longer than 32 bytes are returned as they are.
func stem(w string) string {
	st, _ := stemForm(w)
	return st
}

// formPrefix opens a form term (see stemForm); no word holds it.
const formPrefix = "~"

// stemForm returns the stem of w (as stem does) and the term of its
// inflected form, or "" when that is its stem. The form is the word
// without its inflection (plural, -ed, -ing: Porter's first step), but
// with its derivation: "active" gives "~active", "activity" and
// "activities" give "~activiti", "activate" and "activated" give
// "~activate", where all of them stem to "activ". Matched beside the
// stem, it lets a tool that says the request's own word outrank one that
// says a word derived from the same root.
func stemForm(w string) (stem, form string) {
	s, ok := newStemmer(w)
	if !ok {
		return w, ""
	}
	if a := american(w); a != w {
		s.b = []byte(a)
	}
	s.step1ab()
	s.step1c()
	var buf [32]byte // the form: words longer than 32 bytes are not stemmed
	n := copy(buf[:], s.b)
	s.step2()
	s.step3()
	s.step4()
	s.step5()
	if string(s.b) == string(buf[:n]) {
		return string(s.b), ""
	}
	return string(s.b), formPrefix + string(buf[:n])
}

// newStemmer returns a stemmer for w, or false when w is left as it is.
func newStemmer(w string) (stemmer, bool) {
	if len(w) < 3 || len(w) > 32 {
		return stemmer{}, false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return stemmer{}, false
		}
	}
	return stemmer{b: []byte(w)}, true
}

type stemmer struct {
	b []byte
	j int // the end of the stem (exclusive) when a suffix matched
}

// cons says whether b[i] is a consonant: not a vowel, and a y only where
// it follows a vowel (or opens the word).
func (s *stemmer) cons(i int) bool {
	switch s.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !s.cons(i-1)
	}
	return true
}

// m is Porter's measure of b[:j]: the number of vowel-consonant sequences.
func (s *stemmer) m() int {
	n, i := 0, 0
	for i < s.j && s.cons(i) {
		i++
	}
	for i < s.j {
		for i < s.j && !s.cons(i) {
			i++
		}
		if i >= s.j {
			break
		}
		for i < s.j && s.cons(i) {
			i++
		}
		n++
	}
	return n
}

// vowelInStem says whether b[:j] has a vowel.
func (s *stemmer) vowelInStem() bool {
	for i := 0; i < s.j; i++ {
		if !s.cons(i) {
			return true
		}
	}
	return false
}

// doubleC says whether b[i-1:i+1] is a double consonant.
func (s *stemmer) doubleC(i int) bool {
	return i >= 1 && s.b[i] == s.b[i-1] && s.cons(i)
}

// cvc says whether b[i-2:i+1] is consonant-vowel-consonant and the last
// is not w, x or y (hop, not hoop or snow).
func (s *stemmer) cvc(i int) bool {
	if i < 2 || !s.cons(i) || s.cons(i-1) || !s.cons(i-2) {
		return false
	}
	switch s.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends says whether b ends with suf, and sets j to where suf starts.
func (s *stemmer) ends(suf string) bool {
	if len(suf) > len(s.b) || string(s.b[len(s.b)-len(suf):]) != suf {
		return false
	}
	s.j = len(s.b) - len(suf)
	return true
}

// setTo replaces b[j:] with r.
func (s *stemmer) setTo(r string) { s.b = append(s.b[:s.j], r...) }

// r replaces the suffix with r when the stem's measure is above 0.
func (s *stemmer) r(r string) {
	if s.m() > 0 {
		s.setTo(r)
	}
}

func (s *stemmer) step1ab() {
	if s.b[len(s.b)-1] == 's' {
		switch {
		case s.ends("sses"):
			s.b = s.b[:len(s.b)-2]
		case s.ends("ies"):
			s.setTo("i")
		case len(s.b) >= 2 && s.b[len(s.b)-2] != 's':
			s.b = s.b[:len(s.b)-1]
		}
	}
	if s.ends("eed") {
		if s.m() > 0 {
			s.b = s.b[:len(s.b)-1]
		}
		return
	}
	if !(s.ends("ed") || s.ends("ing")) || !s.vowelInStem() {
		return
	}
	s.b = s.b[:s.j]
	switch {
	case s.ends("at"):
		s.setTo("ate")
	case s.ends("bl"):
		s.setTo("ble")
	case s.ends("iz"):
		s.setTo("ize")
	case s.doubleC(len(s.b) - 1):
		switch s.b[len(s.b)-1] {
		case 'l', 's', 'z':
		default:
			s.b = s.b[:len(s.b)-1]
		}
	default:
		s.j = len(s.b)
		if s.m() == 1 && s.cvc(len(s.b)-1) {
			s.b = append(s.b, 'e')
		}
	}
}

func (s *stemmer) step1c() {
	if s.ends("y") && s.vowelInStem() {
		s.b[len(s.b)-1] = 'i'
	}
}

var step2Rules = [][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"},
	{"izer", "ize"}, {"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"},
	{"ousli", "ous"}, {"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"},
	{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}, {"logi", "log"},
}

var step3Rules = [][2]string{
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

// step4Suffixes is in Porter's order of trial: where one suffix ends
// another (ement, ment, ent), the longer comes first.
var step4Suffixes = []string{
	"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
	"ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
}

func (s *stemmer) rules(rules [][2]string) {
	for _, r := range rules {
		if s.ends(r[0]) {
			s.r(r[1])
			return
		}
	}
}

func (s *stemmer) step2() { s.rules(step2Rules) }
func (s *stemmer) step3() { s.rules(step3Rules) }

func (s *stemmer) step4() {
	for _, suf := range step4Suffixes {
		if !s.ends(suf) {
			continue
		}
		if suf == "ion" && (s.j == 0 || s.b[s.j-1] != 's' && s.b[s.j-1] != 't') {
			return
		}
		if s.m() > 1 {
			s.b = s.b[:s.j]
		}
		return
	}
}

func (s *stemmer) step5() {
	if s.ends("e") {
		m := s.m()
		if m > 1 || m == 1 && !s.cvc(len(s.b)-2) {
			s.b = s.b[:len(s.b)-1]
		}
	}
	s.j = len(s.b)
	if len(s.b) >= 2 && s.b[len(s.b)-1] == 'l' && s.doubleC(len(s.b)-1) && s.m() > 1 {
		s.b = s.b[:len(s.b)-1]
	}
}
