package embed

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/embeddings"},
		{"http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/embeddings"},
		{"https://api.example.com", "https://api.example.com/embeddings"},
		{"http://127.0.0.1:8080/v1/embeddings", "http://127.0.0.1:8080/v1/embeddings"},
		{"http://127.0.0.1:8080/v1/embeddings/", "http://127.0.0.1:8080/v1/embeddings/"},
		{"https://x.example/openai/deployments/d/embeddings?api-version=2024-02-01", "https://x.example/openai/deployments/d/embeddings?api-version=2024-02-01"},
		{"https://x.example/v1?api-version=1#frag", "https://x.example/v1/embeddings?api-version=1"},
	} {
		u, err := endpointURL(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if u.String() != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, u, tc.want)
		}
	}
	for _, bad := range []string{"", "ftp://x/v1", "127.0.0.1:8080/v1", "http:///v1", "http://x/%zz"} {
		if _, err := endpointURL(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestURLFormsReachEndpoint(t *testing.T) {
	api := newFakeAPI(t, 16)
	for _, u := range []string{api.srv.URL + "/v1", api.srv.URL + "/v1/", api.srv.URL + "/v1/embeddings"} {
		h := newHarness(t, Config{URL: u})
		if err := h.e.Update("s", docs("list_files")); err != nil {
			t.Fatal(err)
		}
		if err := <-h.batchDone; err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		h.e.Close()
	}
	api.mu.Lock()
	paths := slices.Clone(api.paths)
	api.mu.Unlock()
	for _, p := range paths {
		if p != "/v1/embeddings" {
			t.Errorf("request to %s, want /v1/embeddings", p)
		}
	}
	if len(paths) != 3 {
		t.Errorf("%d requests, want 3", len(paths))
	}
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	c, err := Config{URL: "http://x/v1", Model: "m"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != DefaultTimeout || c.BatchSize != DefaultBatchSize || c.MaxConcurrency != DefaultMaxConcurrency || c.MaxResponseBytes != DefaultMaxResponseBytes || c.QueryCacheSize != DefaultQueryCacheSize {
		t.Errorf("defaults not filled in: %+v", c)
	}
	for _, cfg := range []Config{
		{URL: "http://x/v1"},
		{URL: "http://x/v1", Model: "m", BatchSize: MaxBatchSize + 1},
		{URL: "http://x/v1", Model: "m", Timeout: -1},
		{URL: "http://x/v1", Model: "m", Dimensions: -1},
		{URL: "gopher://x", Model: "m"},
	} {
		if e, err := New(cfg, nil); err == nil {
			e.Close()
			t.Errorf("%v: no error", cfg)
		}
	}
}

func TestCacheByContentHash(t *testing.T) {
	h := newHarness(t, Config{})
	all := docs("list_files", "read_file", "send_email", "create_issue")
	if err := h.e.Update("a", all); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	if n := h.api.texts(); n != 4 {
		t.Fatalf("%d texts embedded, want 4", n)
	}
	// The same texts again, after a reload, a restart (remove and add)
	// and under another source's names: nothing to embed.
	if err := h.e.Update("a", all); err != nil {
		t.Fatal(err)
	}
	h.e.Remove("a")
	if err := h.e.Update("a", all[:2]); err != nil {
		t.Fatal(err)
	}
	other := []Doc{{Name: "b_send", Text: all[2].Text}, {Name: "b_issue", Text: all[3].Text}}
	if err := h.e.Update("b", other); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	if n := h.api.texts(); n != 4 {
		t.Fatalf("%d texts embedded after updates with known texts, want 4", n)
	}
	// One changed text: one text embedded.
	changed := slices.Clone(all[:2])
	changed[1].Text = "read a file's contents"
	if err := h.e.Update("a", changed); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	reqs := h.api.requests()
	if len(reqs) != 2 || !slices.Equal(reqs[1], []string{"read a file's contents"}) {
		t.Fatalf("requests %q, want the changed text alone second", reqs)
	}
	s := h.e.Stats()
	if s.Tools != 4 || s.Embedded != 5 || s.Pending != 0 || s.Cached != 5 || s.Dimensions != 32 {
		t.Errorf("stats %+v", s)
	}
	// A blank text is not embedded and the tool is known.
	if err := h.e.Update("c", []Doc{{Name: "blank", Text: "  "}}); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	if n := h.api.texts(); n != 5 {
		t.Errorf("a blank text was embedded")
	}
}

func TestBatching(t *testing.T) {
	h := newHarness(t, Config{BatchSize: 3, MaxConcurrency: 1})
	var ds []Doc
	for i := range 10 {
		ds = append(ds, Doc{Name: fmt.Sprint("t", i), Text: fmt.Sprint("tool number ", i)})
	}
	if err := h.e.Update("s", ds); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	var sizes []int
	for _, b := range h.api.requests() {
		sizes = append(sizes, len(b))
	}
	if !slices.Equal(sizes, []int{3, 3, 3, 1}) {
		t.Errorf("batch sizes %v, want [3 3 3 1]", sizes)
	}
	if s := h.e.Stats(); s.Embedded != 10 || s.Requests != 4 {
		t.Errorf("stats %+v", s)
	}
}

func TestConcurrentBatches(t *testing.T) {
	h := newHarness(t, Config{BatchSize: 2, MaxConcurrency: 3})
	arrived := make(chan struct{}, 10)
	release := make(chan struct{})
	h.api.mu.Lock()
	h.api.arrived = arrived
	h.api.mu.Unlock()
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		<-release
		return false
	})
	var ds []Doc
	for i := range 8 {
		ds = append(ds, Doc{Name: fmt.Sprint("t", i), Text: fmt.Sprint("tool ", i)})
	}
	if err := h.e.Update("s", ds); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-arrived // three requests in flight at once
	}
	if s := h.e.Stats(); s.Pending != 8 {
		t.Errorf("pending %d, want 8", s.Pending)
	}
	close(release)
	h.wait(t)
	if n := len(h.api.requests()); n != 4 {
		t.Errorf("%d requests, want 4", n)
	}
}

