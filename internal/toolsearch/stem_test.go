package toolsearch

import "testing"

func TestStem(t *testing.T) {
	// Outputs of Porter's reference implementation.
	for in, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
		"conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop", "tanned": "tan",
		"falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail", "filing": "file",
		"happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit", "rational": "ration",
		"digitizer": "digit", "operator": "oper", "feudalism": "feudal", "decisiveness": "decis",
		"hopefulness": "hope", "callousness": "callous", "triplicate": "triplic", "formative": "form",
		"formalize": "formal", "electrical": "electr", "hopeful": "hope", "goodness": "good",
		"revival": "reviv", "allowance": "allow", "inference": "infer", "airliner": "airlin",
		"adjustable": "adjust", "defensible": "defens", "irritant": "irrit", "replacement": "replac",
		"adjustment": "adjust", "dependent": "depend", "adoption": "adopt", "communism": "commun",
		"activate": "activ", "homologous": "homolog", "effective": "effect", "bowdlerize": "bowdler",
		"probate": "probat", "rate": "rate", "cease": "ceas", "controll": "control", "roll": "roll",
		"connections": "connect", "connected": "connect", "connecting": "connect",
		"repositories": "repositori", "repository": "repositori", "generalization": "gener",
		// Left alone: short, digits, upper case or not ASCII.
		"go": "go", "s3": "s3", "base64": "base64", "café": "café",
	} {
		if got := stem(in); got != want {
			t.Errorf("stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStemForm(t *testing.T) {
	for in, want := range map[string]string{
		"active": "~active", "activity": "~activiti", "activities": "~activiti",
		"activate": "~activate", "activated": "~activate", "generate": "~generate",
		// The form is the stem: no term of its own.
		"list": "", "listing": "", "users": "", "connected": "",
		// Left alone by the stemmer.
		"s3": "", "go": "",
	} {
		st, form := stemForm(in)
		if form != want || st != stem(in) {
			t.Errorf("stemForm(%q) = %q, %q, want %q, %q", in, st, form, stem(in), want)
		}
	}
}

// TestFormRanking checks that a tool with the request's own word
// outranks one with a word of another derivation from the same stem
// ("active" against "activate", both "activ"). Without the form the two
// tie, and the tie goes to the name first in order, "activate_sessions".
func TestFormRanking(t *testing.T) {
	t.Parallel()
	x := New()
	x.SetSource(Source{Name: "auth"}, []Tool{
		{Name: "activate_sessions", Description: "Sessions to activate."},
		{Name: "active_sessions", Description: "Sessions that are active."},
	})
	for q, want := range map[string]string{
		"list the active sessions":   "active_sessions",
		"activate the sessions":      "activate_sessions",
		"which sessions are active?": "active_sessions",
	} {
		r := mustSearch(t, x, q, SearchOptions{Limit: 3})
		if len(r.Hits) == 0 || r.Hits[0].Name != want {
			t.Errorf("%q: got %v, want %s first", q, names(r), want)
		}
	}
}

// TestAmericanSpelling: British spellings stem as the American ones do,
// and words that only look British keep matching their own family.
func TestAmericanSpelling(t *testing.T) {
	for _, pair := range [][2]string{
		{"organisation", "organization"}, {"organisations", "organizations"}, {"organise", "organize"},
		{"organising", "organizing"}, {"summarised", "summarized"}, {"analyse", "analyze"},
		{"colours", "colors"}, {"behavioural", "behavioral"}, {"favourite", "favorite"},
		{"centre", "center"}, {"catalogue", "catalog"}, {"licence", "license"},
		{"cancelled", "canceled"}, {"modelling", "modeling"},
		// Not British, and still one family.
		{"rising", "rise"}, {"raised", "raise"}, {"programmed", "program"},
		{"promised", "promise"}, {"enterprises", "enterprise"},
	} {
		if a, b := stem(pair[0]), stem(pair[1]); a != b {
			t.Errorf("stem(%q) = %q, stem(%q) = %q: want the same", pair[0], a, pair[1], b)
		}
	}
	for _, w := range []string{"rise", "wise", "noise", "our", "four", "hour", "filled", "called"} {
		if got := american(w); got != w {
			t.Errorf("american(%q) = %q, want it unchanged", w, got)
		}
	}
}

func TestMaxBritishWord(t *testing.T) {
	longest := 0
	for w := range britishWords() {
		longest = max(longest, len(w))
	}
	if longest != maxBritishWord {
		t.Errorf("the longest British word has %d letters, maxBritishWord is %d", longest, maxBritishWord)
	}
}
