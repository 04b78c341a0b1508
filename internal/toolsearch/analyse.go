package toolsearch

import (
	"slices"
	"sort"
)

// terms is the analysed text of a field: its words, split, lower-cased,
// without stop words, stemmed.
type terms []string

// analyse appends to dst the terms of each text.
func analyse(dst terms, texts ...string) terms {
	dst, _ = analyseForms(dst, nil, texts...)
	return dst
}

// analyseForms appends to dst the terms of each text, and to forms the
// form term (stemForm) of each word that has one (a tool's fields index
// them; a source's text does not).
func analyseForms(dst, forms terms, texts ...string) (terms, terms) {
	var words []string
	for _, s := range texts {
		words = splitWords(s, words[:0])
		for _, w := range words {
			if !stopWords()[w] {
				st, form := stemForm(w)
				dst = append(dst, st)
				if form != "" {
					forms = append(forms, form)
				}
			}
		}
	}
	return dst, forms
}

type termCount struct {
	term string
	n    int
}

// counts returns each distinct term with its number of occurrences, in
// the order of first occurrence.
func (ts terms) counts() []termCount {
	idx := make(map[string]int, len(ts))
	var out []termCount
	for _, t := range ts {
		if i, ok := idx[t]; ok {
			out[i].n++
			continue
		}
		idx[t] = len(out)
		out = append(out, termCount{t, 1})
	}
	return out
}

// analysedDoc is a tool ready to be indexed.
type analysedDoc struct {
	len      [fServer]int
	distinct [fServer]int // distinct words (not pairs) in each field
	terms    []docTerm
	intent   nameIntent
}

type docTerm struct {
	term string
	tf   [fServer]uint8
}

func analyseTool(t Tool) analysedDoc {
	name := t.LocalName
	if name == "" {
		name = t.Name
	}
	texts := [fServer][]string{
		fName:   {name, t.Title},
		fDesc:   {t.Description},
		fParams: schemaText(t.InputSchema, nil),
	}
	var undo string // the name's first word when it undoes another
	if w := splitWords(name, nil); len(w) > 0 && isUndo(w[0]) {
		undo = w[0]
	}
	var fields, forms [fServer]terms
	for f, ts := range texts {
		fields[f], forms[f] = analyseForms(nil, nil, ts...)
	}

	a := analysedDoc{intent: toolIntent(name, t.Description)}
	idx := map[string]int{}
	for f, ts := range fields {
		a.len[f] = len(ts)
		a.distinct[f] = len(ts.counts())
		if f != fParams {
			ts = withBigrams(ts)
		}
		ts = undoneWords(ts, undo, texts[f], f != fParams)
		ts = append(ts, forms[f]...) // occurrences, but not in the length
		for _, term := range ts {
			i, ok := idx[term]
			if !ok {
				i = len(a.terms)
				idx[term] = i
				a.terms = append(a.terms, docTerm{term: term})
			}
			if a.terms[i].tf[f] < 255 {
				a.terms[i].tf[f]++
			}
		}
	}
	sort.Slice(a.terms, func(i, j int) bool { return a.terms[i].term < a.terms[j].term })
	return a
}

// withBigrams returns the terms followed by each pair of neighbours,
// joined by a space (which no word holds): "list", "tabl", "list tabl".
// Pairs reward a tool whose text has the query's words side by side.
// pairSep joins the two words of a pair term.
const pairSep = " "

func withBigrams(ts terms) terms {
	out := append(terms(nil), ts...)
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i-1]+pairSep+ts[i])
	}
	return out
}

// undoneWords appends, for each occurrence in the texts of the undo verb
// that begins the tool's name (isUndo), the word it takes back ("ban" for
// "unban") and, where pairs are kept, that word's pair with the next one,
// so that "remove the ban on the user" finds unban_user as well as
// ban_user. They count as occurrences but not in the field's length or
// its distinct words.
func undoneWords(dst terms, undo string, texts []string, pairs bool) terms {
	if undo == "" {
		return dst
	}
	var words []string
	for _, s := range texts {
		words = splitWords(s, words[:0])
		words = slices.DeleteFunc(words, func(w string) bool { return stopWords()[w] })
		for i, w := range words {
			if w != undo {
				continue
			}
			root := stem(w[2:])
			dst = append(dst, root)
			if pairs && i+1 < len(words) {
				dst = append(dst, root+pairSep+stem(words[i+1]))
			}
		}
	}
	return dst
}
