package embed

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultK is the number of results [Embedder.Similar] returns when k is 0.
const DefaultK = 50

// minOrphans is the least number of vectors no tool uses that are kept
// (see Embedder.trimLocked).
const minOrphans = 256

// Doc is one tool's text to embed.
type Doc struct {
	// Name is the tool's name, as the lexical index and Similar's results
	// give it; unique among all sources.
	Name string
	// Text is what is embedded: the caller composes it (name, title,
	// description, parameters). A blank text is not embedded: the tool
	// ranks lexically only. Text beyond MaxTextBytes is cut.
	Text string
}

// Scored is a tool and its cosine similarity to a query, -1 to 1.
type Scored struct {
	Name  string
	Score float64
}

// Stats are the Embedder's counters, for export as metrics. The first
// group only grows; the second are current values.
type Stats struct {
	Requests    uint64 // requests sent to the endpoint, indexing and queries
	Failures    uint64 // requests that failed: an error, a timeout, a bad answer (not those their caller cancelled)
	Fallbacks   uint64 // Similar calls that failed for the endpoint's sake: searches left lexical
	Embedded    uint64 // texts embedded for the index
	QueryHits   uint64 // query vectors found in the query cache
	QueryMisses uint64 // query vectors asked of the endpoint (or not, while it is backing off)

	Tools      int // tools known, with a vector or not
	Cached     int // vectors held, including those kept for tools since removed
	Pending    int // texts waiting to be embedded, or being embedded
	Refused    int // texts the endpoint refused as input: they rank lexically until they change
	Dimensions int // the vectors' length; 0 until the first answer
}

// clock is time, as tests can control it.
type clock interface {
	Now() time.Time
	After(time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// errTimeout is the cause of a request's context when Config.Timeout
// ends it.
var errTimeout = errors.New("embeddings request timed out")

// ErrClosed is returned by the Embedder's methods after Close.
var ErrClosed = errors.New("embed: closed")

type hash [sha256.Size]byte

type state uint8

const (
	stQueued   state = iota // waiting in the queue
	stInFlight              // being embedded
	stDone                  // vec is set
	stRefused               // the endpoint refused the text as input
)

// entry is one text's vector, shared by every tool with that text.
type entry struct {
	h      hash
	text   string    // until embedded
	vec    []float32 // normalised; nil until embedded
	state  state
	refs   int           // tools whose text it is
	orphan *list.Element // in Embedder.orphans while refs is 0 and vec is set
}

type named struct {
	src string
	e   *entry // nil for a blank text
}

// Embedder holds the vectors of every source's tools and answers
// similarity queries; see the package doc. It is safe for concurrent use.
// Call Close to stop it.
type Embedder struct {
	cfg    Config
	client *client
	log    *slog.Logger
	clock  clock
	health health
	qcache *lru
	qsem   chan struct{}

	mu      sync.RWMutex
	entries map[hash]*entry
	sources map[string]map[string]*entry // source → tool name → entry (nil for a blank text)
	byName  map[string]named
	queue   []*entry
	orphans list.List // of *entry, oldest first
	dims    int
	queued  int           // entries in stQueued
	flying  int           // entries in stInFlight
	refused int           // entries in stRefused
	idle    chan struct{} // closed while nothing is queued or in flight
	closed  bool

	wake   chan struct{}
	ctx    context.Context // the worker's; Close cancels it
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	requests, failures, fallbacks, embedded, qhits, qmisses atomic.Uint64

	afterBatch func(n int, err error) // tests: called after each indexing request
}

// New returns an Embedder for the endpoint cfg describes, or an error
// naming what is wrong with cfg. It sends nothing until the first
// Update. logger may be nil (no logs).
func New(cfg Config, logger *slog.Logger) (*Embedder, error) {
	return newEmbedder(cfg, logger, realClock{})
}

func newEmbedder(cfg Config, logger *slog.Logger, clk clock) (*Embedder, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("endpoint", c.shown, "model", cfg.Model) // the caller names the component
	idle := make(chan struct{})
	close(idle)
	ctx, cancel := context.WithCancel(context.Background())
	e := &Embedder{
		cfg:     cfg,
		client:  c,
		log:     logger,
		clock:   clk,
		health:  health{clock: clk, log: logger},
		qcache:  newLRU(cfg.QueryCacheSize),
		qsem:    make(chan struct{}, cfg.MaxConcurrency),
		entries: map[hash]*entry{},
		sources: map[string]map[string]*entry{},
		byName:  map[string]named{},
		idle:    idle,
		wake:    make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go e.run()
	return e, nil
}

// Close stops the indexing, abandoning the requests in flight, and
// closes the idle connections of the Embedder's own HTTP client. It
// waits for its goroutines to end. Later calls do nothing.
func (e *Embedder) Close() {
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		e.cancel()
		<-e.done
		e.client.close()
	})
}

func contentHash(model string, dims int, text string) hash {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(dims)))
	h.Write([]byte{0})
	h.Write([]byte(text))
	var out hash
	h.Sum(out[:0])
	return out
}

