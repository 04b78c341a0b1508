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