func TestAPIKeySentNeverShown(t *testing.T) {
	const key = "sk-very-secret-key"
	h := newHarness(t, Config{APIKey: key})
	if err := h.e.Update("s", docs("list_files")); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	h.api.mu.Lock()
	auth := h.api.auth[0]
	h.api.mu.Unlock()
	if got := auth; got != "Bearer "+key {
		t.Errorf("Authorization %q", got)
	}
	// The endpoint refuses and echoes the key, as some do.
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s"}}`, key)
		return true
	})
	_, err := h.e.Similar(t.Context(), "files", nil, 5)
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "check the API key") || !strings.Contains(err.Error(), "401") {
		t.Errorf("error %q", err)
	}
	cfg := h.e.cfg
	var cfgLog logBuf
	slog.New(slog.NewTextHandler(&cfgLog, nil)).Info("config", "embed", cfg)
	for what, s := range map[string]string{"log": h.logs.String(), "String": cfg.String(), "%v": fmt.Sprintf("%v", cfg), "slog": cfgLog.String()} {
		if strings.Contains(s, key) {
			t.Errorf("%s shows the key: %s", what, s)
		}
	}
	if !strings.Contains(h.logs.String(), "Incorrect API key provided: xxxxx") {
		t.Errorf("log does not show the scrubbed message: %s", h.logs)
	}
}

func TestURLRedactedInErrors(t *testing.T) {
	api := newFakeAPI(t, 8)
	u := strings.Replace(api.srv.URL, "http://", "http://alice:hunter2@", 1) + "/v1?key=qsecret"
	h := newHarness(t, Config{URL: u})
	api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		http.Error(w, "boom", http.StatusInternalServerError)
		return true
	})
	if err := h.e.Update("s", docs("list_files")); err != nil {
		t.Fatal(err)
	}
	err := <-h.batchDone
	if err == nil {
		t.Fatal("no error")
	}
	for _, s := range []string{err.Error(), h.logs.String(), h.e.cfg.String()} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "qsecret") {
			t.Errorf("secret shown: %s", s)
		}
		if !strings.Contains(s, "alice:xxxxx@") || !strings.Contains(s, "key=xxxxx") {
			t.Errorf("endpoint not named: %s", s)
		}
	}
	if !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), `"boom"`) {
		t.Errorf("error %q", err)
	}
	// A transport error (nothing listening) names the endpoint redacted too.
	api.srv.Close()
	_, err = h.e.client.embed(t.Context(), []string{"x"}, 0)
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "qsecret") || !strings.Contains(err.Error(), "key=xxxxx") {
		t.Errorf("transport error %v", err)
	}
}