// Update replaces the tools of source with docs. It returns at once: the
// texts without a vector (none, when only the tools changed that the
// cache has not seen) are queued for the background indexing, and until
// a tool's vector arrives Similar leaves it out. A text seen before,
// under any source or since removed, is not embedded again. It fails,
// changing nothing, when source is empty, a doc has no name, or a name is
// given twice or held by another source.
func (e *Embedder) Update(source string, docs []Doc) error {
	if source == "" {
		return errors.New("embed: source has no name")
	}
	hashes := make([]hash, len(docs))
	texts := make([]string, len(docs))
	seen := make(map[string]bool, len(docs))
	for i, d := range docs {
		if d.Name == "" {
			return fmt.Errorf("embed: source %q: doc %d has no name", source, i)
		}
		if seen[d.Name] {
			return fmt.Errorf("embed: source %q: tool %q given twice", source, d.Name)
		}
		seen[d.Name] = true
		if strings.TrimSpace(d.Text) != "" {
			texts[i] = truncate(d.Text)
			hashes[i] = contentHash(e.cfg.Model, e.cfg.Dimensions, texts[i])
		}
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	for _, d := range docs {
		if n, ok := e.byName[d.Name]; ok && n.src != source {
			return fmt.Errorf("embed: source %q: tool %q is already held by source %q", source, d.Name, n.src)
		}
	}
	// Take the new references before dropping the old, so that a text
	// the update keeps never looks unused.
	tools := make(map[string]*entry, len(docs))
	wake := false
	for i, d := range docs {
		var ent *entry
		if texts[i] != "" {
			ent = e.entries[hashes[i]]
			if ent == nil {
				ent = &entry{h: hashes[i], text: texts[i]}
				e.entries[ent.h] = ent
				e.enqueueLocked(ent)
				wake = true
			}
			e.acquireLocked(ent)
		}
		tools[d.Name] = ent
		e.byName[d.Name] = named{src: source, e: ent}
	}
	for name, ent := range e.sources[source] {
		if _, kept := tools[name]; !kept {
			delete(e.byName, name)
		}
		if ent != nil {
			e.releaseLocked(ent)
		}
	}
	e.sources[source] = tools
	e.trimLocked()
	if wake {
		e.signal()
	}
	return nil
}

// Remove drops the tools of source; a source not held is ignored. Their
// vectors stay in the cache for a while (see the package doc).
func (e *Embedder) Remove(source string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, ent := range e.sources[source] {
		delete(e.byName, name)
		if ent != nil {
			e.releaseLocked(ent)
		}
	}
	delete(e.sources, source)
	e.trimLocked()
}

func (e *Embedder) enqueueLocked(ent *entry) {
	ent.state = stQueued
	e.queue = append(e.queue, ent)
	e.queued++
	e.busyLocked()
}

// busyLocked marks work pending, for Wait.
func (e *Embedder) busyLocked() {
	select {
	case <-e.idle:
		e.idle = make(chan struct{})
	default:
	}
}

func (e *Embedder) idleCheckLocked() {
	if e.queued == 0 && e.flying == 0 {
		select {
		case <-e.idle:
		default:
			close(e.idle)
		}
	}
}

func (e *Embedder) acquireLocked(ent *entry) {
	ent.refs++
	if ent.orphan != nil {
		e.orphans.Remove(ent.orphan)
		ent.orphan = nil
	}
}

func (e *Embedder) releaseLocked(ent *entry) {
	ent.refs--
	if ent.refs > 0 {
		return
	}
	switch ent.state {
	case stDone:
		ent.orphan = e.orphans.PushBack(ent)
	case stRefused:
		delete(e.entries, ent.h)
		e.refused--
	}
	// stQueued: the worker drops it when it reaches it; stInFlight: its
	// answer makes it an orphan (or drops it, on failure).
}

// trimLocked drops the oldest vectors no tool uses beyond as many as
// the tools held (at least minOrphans), so that a source that restarts
// or reloads finds its vectors, while memory stays within about twice
// what the live tools need.
func (e *Embedder) trimLocked() {
	keep := max(minOrphans, len(e.byName))
	for e.orphans.Len() > keep {
		ent := e.orphans.Remove(e.orphans.Front()).(*entry)
		ent.orphan = nil
		delete(e.entries, ent.h)
	}
}

func (e *Embedder) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Wait returns when no text is waiting to be embedded or being embedded,
// or with ctx's error when ctx ends first, or ErrClosed after Close.
// While the endpoint fails, texts stay queued and Wait waits. It is for
// tests and for a caller that wants the index complete (a warm-up); a
// search never needs it.
func (e *Embedder) Wait(ctx context.Context) error {
	e.mu.RLock()
	idle := e.idle
	e.mu.RUnlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.done:
		return ErrClosed
	}
}

