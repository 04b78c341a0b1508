// Package toolsearch ranks a hub's tools for a natural-language query,
// for the "search" discovery mode, where a host finds tools by asking
// instead of reading a list of hundreds.
//
// An [Index] holds the tools of every source. [Index.SetSource] replaces
// one source's tools and [Index.RemoveSource] drops them, each touching
// only that source's entries and updating the collection's statistics
// (document frequencies, average field lengths) by the difference, so
// that a change on one server never rebuilds the rest. [Index.Search]
// ranks with BM25F over four fields of each tool (its name, its
// description, its parameters and its server's name, title and
// instructions), after stemming, with a small table of synonyms of
// general software vocabulary, and three signals beside it: the request's
// verb and nouns against the tool name's (intent.go), each word's own
// form beside its stem (stemForm), and tolerance of one-letter typos
// (typo.go); docs/discovery.md ("Ranking") explains the weights. A search sees only the tools its caller may see: the caller
// passes its profile as a filter, and a tool the filter rejects is neither
// returned nor counted.
//
// An Index is safe for concurrent use: searches run in parallel with each
// other and wait only while a source is being replaced.
package toolsearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Tool is one tool as the index needs it.
type Tool struct {
	// Name is the name callers know the tool by (the hub's exposed name,
	// prefix and all): what a hit returns. It is unique in the index.
	Name string
	// LocalName is the tool's own name at its server, without the hub's
	// prefix; the name field indexes it instead of Name when it is set,
	// so that a prefix does not count the server's name twice.
	LocalName string
	// Title is the tool's display title, if it has one; it is indexed
	// with the name.
	Title       string
	Description string
	// InputSchema is the tool's JSON Schema, or nil. Its parameters'
	// names, titles, descriptions and string enum values are indexed.
	InputSchema json.RawMessage
}

// maxInstructions bounds the bytes of a source's instructions that are
// indexed: their opening says what the server is for; the rest (usage
// rules, long examples) would only dilute the field that holds the
// server's name.
const maxInstructions = 1024

// clip returns s cut to at most n bytes, at a space if there is one in
// its last quarter, so that no word is indexed in part.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	if i := strings.LastIndexByte(s, ' '); i > n*3/4 {
		s = s[:i]
	}
	return s
}

// Source is the server-level text of a source: a query may name the
// server ("in my Aiven account") or use words of its instructions (the
// first [maxInstructions] bytes).
type Source struct {
	Name         string // the source's name, as Hit.Server and SearchOptions.Servers give it
	Title        string
	Instructions string
}

// Limits of [Index.Search].
const (
	MaxQueryBytes = 4096 // the longest query accepted
	MaxLimit      = 50   // the most hits one search returns
	DefaultLimit  = 10   // the hits returned when SearchOptions.Limit is 0
	// maxQueryTerms bounds the distinct words of a query that count;
	// the rest are ignored, so that a search's cost has a bound.
	maxQueryTerms = 64
)

// Fields of a tool. The server's field is held once per source.
const (
	fName = iota
	fDesc
	fParams
	fServer
	nFields
)

// Index is a searchable set of tools, grouped by source. The zero value
// is not usable; call [New].
type Index struct {
	mu sync.RWMutex

	terms    map[string]int32 // term → id
	termText []string         // id → term, "" when free
	post     [][]posting      // id → the tools whose own fields hold the term
	srcPost  [][]srcPosting   // id → the sources whose text holds the term
	srcDF    []int32          // id → the tools of the sources in srcPost
	free     []int32          // term ids to reuse

	docs     []doc // by slot; a removed tool leaves a free slot
	freeDocs []int32
	byName   map[string]int32 // tool name → slot

	sources  map[string]*source
	live     int            // tools indexed
	fieldSum [nFields]int64 // total length of each field over live tools (fServer: over sources)
	srcLive  int            // sources indexed
	scratch  sync.Pool      // *scratch
}

type posting struct {
	doc int32
	tf  [fServer]uint8 // occurrences in the name, description and parameters
}

