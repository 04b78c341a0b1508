package embed

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bagOfWords is the fake endpoint's embedding: each lower-case word adds
// 1 at a hashed dimension, so texts that share words are near.
func bagOfWords(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	v[dims-1] += 0.01 // never all zeros
	return v
}

// fakeAPI is an OpenAI-compatible embeddings endpoint on 127.0.0.1.
type fakeAPI struct {
	t    *testing.T
	srv  *httptest.Server
	dims int

	mu       sync.Mutex
	batches  [][]string // inputs of each request, in arrival order
	auth     []string
	paths    []string
	bodies   []Request
	override func(w http.ResponseWriter, r *http.Request, req Request) bool // answers instead when it returns true
	arrived  chan struct{}                                                  // a value per request, when not nil
}

func newFakeAPI(t *testing.T, dims int) *fakeAPI {
	f := &fakeAPI{t: t, dims: dims}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req Request
	if r.Method != http.MethodPost || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.batches = append(f.batches, req.Input)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.paths = append(f.paths, r.URL.RequestURI())
	f.bodies = append(f.bodies, req)
	override, arrived := f.override, f.arrived
	f.mu.Unlock()
	if arrived != nil {
		arrived <- struct{}{}
	}
	if override != nil && override(w, r, req) {
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/embeddings") {
		http.NotFound(w, r)
		return
	}
	dims := f.dims
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	writeVectors(w, req.Input, dims)
}

func writeVectors(w http.ResponseWriter, inputs []string, dims int) {
	resp := Response{Object: "list", Model: "fake"}
	for i, in := range inputs {
		emb, _ := json.Marshal(bagOfWords(in, dims))
		resp.Data = append(resp.Data, ResponseItem{Object: "embedding", Index: i, Embedding: emb})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func (f *fakeAPI) setOverride(fn func(w http.ResponseWriter, r *http.Request, req Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override = fn
}

func (f *fakeAPI) requests() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...)
}

func (f *fakeAPI) texts() int {
	n := 0
	for _, b := range f.requests() {
		n += len(b)
	}
	return n
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
	waiting chan time.Duration // a value per After call
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), waiting: make(chan time.Duration, 100)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	c.mu.Unlock()
	c.waiting <- d
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// logBuf is a concurrency-safe log sink.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) lines(substr string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

type harness struct {
	e     *Embedder
	api   *fakeAPI
	clock *fakeClock
	logs  *logBuf
	// batchDone receives the error of each indexing request.
	batchDone chan error
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), logs: &logBuf{}, batchDone: make(chan error, 1000)}
	if cfg.URL == "" {
		h.api = newFakeAPI(t, 32)
		cfg.URL = h.api.srv.URL + "/v1"
	}
	if cfg.Model == "" {
		cfg.Model = "fake-model"
	}
	e, err := newEmbedder(cfg, slog.New(slog.NewTextHandler(h.logs, nil)), h.clock)
	if err != nil {
		t.Fatal(err)
	}
	e.afterBatch = func(_ int, err error) { h.batchDone <- err }
	h.e = e
	t.Cleanup(e.Close)
	return h
}

func (h *harness) wait(t *testing.T) {
	t.Helper()
	if err := h.e.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func docs(names ...string) []Doc {
	out := make([]Doc, len(names))
	for i, n := range names {
		out[i] = Doc{Name: n, Text: n + " " + strings.ReplaceAll(n, "_", " ")}
	}
	return out
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}
