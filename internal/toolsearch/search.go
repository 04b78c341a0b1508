package toolsearch

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
)

// SearchOptions are the caller's limits on a search.
type SearchOptions struct {
	// Limit is the most hits to return, 1 to MaxLimit; 0 means
	// DefaultLimit.
	Limit int
	// Servers, when not empty, keeps only the tools of these sources.
	Servers []string
	// Allow, when not nil, is the caller's profile: a tool for whose name
	// it returns false is neither returned nor counted in Matched. It is
	// called with the index's read lock held and must not call the index.
	Allow func(name string) bool
}

// Hit is one tool found, best first in Result.Hits.
type Hit struct {
	Name   string  // the tool's name (Tool.Name)
	Server string  // its source (Source.Name)
	Score  float64 // its relevance: higher is better; comparable within one search only
}

// Result is the answer to a search.
type Result struct {
	Hits []Hit
	// Matched counts the tools, among those the filters let through,
	// that share at least one term with the query: how many a larger
	// limit could have returned.
	Matched int
}

// scoring holds the ranking's constants; docs/discovery.md ("Ranking")
// gives the reasons for each.
type scoring struct {
	k1      float64
	weight  [nFields]float64 // BM25F field weights
	b       [nFields]float64 // BM25F length normalisation per field
	syn     float64          // weight of a synonym's occurrences against the query word's own
	cover   [2]float64       // bonus for the share of the tool's name and description the query covers
	quoted  float64          // weight of a query word in quotes
	number  float64          // weight of a query word that is a number
	recency float64          // weight of a query word that asks for the newest items (recencyWords)
	bigram  float64          // weight of two neighbouring query words found side by side
	verb    float64          // bonus when the request's verb and the tool name's are of one class, malus when not
	plural  float64          // bonus for the tool name's nouns the request writes in the same number
	typo    float64          // weight of a dictionary word at one edit from a query word the dictionary lacks
	form    float64          // share of a word's weight that its form (stemForm) carries, when it has one
}

var defaultScoring = scoring{
	k1:      1.2,
	weight:  [nFields]float64{fName: 2, fDesc: 1, fParams: 0.5, fServer: 1.5},
	b:       [nFields]float64{fName: 0.5, fDesc: 0.75, fParams: 0.75, fServer: 0.5},
	syn:     0.5,
	cover:   [2]float64{3, 4},
	quoted:  0.3,
	number:  0.3,
	recency: 0.5,
	bigram:  0.15,
	verb:    0.5,
	plural:  0.5,
	typo:    0.5,
	form:    0.3,
}

// qterm is one term a query word looks for, with the weight of its
// occurrences, and the weight with which a tool holding it counts as
// covering the word (the coverage bonus).
type qterm struct {
	id    int32
	w     float64
	cover float64
}

// concept is one word of the query: its own term and its synonyms, whose
// occurrences add up before BM25's saturation, so that a tool that says
// both "fetch" and "retrieve" does not count the word twice.
type concept struct {
	terms []qterm
	df    int     // document frequency for the idf: the word's own, else its synonyms' largest
	w     float64 // the word's weight in the query
	pair  bool    // two neighbouring words, not one
}

// scratch is a search's working memory, pooled.
type scratch struct {
	acc     []float64    // per tool: the current concept's weighted term frequency
	covAcc  [2][]float64 // per field (name, description) and tool: the current concept's weight there
	cov     [2][]float64 // per field and tool: the query words it holds
	score   []float64    // per tool: the score so far
	inConc  []int32      // tools the current concept touched
	touched []int32      // tools any concept touched
}

// Search ranks the tools for query. It fails when the query is empty or
// blank, longer than MaxQueryBytes, or opts.Limit is out of range. A
// query without a word the index knows matches nothing (no error).
func (x *Index) Search(query string, opts SearchOptions) (Result, error) {
	limit := opts.Limit
	switch {
	case strings.TrimSpace(query) == "":
		return Result{}, errors.New("toolsearch: empty query")
	case len(query) > MaxQueryBytes:
		return Result{}, fmt.Errorf("toolsearch: query of %d bytes, over the limit of %d", len(query), MaxQueryBytes)
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return Result{}, fmt.Errorf("toolsearch: limit %d out of range 1 to %d", opts.Limit, MaxLimit)
	}
	words := queryWords(query)

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.live == 0 || len(words) == 0 {
		return Result{}, nil
	}
	concepts := x.conceptsLocked(words)
	intent := intentOf(query)
	sc := x.getScratch()
	defer x.scratch.Put(sc)
	x.scoreLocked(concepts, &intent, &defaultScoring, sc)
	return x.collectLocked(sc, opts, limit), nil
}