// vectorItems is a hand-made data array.
func vectorItems(vs ...any) string {
	var parts []string
	for i, v := range vs {
		parts = append(parts, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%v}`, i, v))
	}
	return `{"object":"list","data":[` + strings.Join(parts, ",") + `]}`
}

func base64Vector(v ...float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return `"` + base64.StdEncoding.EncodeToString(b) + `"`
}

// TestFallback: every kind of failure of a query's request makes Similar
// fail (a fallback to lexical ranking), counted and logged once; the
// next searches fail at once while the endpoint backs off; after the
// back-off, a healthy endpoint serves again.
func TestFallback(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		serve func(w http.ResponseWriter, r *http.Request, req Request)
		want  string // in the error
	}{
		{"500", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) {
			w.WriteHeader(500)
			w.Write([]byte(`{"error":{"message":"model overloaded"}}`))
		}, `500 Internal Server Error: "model overloaded"`},
		{"404", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) { http.NotFound(w, r) }, "check the URL"},
		{"timeout", Config{Timeout: 50 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request, req Request) { <-r.Context().Done() }, "no answer within 50ms"},
		{"garbage", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) { w.Write([]byte("<html>hello</html>")) }, "not an embeddings response"},
		{"count", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) {
			w.Write([]byte(vectorItems("[1,2]", "[1,2]")))
		}, "2 vectors for 1 inputs"},
		{"index", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) {
			w.Write([]byte(`{"data":[{"index":3,"embedding":[1,2]}]}`))
		}, "index 3 out of range"},
		{"dims", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) { writeVectors(w, req.Input, 16) }, "16 dimensions, expected 32"},
		{"nan", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) {
			v := make([]float32, 32)
			v[3] = float32(math.NaN())
			w.Write([]byte(vectorItems(base64Vector(v...))))
		}, "holds NaN"},
		{"zero", Config{}, func(w http.ResponseWriter, r *http.Request, req Request) {
			w.Write([]byte(vectorItems(base64Vector(make([]float32, 32)...))))
		}, "all zeros"},
		{"too large", Config{MaxResponseBytes: 1 << 10}, func(w http.ResponseWriter, r *http.Request, req Request) {
			w.Write([]byte(vectorItems("[" + strings.Repeat("0.125,", 300) + "1]")))
		}, "over the limit of 1024 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			if err := h.e.Update("s", docs("list_files", "send_email")); err != nil {
				t.Fatal(err)
			}
			h.wait(t)
			before := h.e.Stats()
			h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
				tc.serve(w, r, req)
				return true
			})
			_, err := h.e.Similar(t.Context(), "list my files", nil, 5)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), h.api.srv.URL+"/v1/embeddings") {
				t.Fatalf("error %v, want one naming the endpoint and %q", err, tc.want)
			}
			s := h.e.Stats()
			if s.Failures != before.Failures+1 || s.Fallbacks != 1 || s.Requests != before.Requests+1 {
				t.Errorf("stats %+v", s)
			}
			if n := h.logs.lines("embeddings endpoint failed"); n != 1 {
				t.Errorf("%d failure lines, want 1:\n%s", n, h.logs)
			}
			// Backing off: the next search fails at once, asking nothing.
			_, err = h.e.Similar(t.Context(), "send an email", nil, 5)
			if err == nil || !errors.Is(err, errBackingOff) {
				t.Errorf("error %v while backing off", err)
			}
			if s := h.e.Stats(); s.Requests != before.Requests+1 || s.Fallbacks != 2 || s.Failures != before.Failures+1 {
				t.Errorf("stats while backing off %+v", s)
			}
			// After the back-off, a healthy endpoint answers again.
			h.api.setOverride(nil)
			h.clock.Advance(backoffBase)
			got, err := h.e.Similar(t.Context(), "list my files", nil, 5)
			if err != nil || len(got) == 0 || got[0].Name != "list_files" {
				t.Fatalf("after recovery: %v, %v", got, err)
			}
			if n := h.logs.lines("embeddings endpoint recovered"); n != 1 {
				t.Errorf("%d recovery lines, want 1:\n%s", n, h.logs)
			}
		})
	}
}

func TestConfiguredDimensions(t *testing.T) {
	h := newHarness(t, Config{Dimensions: 8})
	if err := h.e.Update("s", docs("list_files")); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	h.api.mu.Lock()
	body := h.api.bodies[0]
	h.api.mu.Unlock()
	if body.Dimensions != 8 || h.e.Stats().Dimensions != 8 {
		t.Errorf("dimensions not sent or kept: %+v", body)
	}
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		writeVectors(w, req.Input, 9)
		return true
	})
	if _, err := h.e.Similar(t.Context(), "x", nil, 1); err == nil || !strings.Contains(err.Error(), "9 dimensions, expected 8") {
		t.Errorf("error %v", err)
	}
}

func TestBase64Response(t *testing.T) {
	h := newHarness(t, Config{})
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		var items []any
		for _, in := range req.Input {
			items = append(items, base64Vector(bagOfWords(in, 32)...))
		}
		w.Write([]byte(vectorItems(items...)))
		return true
	})
	if err := h.e.Update("s", docs("list_files", "send_email")); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	got, err := h.e.Similar(t.Context(), "send email", nil, 1)
	if err != nil || len(got) != 1 || got[0].Name != "send_email" {
		t.Errorf("got %v, %v", got, err)
	}
}

// TestIndexingRetries: a failed batch stays queued, the worker waits the
// back-off (on the clock) and sends it again.
func TestIndexingRetries(t *testing.T) {
	h := newHarness(t, Config{})
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	if err := h.e.Update("s", docs("list_files", "send_email")); err != nil {
		t.Fatal(err)
	}
	if err := <-h.batchDone; err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("error %v", err)
	}
	if d := <-h.clock.waiting; d != backoffBase {
		t.Errorf("waits %v, want %v", d, backoffBase)
	}
	if s := h.e.Stats(); s.Pending != 2 || s.Failures != 1 {
		t.Errorf("stats %+v", s)
	}
	// Tools without vectors: Similar asks nothing and returns nothing.
	if got, err := h.e.Similar(t.Context(), "list files", nil, 5); err != nil || got != nil {
		t.Errorf("Similar before indexing: %v, %v", got, err)
	}
	// Fails again: the back-off doubles; one log line for the burst.
	h.clock.Advance(backoffBase)
	<-h.batchDone
	if d := <-h.clock.waiting; d != 2*backoffBase {
		t.Errorf("waits %v, want %v", d, 2*backoffBase)
	}
	if n := h.logs.lines("embeddings endpoint failed"); n != 1 {
		t.Errorf("%d failure lines, want 1", n)
	}
	h.api.setOverride(nil)
	h.clock.Advance(2 * backoffBase)
	h.wait(t)
	if s := h.e.Stats(); s.Pending != 0 || s.Embedded != 2 || s.Requests != 3 {
		t.Errorf("stats %+v", s)
	}
	if !strings.Contains(h.logs.String(), "embeddings endpoint recovered") || !strings.Contains(h.logs.String(), "failures=2") {
		t.Errorf("logs:\n%s", h.logs)
	}
}

func TestRefusedInputIsolated(t *testing.T) {
	h := newHarness(t, Config{BatchSize: 4, MaxConcurrency: 1})
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		for _, in := range req.Input {
			if strings.Contains(in, "poison") {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"error":{"message":"input too long"}}`))
				return true
			}
		}
		return false
	})
	// The back-off after each refusal does not hold up the split.
	if err := h.e.Update("s", docs("a_one", "b_poison", "c_three", "d_four")); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	s := h.e.Stats()
	if s.Refused != 1 || s.Embedded != 3 || s.Pending != 0 {
		t.Errorf("stats %+v", s)
	}
	// Removing the tool frees its entry; a changed text is tried again.
	h.e.Remove("s")
	if s := h.e.Stats(); s.Refused != 0 {
		t.Errorf("refused %d after remove", s.Refused)
	}
}