// run is the indexing worker: it embeds the queued texts in batches of
// BatchSize, up to MaxConcurrency batches at once, until the queue is
// empty, and waits out the back-off after a failure.
func (e *Embedder) run() {
	defer close(e.done)
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.wake:
		}
		for e.ctx.Err() == nil {
			if d := e.health.retryIn(); d > 0 {
				select {
				case <-e.ctx.Done():
					return
				case <-e.clock.After(d):
				}
				continue
			}
			batches := e.take()
			if len(batches) == 0 {
				break
			}
			var wg sync.WaitGroup
			for _, b := range batches {
				wg.Go(func() { e.index(b) })
			}
			wg.Wait()
		}
	}
}

// take moves up to MaxConcurrency batches from the queue to flight,
// dropping the entries no tool uses any more.
func (e *Embedder) take() [][]*entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out [][]*entry
	var b []*entry
	i := 0
	for ; i < len(e.queue) && len(out) < e.cfg.MaxConcurrency; i++ {
		ent := e.queue[i]
		e.queued--
		if ent.refs == 0 {
			delete(e.entries, ent.h)
			continue
		}
		ent.state = stInFlight
		e.flying++
		b = append(b, ent)
		if len(b) == e.cfg.BatchSize {
			out = append(out, b)
			b = nil
		}
	}
	if len(b) > 0 {
		out = append(out, b)
	}
	e.queue = slices.Delete(e.queue, 0, i)
	if len(e.queue) == 0 {
		e.queue = nil // let a large queue's array go
	}
	e.idleCheckLocked()
	return out
}

// index embeds one batch. When the endpoint refuses the batch's input,
// it splits the batch to find the texts it refuses, which stay without
// a vector.
func (e *Embedder) index(batch []*entry) {
	texts := make([]string, len(batch))
	for i, ent := range batch {
		texts[i] = ent.text // set until stDone; the worker alone changes it
	}
	e.mu.RLock()
	dims := e.dims
	e.mu.RUnlock()
	vecs, err := e.request(e.ctx, texts, dims)
	if hook := e.afterBatch; hook != nil {
		defer hook(len(batch), err)
	}
	if err != nil && badInput(err) && len(batch) > 1 {
		e.index(batch[:len(batch)/2])
		e.index(batch[len(batch)/2:])
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil && e.dims != 0 && len(vecs[0]) != e.dims {
		// Two first batches answered with different lengths.
		err = fmt.Errorf("embed: %s: bad response: %d dimensions, expected %d (did the model change?)", e.client.shown, len(vecs[0]), e.dims)
	}
	e.flying -= len(batch)
	switch {
	case err == nil:
		e.dims = len(vecs[0])
		for i, ent := range batch {
			normalise(vecs[i])
			ent.vec, ent.text, ent.state = vecs[i], "", stDone
			if ent.refs == 0 {
				ent.orphan = e.orphans.PushBack(ent)
			}
		}
		e.embedded.Add(uint64(len(batch)))
		e.trimLocked()
	case badInput(err): // one text the endpoint refuses
		ent := batch[0]
		if ent.refs == 0 {
			delete(e.entries, ent.h)
		} else {
			ent.state, ent.text = stRefused, ""
			e.refused++
		}
	default:
		for _, ent := range batch {
			if ent.refs == 0 {
				delete(e.entries, ent.h)
			} else {
				e.enqueueLocked(ent)
			}
		}
	}
	e.idleCheckLocked()
}

// request sends one request, within Timeout, and counts it.
func (e *Embedder) request(ctx context.Context, texts []string, dims int) ([][]float32, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, e.cfg.Timeout, errTimeout)
	defer cancel()
	e.requests.Add(1)
	vecs, err := e.client.embed(ctx, texts, dims)
	switch {
	case err == nil:
		e.health.ok()
	case errors.Is(err, errCanceled):
	default:
		e.failures.Add(1)
		e.health.fail(err)
	}
	return vecs, err
}

