package toolsearch

import (
	"strings"
	"sync"
)

// A server often offers several tools about one thing: get_issue,
// list_issues, create_issue, update_issue, delete_issue. Their
// descriptions share most words, so BM25F alone ranks them close
// together, and a request's verb and the number of its noun ("the issue
// with ID 12" against "all open issues") are what tell them apart. The
// intent signal compares the two with the tool's name, where MCP tools
// put their verb and noun:
//
//   - the action: the class of the request's first verb against the class
//     of the name's verb (read, create, update, delete, ...);
//   - the number: for each noun of the name the request holds, whether
//     both write it in the plural or both in the singular; a name with a
//     listing verb ("list", "search") or a word that says it acts on many
//     items ("delete_many", "batch_update_cells") counts as plural. A
//     name none of whose nouns the request holds but that says how many
//     items it acts on ("insert-many", "update-one") is compared with
//     whether the request writes anything in the plural.

// action is the class of a verb.
type action uint8

const (
	actNone action = iota
	actRead        // get, retrieve, list, show: reading one or many
	actSearch
	actCreate
	actUpdate
	actDelete
	actRun
	actStop
	actSend
)

// actionWords maps a verb (stemmed) to its class. The table is general
// software vocabulary, like the synonym table.
var actionWords = sync.OnceValue(func() map[string]action {
	m := map[string]action{}
	for act, words := range map[action]string{
		actRead:   "get retrieve fetch read obtain show view describe inspect list enumerate browse display",
		actSearch: "search find query lookup",
		actCreate: "create add new make insert generate register",
		actUpdate: "update modify edit change set patch rename replace",
		actDelete: "delete remove erase drop destroy purge",
		actRun:    "run execute invoke exec launch trigger start",
		actStop:   "stop halt terminate kill cancel abort",
		actSend:   "send post publish submit",
	} {
		for _, w := range splitWords(words, nil) {
			m[stem(w)] = act
		}
	}
	return m
})

// manyWords say that a name acts on many items at once: delete_many,
// batch_update_cells, BulkCreateRecords.
var manyWords = sync.OnceValue(func() map[string]bool { return setOf("many multiple bulk batch") })

// listingWords are the verbs of a name that returns many items at once.
var listingWords = sync.OnceValue(func() map[string]bool { return setOf("list enumerate search browse") })

// nameIntent is the intent of a tool's name: its verb's class and its
// other words, each marked plural or singular.
type nameIntent struct {
	act   action
	many  bool // the name's verb lists, or a word of it says it acts on many items (manyWords)
	said  bool // a word of the name says how many items it acts on: many (manyWords), or one ("one", "single")
	nouns []nameNoun
}

type nameNoun struct {
	term   string // stemmed
	plural bool
}

// toolIntent reads the intent of a tool's own name. A name without a
// verb of actionWords ("maps_place_details", "atlas-connect-cluster",
// "payment_methods") takes its action from the description's first word
// when that is one ("Lists ...", "Retrieves ..."): descriptions open with
// what the tool does.
func toolIntent(name, description string) nameIntent {
	var in nameIntent
	for _, w := range splitWords(name, nil) {
		if stopWords()[w] {
			continue
		}
		s := stem(w)
		if act, ok := actionWords()[s]; ok && in.act == actNone {
			in.act = act
			in.many = in.many || listingWords()[w]
			continue
		}
		if in.act == actNone && len(in.nouns) == 0 && isUndo(w) {
			in.act = actDelete
			continue
		}
		if m := manyWords()[w]; m || w == "one" || w == "single" {
			in.many, in.said = in.many || m, true
			continue
		}
		in.nouns = append(in.nouns, nameNoun{s, isPlural(w)})
	}
	if in.act == actNone {
		in.act = openingAction(description)
	}
	return in
}

// openingAction is the class of a description's first word other than
// a stop word, or actNone when that word is not a verb of actionWords.
func openingAction(description string) action {
	var words [8]string
	for _, w := range splitWords(clip(description, 64), words[:0]) {
		if !stopWords()[w] {
			return actionWords()[stem(w)]
		}
	}
	return actNone
}

// isPlural says whether an English noun is written in the plural, by its
// ending: "issues", "entries", not "status", "analysis", "class".
func isPlural(w string) bool {
	n := len(w)
	if n < 4 || w[n-1] != 's' {
		return false
	}
	switch w[n-2] {
	case 's', 'u', 'i':
		return false
	}
	return true
}

// queryIntent is the intent of a request: its first verb's class and
// the number each of its words is written in.
type queryIntent struct {
	act    action
	num    map[string]uint8 // stemmed word → numSingular|numPlural
	plural bool             // some word of it is a plural
}

const (
	numSingular = 1 << iota
	numPlural
)

// maxVerbPos bounds where the request's verb is looked for: among its
// first few words ("Please retrieve ...", "I need to find ...").
const maxVerbPos = 4

func intentOf(query string) queryIntent {
	in := queryIntent{num: map[string]uint8{}}
	pos := 0
	var words []string
	for _, span := range quoteSpans(query) {
		if span.quoted {
			continue
		}
		words = splitWords(span.text, words[:0])
		for _, w := range words {
			if stopWords()[w] || isNumber(w) {
				continue
			}
			s := stem(w)
			if act, ok := actionWords()[s]; ok && in.act == actNone && pos < maxVerbPos {
				in.act = act
			} else if in.act == actNone && pos == 0 && isUndo(w) {
				in.act = actDelete
			}
			pos++
			if isPlural(w) {
				in.plural = true
				in.num[s] |= numPlural
			} else {
				in.num[s] |= numSingular
			}
		}
	}
	return in
}

// intentScore is the intent bonus of a tool for a request: +1 when the
// verbs' classes agree, -1 when they differ (0 when either has none),
// plus the agreement of the name's nouns in number, from -1 to +1.
func intentScore(q *queryIntent, d *nameIntent, p *scoring) float64 {
	v := 0.0
	if q.act != actNone && d.act != actNone {
		if q.act == d.act {
			v += p.verb
		} else {
			v -= p.verb
		}
	}
	agree, differ := 0, 0
	for _, n := range d.nouns {
		got := q.num[n.term]
		if got == 0 {
			continue
		}
		plural := n.plural || d.many
		switch {
		case got&numPlural != 0 && plural, got&numSingular != 0 && !plural:
			agree++
		default:
			differ++
		}
	}
	if agree+differ > 0 {
		v += p.plural * float64(agree-differ) / float64(agree+differ)
	} else if d.said {
		// No noun of the name is in the request ("delete_many",
		// "update-one"): what the name says of how many items it acts on
		// against whether the request names items in the plural.
		if q.plural == d.many {
			v += p.plural
		} else {
			v -= p.plural
		}
	}
	return v
}

// isUndo says whether a verb undoes another by the prefix "un" (unban,
// unpublish, unpin, unarchive): a request to take something back, of the
// class of delete. Words that begin with "uni" (unique, union, unit,
// universal), "under", "until" and "unless" are not such verbs.
func isUndo(w string) bool {
	if len(w) < 5 || !strings.HasPrefix(w, "un") || w[2] == 'i' {
		return false
	}
	for _, p := range [...]string{"under", "until", "unless"} {
		if strings.HasPrefix(w, p) {
			return false
		}
	}
	return true
}