func TestSimilar(t *testing.T) {
	h := newHarness(t, Config{})
	texts := map[string]string{
		"list_files":   "list the files in a directory",
		"read_file":    "read the contents of a file",
		"send_email":   "send an email message to a recipient",
		"create_issue": "create an issue in a repository",
		"delete_file":  "delete a file from the directory",
		"pending_tool": "",
	}
	var ds []Doc
	for n, tx := range texts {
		ds = append(ds, Doc{Name: n, Text: tx})
	}
	if err := h.e.Update("s", ds); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	query := "which files are in this directory"
	got, err := h.e.Similar(t.Context(), query, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The expected order, by float64 cosine over the fake's vectors.
	qv := bagOfWords(query, 32)
	var want []Scored
	for n, tx := range texts {
		if tx != "" {
			want = append(want, Scored{n, cosine(qv, bagOfWords(tx, 32))})
		}
	}
	want = topK(want, len(want))
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || math.Abs(got[i].Score-want[i].Score) > 1e-5 {
			t.Errorf("%d: got %v, want %v", i, got[i], want[i])
		}
	}
	if got[0].Name != "list_files" {
		t.Errorf("best %s, want list_files", got[0].Name)
	}
	// k and candidates (unknown and repeated names ignored).
	top2, err := h.e.Similar(t.Context(), query, nil, 2)
	if err != nil || !slices.Equal(top2, got[:2]) {
		t.Errorf("k=2: %v, %v", top2, err)
	}
	cand, err := h.e.Similar(t.Context(), query, []string{"send_email", "read_file", "nope", "read_file"}, 5)
	if err != nil || len(cand) != 2 || cand[0].Name != "read_file" || cand[1].Name != "send_email" {
		t.Errorf("candidates: %v, %v", cand, err)
	}
	if none, err := h.e.Similar(t.Context(), query, []string{}, 5); err != nil || none != nil {
		t.Errorf("no candidates: %v, %v", none, err)
	}
	// Three searches, one query request: the query cache.
	if s := h.e.Stats(); s.QueryMisses != 1 || s.QueryHits != 2 {
		t.Errorf("stats %+v", s)
	}
	if _, err := h.e.Similar(t.Context(), " ", nil, 5); err == nil {
		t.Error("blank query: no error")
	}
	if _, err := h.e.Similar(t.Context(), "x", nil, -1); err == nil {
		t.Error("k -1: no error")
	}
}