type srcPosting struct {
	src *source
	tf  uint16
}

type doc struct {
	name     string
	src      *source
	len      [fServer]uint16 // words in each field
	distinct [fServer]uint16 // distinct words in each field
	terms    []int32         // the distinct terms of the tool's fields
	intent   nameIntent      // the verb and nouns of its name
	live     bool
}

type source struct {
	name  string
	docs  []int32 // slots of its tools
	terms []int32 // the distinct terms of its text
	len   int     // words in its text
}

// New returns an empty index.
func New() *Index {
	return &Index{
		terms:   map[string]int32{},
		byName:  map[string]int32{},
		sources: map[string]*source{},
	}
}

// Len reports how many tools the index holds.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// SetSource replaces every tool of the source src.Name with tools (none
// when tools is empty: the source stays, with its text, and no tools).
// Other sources' entries are not touched. It fails, changing nothing,
// when src.Name is empty, a tool has no name, or a name is given twice
// or is held by another source's tool.
func (x *Index) SetSource(src Source, tools []Tool) error {
	if src.Name == "" {
		return errors.New("toolsearch: source has no name")
	}
	// Analyse outside the lock: tokenising and stemming is most of the work.
	seen := make(map[string]bool, len(tools))
	docs := make([]analysedDoc, len(tools))
	for i, t := range tools {
		if t.Name == "" {
			return fmt.Errorf("toolsearch: source %q: tool %d has no name", src.Name, i)
		}
		if seen[t.Name] {
			return fmt.Errorf("toolsearch: source %q: tool %q given twice", src.Name, t.Name)
		}
		seen[t.Name] = true
		docs[i] = analyseTool(t)
	}
	// A source's name and title mostly name one thing twice ("github",
	// "GitHub"): their words count once each.
	var srcText terms
	for _, tc := range analyse(nil, src.Name, src.Title).counts() {
		srcText = append(srcText, tc.term)
	}
	srcText = analyse(srcText, clip(src.Instructions, maxInstructions))

	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range tools {
		if slot, ok := x.byName[t.Name]; ok && x.docs[slot].src.name != src.Name {
			return fmt.Errorf("toolsearch: source %q: tool %q is already indexed for source %q", src.Name, t.Name, x.docs[slot].src.name)
		}
	}
	x.removeLocked(src.Name)
	s := &source{name: src.Name, docs: make([]int32, 0, len(docs))}
	x.sources[src.Name] = s
	x.srcLive++
	for i := range docs {
		s.docs = append(s.docs, x.addDocLocked(tools[i].Name, s, &docs[i]))
	}
	for _, tc := range srcText.counts() {
		id := x.termLocked(tc.term)
		x.srcPost[id] = append(x.srcPost[id], srcPosting{src: s, tf: uint16(min(tc.n, 65535))})
		x.srcDF[id] += int32(len(s.docs))
		s.terms = append(s.terms, id)
	}
	s.len = len(srcText)
	x.fieldSum[fServer] += int64(s.len)
	return nil
}

// RemoveSource drops the source and all its tools; a source the index
// does not hold is ignored.
func (x *Index) RemoveSource(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeLocked(name)
}

func (x *Index) removeLocked(name string) {
	s := x.sources[name]
	if s == nil {
		return
	}
	for _, id := range s.terms {
		ps := x.srcPost[id]
		for i := range ps {
			if ps[i].src == s {
				ps[i] = ps[len(ps)-1]
				x.srcPost[id] = ps[:len(ps)-1]
				break
			}
		}
		x.srcDF[id] -= int32(len(s.docs))
		x.releaseTermLocked(id)
	}
	x.fieldSum[fServer] -= int64(s.len)
	for _, slot := range s.docs {
		x.removeDocLocked(slot)
	}
	delete(x.sources, name)
	x.srcLive--
}