// Similar returns the k tools (DefaultK when k is 0) whose vectors are
// nearest the query's, best first, ties by name: among candidates, or
// among all tools when candidates is nil. Tools without a vector yet are
// left out. The query's vector comes from the query cache or the
// endpoint; when the endpoint fails, or is backing off after failures,
// Similar fails (and counts a fallback): the caller then ranks lexically.
// When no candidate has a vector it returns nothing, asking nothing of
// the endpoint.
func (e *Embedder) Similar(ctx context.Context, query string, candidates []string, k int) ([]Scored, error) {
	q := truncate(strings.TrimSpace(query))
	switch {
	case q == "":
		return nil, errors.New("embed: empty query")
	case k < 0:
		return nil, fmt.Errorf("embed: k %d below 0", k)
	case k == 0:
		k = DefaultK
	}
	e.mu.RLock()
	closed, has := e.closed, e.anyVectorLocked(candidates)
	e.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if !has {
		return nil, nil
	}
	qv, err := e.queryVector(ctx, q)
	if err != nil {
		if !errors.Is(err, errCanceled) {
			e.fallbacks.Add(1)
		}
		return nil, err
	}

	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.dims != 0 && len(qv) != e.dims {
		e.fallbacks.Add(1)
		return nil, fmt.Errorf("embed: %s: the query's vector has %d dimensions, the index's %d (did the model change?)", e.client.shown, len(qv), e.dims)
	}
	var out []Scored
	score := func(name string, n named) {
		if n.e != nil && n.e.vec != nil {
			out = append(out, Scored{Name: name, Score: float64(dot(qv, n.e.vec))})
		}
	}
	if candidates == nil {
		out = make([]Scored, 0, len(e.byName))
		for name, n := range e.byName {
			score(name, n)
		}
	} else {
		seen := make(map[string]bool, len(candidates))
		for _, name := range candidates {
			if n, ok := e.byName[name]; ok && !seen[name] {
				seen[name] = true
				score(name, n)
			}
		}
	}
	return topK(out, k), nil
}

func (e *Embedder) anyVectorLocked(candidates []string) bool {
	if candidates == nil {
		for _, n := range e.byName {
			if n.e != nil && n.e.vec != nil {
				return true
			}
		}
		return false
	}
	for _, name := range candidates {
		if n := e.byName[name]; n.e != nil && n.e.vec != nil {
			return true
		}
	}
	return false
}

// errBackingOff is the error of a query while the endpoint backs off.
var errBackingOff = errors.New("backing off after failures")

func (e *Embedder) queryVector(ctx context.Context, q string) ([]float32, error) {
	if v, ok := e.qcache.get(q); ok {
		e.qhits.Add(1)
		return v, nil
	}
	e.qmisses.Add(1)
	if d := e.health.retryIn(); d > 0 {
		return nil, fmt.Errorf("embed: %s: %w, retrying in %v: the search ranks lexically", e.client.shown, errBackingOff, d.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeoutCause(ctx, e.cfg.Timeout, errTimeout)
	defer cancel()
	select {
	case e.qsem <- struct{}{}:
		defer func() { <-e.qsem }()
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), errTimeout) {
			err := fmt.Errorf("embed: %s: no free request slot within %v (MaxConcurrency %d): raise the concurrency or the timeout", e.client.shown, e.cfg.Timeout, e.cfg.MaxConcurrency)
			e.failures.Add(1)
			e.health.fail(err)
			return nil, err
		}
		return nil, fmt.Errorf("embed: %w: %w", errCanceled, ctx.Err())
	}
	e.mu.RLock()
	dims := e.dims
	e.mu.RUnlock()
	vecs, err := e.request(ctx, []string{q}, dims)
	if err != nil {
		return nil, err
	}
	v := vecs[0]
	normalise(v)
	e.qcache.put(q, v)
	return v, nil
}

// Stats returns the counters.
func (e *Embedder) Stats() Stats {
	s := Stats{
		Requests:    e.requests.Load(),
		Failures:    e.failures.Load(),
		Fallbacks:   e.fallbacks.Load(),
		Embedded:    e.embedded.Load(),
		QueryHits:   e.qhits.Load(),
		QueryMisses: e.qmisses.Load(),
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	s.Tools = len(e.byName)
	s.Cached = len(e.entries) - e.queued - e.flying - e.refused
	s.Pending = e.queued + e.flying
	s.Refused = e.refused
	s.Dimensions = e.dims
	return s
}

// dot is the inner product of two vectors of one length.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// topK sorts the best k of s first (score, then name) and cuts the rest.
func topK(s []Scored, k int) []Scored {
	slices.SortFunc(s, func(a, b Scored) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(s) > k {
		s = s[:k:k]
	}
	return s
}