func TestSimilarTies(t *testing.T) {
	h := newHarness(t, Config{})
	if err := h.e.Update("s", []Doc{{"b", "same text"}, {"a", "same text"}, {"c", "same text"}}); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	got, err := h.e.Similar(t.Context(), "same", nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	if names := []string{got[0].Name, got[1].Name, got[2].Name}; !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("ties in order %v", names)
	}
	if n := h.api.texts(); n != 2 {
		t.Errorf("%d texts embedded, want 2 (one shared text, one query)", n)
	}
}

func TestUpdateErrors(t *testing.T) {
	h := newHarness(t, Config{})
	if err := h.e.Update("", docs("x")); err == nil {
		t.Error("empty source: no error")
	}
	if err := h.e.Update("s", []Doc{{Name: "", Text: "x"}}); err == nil {
		t.Error("empty name: no error")
	}
	if err := h.e.Update("s", docs("x", "x")); err == nil {
		t.Error("duplicate: no error")
	}
	if err := h.e.Update("s", docs("x")); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Update("t", docs("x")); err == nil || !strings.Contains(err.Error(), `held by source "s"`) {
		t.Errorf("name of another source: %v", err)
	}
	h.wait(t)
	h.e.Close()
	if err := h.e.Update("s", docs("y")); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if _, err := h.e.Similar(t.Context(), "x", nil, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Similar after Close: %v", err)
	}
	if err := h.e.Wait(t.Context()); err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("Wait after Close: %v", err)
	}
}

// TestOrphansKeptThenTrimmed: the vectors of removed tools stay for a
// reload, up to max(minOrphans, tools held).
func TestOrphansKeptThenTrimmed(t *testing.T) {
	h := newHarness(t, Config{BatchSize: 512})
	var ds []Doc
	for i := range minOrphans + 44 {
		ds = append(ds, Doc{Name: fmt.Sprint("t", i), Text: fmt.Sprint("text ", i)})
	}
	if err := h.e.Update("s", ds); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	h.e.Remove("s")
	if s := h.e.Stats(); s.Cached != minOrphans || s.Tools != 0 {
		t.Errorf("stats %+v, want %d cached", s, minOrphans)
	}
	// Re-adding them all embeds only the 44 dropped.
	before := h.api.texts()
	if err := h.e.Update("s", ds); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	if n := h.api.texts() - before; n != 44 {
		t.Errorf("%d texts embedded again, want 44", n)
	}
	if s := h.e.Stats(); s.Cached != len(ds) {
		t.Errorf("cached %d, want %d", s.Cached, len(ds))
	}
}

// TestCancellation: a search whose context ends while the endpoint is
// slow returns at once, counted neither as a failure nor a fallback.
func TestCancellation(t *testing.T) {
	h := newHarness(t, Config{Timeout: time.Hour})
	if err := h.e.Update("s", docs("list_files")); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	arrived := make(chan struct{}, 1)
	h.api.mu.Lock()
	h.api.arrived = arrived
	h.api.mu.Unlock()
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		<-r.Context().Done()
		return true
	})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := h.e.Similar(ctx, "files", nil, 1)
		errc <- err
	}()
	<-arrived
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if s := h.e.Stats(); s.Failures != 0 || s.Fallbacks != 0 {
		t.Errorf("stats %+v", s)
	}
	if h.logs.lines("failed") != 0 {
		t.Errorf("cancellation logged:\n%s", h.logs)
	}
}

