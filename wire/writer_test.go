package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// slowWriter records writes and takes a while with each, so concurrent
// lines pile up behind it.
type slowWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	fail   error
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	s.writes++
	return s.buf.Write(p)
}

func TestWriter(t *testing.T) {
	sw := &slowWriter{}
	b := NewWriter(sw)
	var wg sync.WaitGroup
	const n = 200
	big := strings.Repeat("b", BigWrite+10)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			line := fmt.Sprintf("line %d %s\n", i, strings.Repeat("x", i))
			if i%50 == 0 {
				line = fmt.Sprintf("line %d %s\n", i, big)
			}
			var err error
			if i%3 == 1 { // made where it is queued
				err = b.AppendLine(len(line), 0, func(dst []byte) []byte { return append(dst, line...) })
			} else {
				_, err = b.Write([]byte(line))
			}
			if err != nil {
				t.Errorf("write: %v", err)
			}
		}()
	}
	wg.Wait()
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(sw.buf.String(), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("got %d lines, want %d", len(lines), n)
	}
	seen := make(map[int]bool)
	for _, l := range lines {
		var i int
		var rest string
		if _, err := fmt.Sscanf(l, "line %d %s", &i, &rest); err != nil {
			t.Fatalf("mangled line %.60q: %v", l, err)
		}
		want := strings.Repeat("x", i)
		if i%50 == 0 {
			want = big
		}
		if rest != want || seen[i] {
			t.Fatalf("line %d mangled or repeated", i)
		}
		seen[i] = true
	}
	if sw.writes >= n {
		t.Errorf("%d writes for %d concurrent lines, want them batched", sw.writes, n)
	}

	sw.mu.Lock()
	sw.fail = errors.New("broken pipe")
	sw.mu.Unlock()
	b.Write([]byte("a\n"))
	if _, err := b.Write([]byte("b\n")); err == nil || b.Flush() == nil {
		t.Errorf("Write after a failed write = %v, want the failure", err)
	}
}