// qword is a distinct word of a query: its stem, its weight and its form
// term ("" when it has none).
type qword struct {
	term string
	w    float64
	form string
}

// queryWords returns the distinct stemmed words of a query, without stop
// words (unless it has nothing else), at most maxQueryTerms of them. A
// word inside quotes (a value the request gives: a name, a path, a
// message) and a number weigh less than the words that say what to do.
func queryWords(query string) []qword {
	var out []qword
	at := map[string]int{}
	add := func(w, form string, weight float64) {
		if i, ok := at[w]; ok {
			out[i].w = max(out[i].w, weight)
			return
		}
		if len(out) < maxQueryTerms {
			at[w] = len(out)
			out = append(out, qword{w, weight, form})
		}
	}
	var words []string
	for _, span := range quoteSpans(query) {
		words = splitWords(span.text, words[:0])
		for _, w := range words {
			if stopWords()[w] {
				continue
			}
			weight := 1.0
			if span.quoted {
				weight = defaultScoring.quoted
			}
			if isNumber(w) {
				weight = min(weight, defaultScoring.number)
			}
			if recencyWords()[w] {
				weight = min(weight, defaultScoring.recency)
			}
			if weight > 0 {
				st, form := stemForm(w)
				add(st, form, weight)
			}
		}
	}
	if len(out) == 0 {
		for _, w := range splitWords(query, nil) {
			st, form := stemForm(w)
			add(st, form, 1)
		}
	}
	if defaultScoring.bigram > 0 {
		n := len(out)
		for i := 1; i < n; i++ {
			add(out[i-1].term+pairSep+out[i].term, "", defaultScoring.bigram*min(out[i-1].w, out[i].w))
		}
	}
	return out
}

func isNumber(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}

type span struct {
	text   string
	quoted bool
}

// quoteSpans cuts a query into the parts outside and inside quotes:
// "double", `back` and 'single' quotes, a single quote only where it
// opens and closes a word (not the one in "user's"). An unclosed quote
// quotes nothing.
func quoteSpans(q string) []span {
	var out []span
	start := 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c != '"' && c != '`' && c != '\'' {
			continue
		}
		if c == '\'' && i > 0 && isWordByte(q[i-1]) {
			continue
		}
		j := i + 1
		for ; j < len(q); j++ {
			if q[j] == c && (c != '\'' || j+1 == len(q) || !isWordByte(q[j+1])) {
				break
			}
		}
		if j >= len(q) {
			continue
		}
		out = append(out, span{q[start:i], false}, span{q[i+1 : j], true})
		start, i = j+1, j
	}
	return append(out, span{q[start:], false})
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (x *Index) df(id int32) int {
	return min(len(x.post[id])+int(x.srcDF[id]), x.live)
}