// TestCloseAbandonsIndexing: Close returns while a batch is in flight,
// and leaves no goroutine (TestMain checks).
func TestCloseAbandonsIndexing(t *testing.T) {
	h := newHarness(t, Config{Timeout: time.Hour})
	arrived := make(chan struct{}, 1)
	h.api.mu.Lock()
	h.api.arrived = arrived
	h.api.mu.Unlock()
	h.api.setOverride(func(w http.ResponseWriter, r *http.Request, req Request) bool {
		<-r.Context().Done()
		return true
	})
	if err := h.e.Update("s", docs("list_files")); err != nil {
		t.Fatal(err)
	}
	<-arrived
	h.e.Close()
	if err := <-h.batchDone; !errors.Is(err, context.Canceled) {
		t.Errorf("batch error %v", err)
	}
	if s := h.e.Stats(); s.Failures != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestQuerySlotTimeout(t *testing.T) {
	h := newHarness(t, Config{MaxConcurrency: 1, Timeout: 50 * time.Millisecond})
	if err := h.e.Update("s", docs("list_files")); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	h.e.qsem <- struct{}{} // the one slot is taken
	_, err := h.e.Similar(t.Context(), "files", nil, 1)
	<-h.e.qsem
	if err == nil || !strings.Contains(err.Error(), "no free request slot") {
		t.Errorf("error %v", err)
	}
	if s := h.e.Stats(); s.Fallbacks != 1 || s.Failures != 1 {
		t.Errorf("stats %+v", s)
	}
}

func TestHealthLogRateLimit(t *testing.T) {
	clk := newFakeClock()
	logs := &logBuf{}
	h := health{clock: clk, log: slog.New(slog.NewTextHandler(logs, nil))}
	boom := errors.New("boom")
	for range 3 {
		h.fail(boom)
	}
	if n := logs.lines("failed"); n != 1 {
		t.Fatalf("%d lines after a burst of 3, want 1", n)
	}
	clk.Advance(30 * time.Second)
	h.fail(boom)
	if n := logs.lines("failed"); n != 1 {
		t.Fatalf("%d lines within the minute, want 1", n)
	}
	clk.Advance(30 * time.Second)
	h.fail(boom)
	if n := logs.lines("failed"); n != 2 || !strings.Contains(logs.String(), "failures=4") {
		t.Fatalf("after a minute: %d lines, want 2 with failures=4:\n%s", n, logs)
	}
	if d := h.retryIn(); d != 16*time.Second {
		t.Errorf("back-off after 5 failures %v, want 16s", d)
	}
	for range 20 {
		h.fail(boom)
	}
	if d := h.retryIn(); d != backoffMax {
		t.Errorf("back-off %v, want the cap %v", d, backoffMax)
	}
	h.ok()
	h.ok()
	if n := logs.lines("recovered"); n != 1 || !strings.Contains(logs.String(), "failures=25") {
		t.Errorf("recovery: %d lines:\n%s", n, logs)
	}
	if h.retryIn() != 0 {
		t.Error("still backing off after success")
	}
	// A new burst logs its first failure at once... unless within a
	// minute of the last line.
	clk.Advance(time.Minute)
	h.fail(boom)
	if n := logs.lines("failed"); n != 3 {
		t.Errorf("%d failure lines, want 3", n)
	}
}

func TestLRU(t *testing.T) {
	c := newLRU(2)
	c.put("a", []float32{1})
	c.put("b", []float32{2})
	c.get("a")
	c.put("c", []float32{3}) // evicts b, the least recently used
	if _, ok := c.get("b"); ok {
		t.Error("b kept")
	}
	for _, k := range []string{"a", "c"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s dropped", k)
		}
	}
	off := newLRU(-1)
	off.put("a", nil)
	if _, ok := off.get("a"); ok {
		t.Error("disabled cache caches")
	}
}

func TestTruncate(t *testing.T) {
	s := strings.Repeat("a", MaxTextBytes-1) + "é"
	got := truncate(s)
	if len(got) != MaxTextBytes-1 {
		t.Errorf("len %d", len(got))
	}
	if truncate("short") != "short" {
		t.Error("short text changed")
	}
}