// A big line, or a big answer, written while lines are deferred goes out
// after them, whole, and without being copied into the queue; so does a
// big line made for the write (AppendDeferred), and a small one is
// made in the queue.
func TestWriterBigAfterDeferred(t *testing.T) {
	sw := &slowWriter{}
	w := NewWriter(sw)
	var b Batch
	big := strings.Repeat("r", BigWrite+1)
	for i := range 3 {
		if err := w.WriteDeferred([]byte(fmt.Sprintf("deferred %d\n", i)), 0, &b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteAnswer([]byte(`7`), json.RawMessage(`"`+big+`"`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDeferred([]byte("big "+big+"\n"), 0, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendDeferred(len(big)+8, 0, &b, func(dst []byte) []byte { return append(append(append(dst, "made "...), big...), '\n') }); err != nil {
		t.Fatal(err)
	}
	if err := w.AppendDeferred(5, 0, &b, func(dst []byte) []byte { return append(dst, "made\n"...) }); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteDeferred([]byte("last\n"), 0, &b); err != nil {
		t.Fatal(err)
	}
	b.Flush()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "deferred 0\ndeferred 1\ndeferred 2\n" +
		`{"jsonrpc":"2.0","id":7,"result":"` + big + "\"}\n" +
		"big " + big + "\nmade " + big + "\nmade\nlast\n"
	if got := sw.buf.String(); got != want {
		t.Errorf("written:\n%.200q\nwant:\n%.200q", got, want)
	}
	if cap(w.queue) > BigWrite || cap(w.spare) > BigWrite {
		t.Errorf("the queue grew to %d bytes: a big line was copied into it", max(cap(w.queue), cap(w.spare)))
	}
}

func TestModernResult(t *testing.T) {
	impl := []byte(`{"name":"junction","version":"1"}`)
	for _, tc := range []struct{ in, want string }{
		{`{"content":[]}`, `{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"junction","version":"1"}},"resultType":"complete"}`},
		{`{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"x":2}}`, `{"resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"junction","version":"1"},"x":2}}`},
	} {
		if got := string(ModernResult([]byte(tc.in), impl, 0)); got != tc.want {
			t.Errorf("ModernResult(%s) = %s, want %s", tc.in, got, tc.want)
		}
		if got, want := string(ModernAnswerLine([]byte(`7`), []byte(tc.in), impl, 0)), `{"jsonrpc":"2.0","id":7,"result":`+tc.want+"}\n"; got != want {
			t.Errorf("ModernAnswerLine(%s) = %s, want %s", tc.in, got, want)
		}
	}
}

// FuzzModernResult: a result with neither _meta nor resultType, stamped
// without a walk (stampPlain), reads byte for byte as the walk writes it:
// one in which neither appears at all, and one whose reader found no
// member named so (junction.ResultUntyped), though they may appear
// deeper.
func FuzzModernResult(f *testing.F) {
	for _, res := range []string{`{"content":[]}`, `{}`, " { } ", "{ \"a\" : [1, {\"b\":\"}\"}] }\n", `{"content":[{"type":"text","text":"x"}],"isError":true}`,
		`{"structuredContent":{"_meta":{},"resultType":"x"},"content":[]}`, `{"content":[],"_meta":{"a":1}}`, `{"content":[],"resultTyp\u0065":"complete"}`} {
		f.Add([]byte(res))
	}
	f.Fuzz(func(t *testing.T, res []byte) {
		if !json.Valid(res) {
			return
		}
		var facts []junction.ResultFacts
		if i := rawjson.SkipSpace(res, 0); i < len(res) {
			if end, shape := ResultAt(res, i, nil); end >= 0 && rawjson.SkipSpace(res, end) == len(res) {
				facts = append(facts, shape.Facts(false))
			}
		}
		walk := Rewrite{stamp: testImpl}
		want := walk.apply(res)
		id := []byte(`"a-1"`)
		for _, fs := range append(facts, 0) {
			got, ok := stampPlain(res, testImpl, fs)
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("stampPlain(%q, %b) = %q, want the walk's %q", res, fs, got, want)
			}
			if ok && !json.Valid(got) {
				t.Fatalf("stampPlain(%q, %b) = %q, not JSON", res, fs, got)
			}
			if line, want := ModernAnswerLine(id, res, testImpl, fs), AnswerLine(id, ModernResult(res, testImpl, fs), nil); !bytes.Equal(line, want) {
				t.Fatalf("ModernAnswerLine(%q, %b) = %q, want %q", res, fs, line, want)
			}
		}
	})
}

// FuzzServerResult: a 2026-07-28 server's result rewritten for a host of
// that revision (ServerResult, with the hub's stamp on the link, and then
// ModernResult on the host's side if the link is not stamped) reads byte
// for byte as it did in three passes (SanitizeContent, StripServerFields,
// then ModernResult), with as many blocks replaced; without a stamp it is
// StripServerFields' result of SanitizeContent's. That holds for a result
// nothing is known of (UnknownShape) and for one with the shape the
// reader of its line found (ResultAt), which may be rewritten in place.
func FuzzServerResult(f *testing.F) {
	for _, res := range []string{
		`{"content":[]}`,
		`{"content":[{"type":"text","text":"a"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`,
		`{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"},"x":2},"content":[]}`,
		`{"resultType":"input_required","inputRequests":{},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`,
		"{ \"_meta\" : { } , \"isError\":true }",
		"{ \"resultType\" : \"complete\" ,\n \"_meta\":{\"io.modelcontextprotocol/serverInfo\":{}} , \"content\":[] }",
		`{"_meta":{"io.modelcontextprotocol/serverInfo":1},"content":[],"resultType":"complete"}`,
		`{"a":1,"b":2,"c":3,"d":4,"e":5,"resultType":"complete","f":6}`,
		`{"_meta":7,"resultType":"complete"}`,
		`[1]`,
		`{"content":[{"type":"text","text":"a"},{"type":"video","url":"v"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`,
		`{"content":[{"type":"video"}]}`,
		`{"cont\u0065nt":[{"type":"video"}],"resultType":"complete"}`,
		`{"content":{"type":"video"},"resultType":"complete"}`,
	} {
		f.Add([]byte(res))
	}
	f.Fuzz(func(t *testing.T, res []byte) {
		if !json.Valid(res) {
			// A result that is not JSON is passed on as it came, whatever
			// the bytes: ModernResult appends to one that looks like an
			// object without walking it (stampPlain).
			return
		}
		check := func(res []byte, shape ResultShape) {
			t.Helper()
			sanitized, wantN := SanitizeContent(bytes.Clone(res))
			want := ModernResult(StripServerFields(bytes.Clone(sanitized)), testImpl, 0)
			l := &Link{Stamp: testImpl}
			got, n, facts := ServerResult(bytes.Clone(res), l, shape)
			checkFacts(t, got, facts)
			if !l.Stamped.Load() {
				got = ModernResult(got, testImpl, facts) // the host's side stamps it
			}
			if !bytes.Equal(got, want) || n != wantN {
				t.Fatalf("ServerResult(%q, %+v) for a host of 2026-07-28 = %q, %d replaced (stamped %v), want %q, %d", res, shape, got, n, l.Stamped.Load(), want, wantN)
			}
			plain := &Link{}
			want = StripServerFields(bytes.Clone(sanitized))
			if got, n, _ := ServerResult(bytes.Clone(res), plain, shape); !bytes.Equal(got, want) || n != wantN || plain.Stamped.Load() {
				t.Fatalf("ServerResult(%q, %+v) with no stamp = %q, %d replaced, want %q, %d", res, shape, got, n, want, wantN)
			}
		}
		check(res, UnknownShape)
		// The reader hands over the result from its first byte to its end.
		if i := rawjson.SkipSpace(res, 0); i < len(res) {
			if end, shape := ResultAt(res, i, nil); end >= 0 {
				check(res[i:end], shape)
			}
		}
	})
}

// gateWriter holds each Write until the test opens it, and says when
// one has begun.
type gateWriter struct {
	begun chan struct{}
	open  chan struct{}
	mu    sync.Mutex
	buf   bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	select {
	case g.begun <- struct{}{}:
	default:
	}
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// TestWriteQueueBounded: behind a stuck write, a writer finding
// maxQueuedWrite bytes queued waits for the round to go out.
func TestWriteQueueBounded(t *testing.T) {
	t.Parallel()
	g := &gateWriter{begun: make(chan struct{}, 8), open: make(chan struct{})}
	w := NewWriter(g)
	var wg sync.WaitGroup
	defer wg.Wait()
	line := []byte(`{"x":"` + strings.Repeat("q", maxQueuedWrite) + `"}` + "\n")
	wg.Add(1)
	go func() { defer wg.Done(); w.WriteLine(line, 0, false) }() // its own line: it writes, held by g
	<-g.begun
	if err := w.WriteLine(line, 0, false); err != nil { // queued: returns at once
		t.Fatal(err)
	}
	third := make(chan error, 1)
	go func() { third <- w.WriteLine([]byte("{}\n"), 0, false) }()
	select {
	case err := <-third:
		t.Fatalf("a write beyond the queue bound returned (%v) while the queue was full", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(g.open) // everything goes out, in order
	if err := <-third; err != nil {
		t.Errorf("third write = %v", err)
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if got, want := g.buf.String(), string(line)+string(line)+"{}\n"; got != want {
		t.Fatalf("written: %d bytes, want %d, in order", len(got), len(want))
	}
}

// BenchmarkServerResult rewrites a small result of a 2026-07-28 server
// for a host before that revision (strip) and for one of it (stamp).
func BenchmarkServerResult(b *testing.B) {
	res := []byte(`{"content":[{"type":"text","text":"hello, hub"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echoserver","version":"1"}}}`)
	b.Run("strip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ServerResult(res, nil, UnknownShape)
		}
	})
	b.Run("stamp", func(b *testing.B) {
		b.ReportAllocs()
		l := &Link{Stamp: []byte(`{"name":"junction","version":"1.0.0"}`)}
		for b.Loop() {
			ServerResult(res, l, UnknownShape)
		}
	})
}