func (x *Index) conceptsLocked(words []qword) []concept {
	var out []concept
	typos := 0
	for _, qw := range words {
		w := qw.term
		c := concept{w: qw.w, pair: strings.Contains(w, pairSep)}
		if id, ok := x.terms[w]; ok {
			c.terms = append(c.terms, qterm{id, 1, 1})
			c.df = x.df(id)
			// The word's own form shares its weight with the stem: a tool
			// with the form gets it all, one with only the stem (a word of
			// another derivation) gets the rest.
			if fid, ok := x.terms[qw.form]; ok && qw.form != "" && defaultScoring.form > 0 {
				c.terms[0].w = 1 - defaultScoring.form
				c.terms = append(c.terms, qterm{fid, defaultScoring.form, 0})
			}
		}
		if len(c.terms) == 0 && !c.pair && !isNumber(w) && typos < maxTypoWords && defaultScoring.typo > 0 {
			typos++
			for _, id := range x.nearTermsLocked(w) {
				c.terms = append(c.terms, qterm{id, defaultScoring.typo, defaultScoring.typo})
				c.df = max(c.df, x.df(id))
			}
		}
		for _, s := range synonyms()[w] {
			if id, ok := x.terms[s]; ok {
				c.terms = append(c.terms, qterm{id, defaultScoring.syn, defaultScoring.syn})
				if len(c.terms) == 1 || c.terms[0].cover != 1 {
					c.df = max(c.df, x.df(id))
				}
			}
		}
		if len(c.terms) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (x *Index) getScratch() *scratch {
	sc, _ := x.scratch.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if n := len(x.docs); len(sc.acc) < n {
		sc.acc = make([]float64, n)
		sc.score = make([]float64, n)
		for f := range sc.covAcc {
			sc.covAcc[f] = make([]float64, n)
			sc.cov[f] = make([]float64, n)
		}
	}
	sc.touched = sc.touched[:0]
	return sc
}

// scoreLocked adds each concept's BM25F score to sc.score, then the
// bonus for the share of each tool's name and description the query
// covers, and the intent bonus (intentScore).
func (x *Index) scoreLocked(concepts []concept, intent *queryIntent, p *scoring, sc *scratch) {
	var invAvg [nFields]float64
	for f := range fServer {
		if x.fieldSum[f] > 0 {
			invAvg[f] = float64(x.live) / float64(x.fieldSum[f])
		}
	}
	if x.fieldSum[fServer] > 0 {
		invAvg[fServer] = float64(x.srcLive) / float64(x.fieldSum[fServer])
	}
	n := float64(x.live)
	for _, c := range concepts {
		sc.inConc = sc.inConc[:0]
		for _, qt := range c.terms {
			for _, ps := range x.post[qt.id] {
				d := &x.docs[ps.doc]
				v := 0.0
				for f := range fServer {
					if ps.tf[f] > 0 {
						norm := 1 - p.b[f] + p.b[f]*float64(d.len[f])*invAvg[f]
						v += p.weight[f] * float64(ps.tf[f]) / norm
					}
				}
				if sc.acc[ps.doc] == 0 {
					sc.inConc = append(sc.inConc, ps.doc)
				}
				sc.acc[ps.doc] += qt.w * v
				if !c.pair {
					for f := range sc.covAcc {
						if ps.tf[f] > 0 {
							sc.covAcc[f][ps.doc] = max(sc.covAcc[f][ps.doc], qt.cover)
						}
					}
				}
			}
			for _, sp := range x.srcPost[qt.id] {
				norm := 1 - p.b[fServer] + p.b[fServer]*float64(sp.src.len)*invAvg[fServer]
				v := qt.w * p.weight[fServer] * float64(sp.tf) / norm
				for _, slot := range sp.src.docs {
					if sc.acc[slot] == 0 {
						sc.inConc = append(sc.inConc, slot)
					}
					sc.acc[slot] += v
				}
			}
		}
		df := float64(c.df)
		idf := c.w * math.Log(1+(n-df+0.5)/(df+0.5))
		for _, slot := range sc.inConc {
			tf := sc.acc[slot]
			sc.acc[slot] = 0
			if sc.score[slot] == 0 {
				sc.touched = append(sc.touched, slot)
			}
			sc.score[slot] += idf * tf * (p.k1 + 1) / (p.k1 + tf)
			for f := range sc.covAcc {
				sc.cov[f][slot] += c.w * sc.covAcc[f][slot]
				sc.covAcc[f][slot] = 0
			}
		}
	}
	for _, slot := range sc.touched {
		d := &x.docs[slot]
		for f := range sc.cov {
			if d.distinct[f] > 0 {
				sc.score[slot] += p.cover[f] * min(1, sc.cov[f][slot]/float64(d.distinct[f]))
			}
			sc.cov[f][slot] = 0
		}
		sc.score[slot] += intentScore(intent, &d.intent, p)
	}
}

// collectLocked filters the scored tools, counts them and returns the
// best limit of them; it clears sc.score as it goes.
func (x *Index) collectLocked(sc *scratch, opts SearchOptions, limit int) Result {
	var res Result
	top := make([]Hit, 0, limit+1)
	for _, slot := range sc.touched {
		s := sc.score[slot]
		sc.score[slot] = 0
		d := &x.docs[slot]
		if len(opts.Servers) > 0 && !slices.Contains(opts.Servers, d.src.name) {
			continue
		}
		if opts.Allow != nil && !opts.Allow(d.name) {
			continue
		}
		res.Matched++
		if len(top) == limit && !better(s, d.name, top[limit-1]) {
			continue
		}
		h := Hit{Name: d.name, Server: d.src.name, Score: s}
		i, _ := slices.BinarySearchFunc(top, h, func(a, b Hit) int {
			if better(a.Score, a.Name, b) {
				return -1
			}
			return 1
		})
		top = slices.Insert(top, i, h)
		if len(top) > limit {
			top = top[:limit]
		}
	}
	res.Hits = top
	return res
}

// better orders hits: the higher score first, then the name, so that
// equal scores come out in the same order every time.
func better(score float64, name string, h Hit) bool {
	if score != h.Score {
		return score > h.Score
	}
	return name < h.Name
}

// recencyWords say which items a request wants ("the latest issues"), a
// choice that a tool's parameters (sort, limit, since) make; they rarely
// say which tool. They weigh scoring.recency.
var recencyWords = sync.OnceValue(func() map[string]bool { return setOf("latest recent") })