func (x *Index) addDocLocked(name string, s *source, a *analysedDoc) int32 {
	var slot int32
	if n := len(x.freeDocs); n > 0 {
		slot = x.freeDocs[n-1]
		x.freeDocs = x.freeDocs[:n-1]
	} else {
		slot = int32(len(x.docs))
		x.docs = append(x.docs, doc{})
	}
	d := &x.docs[slot]
	*d = doc{name: name, src: s, live: true, terms: make([]int32, 0, len(a.terms)), intent: a.intent}
	for f := range fServer {
		d.len[f] = uint16(min(a.len[f], 65535))
		d.distinct[f] = uint16(min(a.distinct[f], 65535))
		x.fieldSum[f] += int64(d.len[f])
	}
	for _, at := range a.terms {
		id := x.termLocked(at.term)
		x.post[id] = append(x.post[id], posting{doc: slot, tf: at.tf})
		d.terms = append(d.terms, id)
	}
	x.byName[name] = slot
	x.live++
	return slot
}

func (x *Index) removeDocLocked(slot int32) {
	d := &x.docs[slot]
	for _, id := range d.terms {
		ps := x.post[id]
		for i := range ps {
			if ps[i].doc == slot {
				// Order within a posting list does not matter to scoring.
				ps[i] = ps[len(ps)-1]
				x.post[id] = ps[:len(ps)-1]
				break
			}
		}
		x.releaseTermLocked(id)
	}
	for f := range fServer {
		x.fieldSum[f] -= int64(d.len[f])
	}
	delete(x.byName, d.name)
	*d = doc{}
	x.freeDocs = append(x.freeDocs, slot)
	x.live--
}

// termLocked returns the id of term, adding it to the dictionary.
func (x *Index) termLocked(term string) int32 {
	if id, ok := x.terms[term]; ok {
		return id
	}
	var id int32
	if n := len(x.free); n > 0 {
		id = x.free[n-1]
		x.free = x.free[:n-1]
		x.termText[id] = term
	} else {
		id = int32(len(x.termText))
		x.termText = append(x.termText, term)
		x.post = append(x.post, nil)
		x.srcPost = append(x.srcPost, nil)
		x.srcDF = append(x.srcDF, 0)
	}
	x.terms[term] = id
	return id
}

// releaseTermLocked frees the term id when nothing holds the term any more.
func (x *Index) releaseTermLocked(id int32) {
	if len(x.post[id]) > 0 || len(x.srcPost[id]) > 0 {
		return
	}
	delete(x.terms, x.termText[id])
	x.termText[id] = ""
	x.post[id] = nil
	x.srcPost[id] = nil
	x.srcDF[id] = 0
	x.free = append(x.free, id)
}

// MemoryBytes estimates the bytes the index holds: its dictionary,
// posting lists, tools and sources (slice capacities, string bytes and
// about 48 bytes per map entry). The benchmarks measure the heap as well.
func (x *Index) MemoryBytes() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	const mapEntry, strHdr, sliceHdr = 48, 16, 24
	var n int64
	for term := range x.terms {
		n += mapEntry + int64(len(term)) // the dictionary's key; termText shares the bytes
	}
	n += int64(cap(x.termText))*strHdr + int64(cap(x.post)+cap(x.srcPost))*sliceHdr + int64(cap(x.srcDF))*4 + int64(cap(x.free))*4
	for i := range x.post {
		n += int64(cap(x.post[i]))*8 + int64(cap(x.srcPost[i]))*16
	}
	n += int64(cap(x.docs))*int64(strHdr+8+2*fServer+2+sliceHdr+8) + int64(cap(x.freeDocs))*4
	for i := range x.docs {
		n += int64(len(x.docs[i].name)) + int64(cap(x.docs[i].terms))*4
		for _, nn := range x.docs[i].intent.nouns {
			n += int64(strHdr + 8 + len(nn.term)) // the noun and its flag, padded
		}
	}
	n += int64(len(x.byName)) * (mapEntry + strHdr) // keys share the tools' name bytes
	for name, s := range x.sources {
		n += mapEntry + int64(len(name)) + 80 + int64(cap(s.docs)+cap(s.terms))*4
	}
	return n
}
