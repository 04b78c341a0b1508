package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/rawjson"
)

// streamed is how a streamed call ended, as its host side learned it.
type streamed struct {
	size    int
	isError bool
	err     error
}

// cutReply is a call's answer read whole: its result, or why none came.
type cutReply struct {
	Result []byte
	Fail   error
}

// cutOpts are a cutConn's bounds; zero means the default.
type cutOpts struct {
	stall   time.Duration
	maxLine int
}

// cutConn is a server's reader in miniature, as a server connection
// reads (package upstream has the real one): lines from a server's
// stdout, which the test writes through an io.Pipe, so that each write is
// one read (up to the reader's free buffer) and the test chooses where
// the answer's pieces end. A long answer to a call whose host takes
// answers while they arrive goes through a Forward; any other line is
// its call's reply, by id.
type cutConn struct {
	out *io.PipeWriter
	rw  Rewrite // how results are rewritten: the call's, and the host's stamp

	mu    sync.Mutex
	seq   int
	calls map[string]*cutCall
}

type cutCall struct {
	link  *Link
	reply chan cutReply
}

func newCutConn(t *testing.T, opts *cutOpts) *cutConn {
	t.Helper()
	var o cutOpts
	if opts != nil {
		o = *opts
	}
	if o.stall == 0 {
		o.stall = DefaultStreamStall
	}
	if o.maxLine == 0 {
		o.maxLine = DefaultMaxLine
	}
	outR, outW := io.Pipe()
	cc := &cutConn{out: outW, calls: map[string]*cutCall{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cc.read(outR, o)
	}()
	t.Cleanup(func() {
		outW.Close()
		<-done
	})
	return cc
}

// read is the reader's loop, as the server connection's.
func (cc *cutConn) read(out io.Reader, o cutOpts) {
	r := NewLineReader(out, o.maxLine)
	r.SplitLong(LongLine)
	for {
		line, tooLong, err := r.Next()
		if r.Partial() {
			if id, start, ok := StreamHead(r, line); ok {
				if call := cc.take(id, true); call != nil {
					f := Forward{Link: call.link, Rewrite: cc.callRewrite(), Stall: o.stall,
						Fail:     func(err error) error { return err },
						EndError: func() error { return fmt.Errorf("server closed stdout: %w", io.EOF) }}
					if _, err := f.Run(r, line, start); err != nil {
						return
					}
				}
			}
			continue
		}
		if !tooLong && len(bytes.TrimSpace(line)) > 0 {
			var id, result []byte
			rawjson.EachMember(line, func(key, val []byte) {
				switch string(key) {
				case "id":
					id = val
				case "result":
					result = val
				}
			})
			if call := cc.take(id, false); call != nil {
				call.reply <- cutReply{Result: result}
			}
		}
		if err != nil {
			return
		}
	}
}

// callRewrite is how the call rewrites a result: cc.rw, but for the
// host's stamp, which the host's side sets on the call's Link.
func (cc *cutConn) callRewrite() Rewrite {
	rw := cc.rw
	rw.stamp = nil
	return rw
}

// take takes the call whose id is id out of the waiting ones; with
// stream, only if its host takes answers while they arrive.
func (cc *cutConn) take(id []byte, stream bool) *cutCall {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	call := cc.calls[string(id)]
	if call == nil || stream && call.link.Stream == nil {
		return nil
	}
	delete(cc.calls, string(id))
	return call
}

// call makes a call ("jr-1", then "jr-2", ...); with host set, its host
// side takes the answer while it arrives, into host, and says how it
// ended on ended.
func (cc *cutConn) call(t *testing.T, host *bytes.Buffer, hostMu *sync.Mutex) (chan cutReply, chan streamed) {
	t.Helper()
	reply := make(chan cutReply, 1)
	ended := make(chan streamed, 1)
	link := &Link{Stamp: cc.rw.stamp}
	if host != nil {
		// The host's side as ServeStdio's: a line cut short is ended, as
		// the call's answer (a tool error) where it can be.
		w := NewWriter(lockedWriter{hostMu, host})
		to := &StreamTo{ID: []byte(`7`), Out: w}
		to.Done = streamDoneFunc(func(size int, isError bool, err error) {
			if err != nil && !to.EndCutLine(w, []byte(cutFailed), nil) {
				w.Write(AnswerLine(to.ID, []byte(cutFailed), nil))
			}
			ended <- streamed{size, isError, err}
		})
		link.Stream = to
	}
	cc.mu.Lock()
	cc.seq++
	cc.calls[fmt.Sprintf(`"jr-%d"`, cc.seq)] = &cutCall{link: link, reply: reply}
	cc.mu.Unlock()
	return reply, ended
}

// streamDoneFunc is a func as a StreamDone.
type streamDoneFunc func(size int, isError bool, err error)

func (f streamDoneFunc) StreamDone(size int, isError bool, err error) { f(size, isError, err) }

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// writeIn writes line to the server's stdout in pieces of the sizes
// sizes gives.
func (cc *cutConn) writeIn(t *testing.T, line []byte, sizes func() int) {
	t.Helper()
	for len(line) > 0 {
		n := min(sizes(), len(line))
		if _, err := cc.out.Write(line[:n]); err != nil {
			t.Errorf("writing the server's stdout: %v", err)
			return
		}
		line = line[n:]
	}
}

// wholeAnswer is what the host gets when the line is read whole: the
// result rewritten by the server's side (SanitizeContent, and
// StripServerFields for a server at 2026-07-28), by the call's finish
// (FixText), by the host's side (ModernResult, for a host at 2026-07-28),
// and put in the host's envelope.
func wholeAnswer(res []byte, rw Rewrite) (line []byte, size int, isError bool) {
	res, _ = SanitizeContent(res)
	if rw.Strip {
		res = StripServerFields(res)
	}
	res = rawjson.FixText(res)
	seen := false
	rawjson.Object(res, func(key, val []byte) {
		if !seen && string(key) == "isError" {
			seen, isError = true, string(val) == "true"
		}
	})
	if rw.stamp != nil {
		res = ModernResult(res, rw.stamp, 0)
	}
	return AnswerLine([]byte(`7`), res, nil), len(res), isError
}

// testImpl is a hub's serverInfo, for results to hosts at 2026-07-28.
var testImpl = []byte(`{"name":"hub","version":"1.0"}`)

// rewrites are the four ways a result goes between a server and a host,
// before or at 2026-07-28: nothing changes, the server's serverInfo and
// resultType go, the hub's come, or both.
var rewrites = []struct {
	name string
	rw   Rewrite
}{
	{"as is", Rewrite{}},
	{"server at 2026", Rewrite{Strip: true, OnlyComplete: true}},
	{"host at 2026", Rewrite{stamp: testImpl}},
	{"both at 2026", Rewrite{Strip: true, stamp: testImpl}},
}

// cutCorpus are results long enough to stream, with what makes
// forwarding them piece by piece hard.
func cutCorpus() map[string]string {
	big := func(n int, unit string) string { return strings.Repeat(unit, n/len(unit)+1) }
	text := big(300<<10, "plain text, ")
	mixed := big(200<<10, `esc \" \\ \n \t \/ \u00e9 pair \ud83d\ude00 lone \ud800 low \udc00 `+"€ 😀 bad \xff\xfe cut \xe2\x82 ")
	withBackslashes := big(150<<10, `\\\\\\\"\\u`)
	return map[string]string{
		"text":                     `{"content":[{"type":"text","text":"` + text + `"}]}`,
		"escapes and bad UTF-8":    `{"content":[{"type":"text","text":"` + mixed + `"}],"isError":false}`,
		"backslash runs":           `{"content":[{"type":"text","text":"` + withBackslashes + `"}]}`,
		"isError first":            `{"isError":true,"content":[{"type":"text","text":"` + text + `"}]}`,
		"isError last":             `{"content":[{"type":"text","text":"` + mixed + `"}],"isError":true}`,
		"isError twice":            `{"isError":false,"content":[{"type":"text","text":"` + text + `"}],"isError":true}`,
		"unknown type early":       `{"content":[{"type":"widget","spin":3},{"type":"text","text":"` + text + `"}]}`,
		"unknown type, big":        `{"content":[{"type":"widget","data":"` + mixed + `"},{"type":"text","text":"x"}]}`,
		"unknown type late":        `{"content":[{"type":"text","text":"a"},{"data":"` + text + `","type":"widget"}]}`,
		"type after the text":      `{"content":[{"text":"` + mixed + `","type":"text"}]}`,
		"type in capitals":         `{"content":[{"TYPE":"text","text":"` + text + `"}]}`,
		"escaped key":              `{"content":[{"t\u0079pe":"text","text":"` + text + `"}]}`,
		"not an object":            `{"content":["` + text + `",null,{"type":"text","text":"y"}]}`,
		"structured first":         `{"structuredContent":{"rows":[` + strings.Repeat(`{"a":"\u00e9\ud800","b":[1,2,{"c":null}]},`, 8000) + `{}]},"content":[{"type":"text","text":"z"}]}`,
		"meta and spaces":          "{ \"_meta\" : {\"k\":\"v\"} , \"content\" : [ { \"type\" : \"text\" , \"text\" : \"" + mixed + "\" } , {\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"} ] , \"isError\" : false }",
		"content key escaped":      `{"cont\u0065nt":[{"type":"widget"},{"type":"text","text":"` + text + `"}]}`,
		"resource with blob":       `{"content":[{"type":"resource","resource":{"uri":"file:///a","blob":"` + big(200<<10, "QUJD") + `"}}]}`,
		"number and literal ends":  `{"content":[{"type":"text","text":"` + text + `"}],"n":12345,"b":true,"z":null}`,
		"nested arrays in content": `{"content":[[{"type":"widget"}],{"type":"text","text":"` + text + `"}]}`,
	}
}

// rewriteCorpus are long results with what a Rewrite changes: the
// server's serverInfo and resultType, before and after the content, with
// white space, an _meta with more in it, and one that is not an object.
func rewriteCorpus() map[string]string {
	text := strings.Repeat(`plain text, \u00e9 \ud800 `, 300<<10/24)
	info := `"io.modelcontextprotocol/serverInfo":{"name":"up","version":"2"}`
	content := `"content":[{"type":"text","text":"` + text + `"}]`
	return map[string]string{
		"go-sdk order":         `{"_meta":{` + info + `},` + content + `,"resultType":"complete"}`,
		"type first":           `{"resultType":"complete",` + content + `,"_meta":{` + info + `}}`,
		"only the content":     `{` + content + `}`,
		"spaces":               "{ \"resultType\" : \"complete\" ,\t \"_meta\" : { " + info + " , \"k\" : [1] } , " + content + " , \"isError\" : true }",
		"meta kept, type last": `{"isError":false,"_meta":{"trace":"x",` + info + `},` + content + `,"resultType":"complete"}`,
		"meta not an object":   `{"_meta":"x",` + content + `,"resultType":"complete"}`,
		"empty meta":           `{"_meta":{},` + content + `}`,
		"other result type":    `{` + content + `,"resultType":"input_required","_meta":{` + info + `}}`,
		"two metas":            `{"_meta":{` + info + `},` + content + `,"_meta":{"a":1},"resultType":"complete"}`,
	}
}

// TestCutThroughSameBytes forwards each result of the corpus both ways,
// read whole and cut through, in pieces of many sizes, and compares what
// the host receives: the same bytes, the same size and isError.
func TestCutThroughSameBytes(t *testing.T) {
	t.Parallel()
	corpus := cutCorpus()
	pieces := map[string]func(*rand.Rand) int{
		"at once": func(*rand.Rand) int { return 1 << 30 },
		"1000":    func(*rand.Rand) int { return 1000 },
		"4093":    func(*rand.Rand) int { return 4093 },
		"random":  func(r *rand.Rand) int { return 1 + r.IntN(70000) },
		"tiny":    func(r *rand.Rand) int { return 1 + r.IntN(13) },
	}
	type sameCase struct {
		res string
		rw  Rewrite
	}
	cases := map[string]sameCase{}
	for name, res := range corpus {
		cases[name] = sameCase{res, Rewrite{}}
	}
	for name, res := range rewriteCorpus() {
		for _, rw := range rewrites {
			cases[name+"/"+rw.name] = sameCase{res, rw.rw}
		}
	}
	for name, tc := range cases {
		res := tc.res
		for _, lineEnd := range []string{"\n", "\r\n"} {
			for pname, size := range pieces {
				if pname == "tiny" && len(res) > 400<<10 {
					continue
				}
				t.Run(fmt.Sprintf("%s/%q/%s", name, lineEnd, pname), func(t *testing.T) {
					t.Parallel()
					want, wantSize, wantErr := wholeAnswer([]byte(res), tc.rw)
					line := []byte(`{"jsonrpc":"2.0","id":"jr-1","result":` + res + `}` + lineEnd)
					rnd := rand.New(rand.NewPCG(1, uint64(len(pname))))
					sizes := func() int { return size(rnd) }

					// Read whole (the host takes no stream).
					cc := newCutConn(t, nil)
					cc.rw = tc.rw
					reply, _ := cc.call(t, nil, nil)
					cc.writeIn(t, line, sizes)
					r := <-reply
					if r.Fail != nil || r.Result == nil {
						t.Fatalf("whole: reply %+v", r)
					}
					if got, _, _ := wholeAnswer(r.Result, tc.rw); !bytes.Equal(got, want) {
						t.Fatalf("the whole line's result changed on its way")
					}

					// Cut through.
					cc = newCutConn(t, nil)
					cc.rw = tc.rw
					var host bytes.Buffer
					var mu sync.Mutex
					reply, ended := cc.call(t, &host, &mu)
					cc.writeIn(t, line, sizes)
					var e streamed
					select {
					case e = <-ended:
					case r := <-reply:
						// Not streamed (the head did not allow it): the whole
						// path's answer is the one.
						if got, _, _ := wholeAnswer(r.Result, tc.rw); !bytes.Equal(got, want) {
							t.Fatalf("declined stream: answer differs")
						}
						return
					}
					mu.Lock()
					got := host.Bytes()
					mu.Unlock()
					if tc.rw.OnlyComplete && strings.Contains(res, `"input_required"`) {
						// A result for the hub to act on cannot go on.
						if !errors.Is(e.err, errStreamMalformed) {
							t.Fatalf("stream of a result asking for input: %v, want it cut short", e.err)
						}
						return
					}
					if e.err != nil {
						t.Fatalf("stream failed: %v", e.err)
					}
					if !bytes.Equal(got, want) {
						i := 0
						for i < len(got) && i < len(want) && got[i] == want[i] {
							i++
						}
						t.Fatalf("cut through: %d bytes, want %d; first difference at %d: got %q, want %q", len(got), len(want), i, excerpt(got, i), excerpt(want, i))
					}
					if e.size != wantSize || e.isError != wantErr {
						t.Errorf("cut through: size %d isError %v, want %d %v", e.size, e.isError, wantSize, wantErr)
					}
				})
			}
		}
	}
}

func excerpt(b []byte, i int) []byte {
	return b[max(0, i-20):min(len(b), i+40)]
}

// The results of the corpus that can stream do: the test above would
// pass if none did.
func TestCutThroughStreams(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"text", "escapes and bad UTF-8", "isError first", "unknown type early", "structured first", "resource with blob"} {
		res := cutCorpus()[name]
		cc := newCutConn(t, nil)
		var host bytes.Buffer
		var mu sync.Mutex
		reply, ended := cc.call(t, &host, &mu)
		cc.writeIn(t, []byte(`{"jsonrpc":"2.0","id":"jr-1","result":`+res+"}\n"), func() int { return 8192 })
		select {
		case e := <-ended:
			if e.err != nil {
				t.Errorf("%s: %v", name, e.err)
			}
		case <-reply:
			t.Errorf("%s: read whole, want cut through", name)
		}
	}
}

// A line whose head comes in many small reads (a server writing its
// answer as it computes it) is read whole: forwarded while it trickled,
// it would hold the host's writer.
func TestCutThroughNotTrickled(t *testing.T) {
	t.Parallel()
	cc := newCutConn(t, nil)
	var host bytes.Buffer
	var mu sync.Mutex
	reply, ended := cc.call(t, &host, &mu)
	cc.writeIn(t, []byte(`{"jsonrpc":"2.0","id":"jr-1","result":`+cutCorpus()["text"]+"}\n"), func() int { return 1024 })
	select {
	case r := <-reply:
		if r.Result == nil {
			t.Fatalf("reply %+v", r)
		}
	case e := <-ended:
		t.Fatalf("forwarded while it trickled (%+v), want it read whole", e)
	}
}

// hostLines splits what the host received into lines.
func hostLines(mu *sync.Mutex, b *bytes.Buffer) []string {
	mu.Lock()
	defer mu.Unlock()
	return strings.SplitAfter(b.String(), "\n")
}

// cutFailed is the tool error the test's calls cut short end with.
const cutFailed = `{"content":[{"type":"text","text":"failed"}],"isError":true}`

// Faults in the middle of an answer: the call fails with the cause, the
// host's line is ended (as the call's answer, a tool error, when the
// answer was cut inside a text; otherwise where it is, not JSON, and the
// answer follows), and what the server sends next is read as before.
func TestCutThroughFaults(t *testing.T) {
	t.Parallel()
	head := `{"jsonrpc":"2.0","id":"jr-1","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 100<<10)
	next := `{"jsonrpc":"2.0","id":"jr-2","result":{"content":[{"type":"text","text":"next"}]}}` + "\n"
	check := func(t *testing.T, cc *cutConn, host *bytes.Buffer, mu *sync.Mutex, ended chan streamed, want error) {
		t.Helper()
		e := <-ended
		if !errors.Is(e.err, want) {
			t.Fatalf("stream ended with %v, want %v", e.err, want)
		}
		lines := hostLines(mu, host)
		var answer struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		last := lines[0]
		if !json.Valid([]byte(last)) {
			// Cut where it could not be closed: the answer follows.
			if len(lines) < 2 || !strings.HasSuffix(lines[0], "\n") {
				t.Fatalf("host's lines after the fault: %d, the first ends %q", len(lines), excerpt([]byte(lines[0]), len(lines[0])))
			}
			last = lines[1]
		}
		if err := json.Unmarshal([]byte(last), &answer); err != nil || answer.ID != 7 || !answer.Result.IsError ||
			len(answer.Result.Content) == 0 || answer.Result.Content[len(answer.Result.Content)-1].Text != "failed" {
			t.Fatalf("host's answer after the fault: %q…: %v", excerpt([]byte(last), 0), err)
		}
	}
	nextArrives := func(t *testing.T, cc *cutConn) {
		t.Helper()
		reply, _ := cc.call(t, nil, nil)
		if _, err := io.WriteString(cc.out, next); err != nil {
			t.Fatal(err)
		}
		if r := <-reply; r.Result == nil {
			t.Fatalf("the next answer: %+v", r)
		}
	}

	// start makes a call whose answer streams, and writes line (from a
	// goroutine: a line longer than the pipe takes blocks its writer).
	start := func(t *testing.T, opts *cutOpts, line string) (*cutConn, *bytes.Buffer, *sync.Mutex, chan streamed) {
		cc := newCutConn(t, opts)
		var host bytes.Buffer
		var mu sync.Mutex
		_, ended := cc.call(t, &host, &mu)
		written := make(chan struct{})
		go func() {
			io.WriteString(cc.out, line)
			close(written)
		}()
		t.Cleanup(func() { <-written })
		return cc, &host, &mu, ended
	}

	t.Run("stall", func(t *testing.T) {
		t.Parallel()
		cc, host, mu, ended := start(t, &cutOpts{stall: 50 * time.Millisecond}, head)
		check(t, cc, host, mu, ended, errStreamStalled)
		// The server goes on, late: the rest of its line is skipped.
		io.WriteString(cc.out, strings.Repeat("y", 200<<10)+`"}]}}`+"\n")
		nextArrives(t, cc)
	})
	t.Run("too long", func(t *testing.T) {
		t.Parallel()
		cc, host, mu, ended := start(t, &cutOpts{maxLine: 300 << 10}, head+strings.Repeat("y", 400<<10)+`"}]}}`+"\n")
		check(t, cc, host, mu, ended, errStreamMalformed)
		nextArrives(t, cc)
	})
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		cc, host, mu, ended := start(t, nil, head+`"}]},"error":{"code":1,"message":"both"}}`+"\n")
		check(t, cc, host, mu, ended, errStreamMalformed)
		nextArrives(t, cc)
	})
	t.Run("end of stdout", func(t *testing.T) {
		t.Parallel()
		cc := newCutConn(t, nil)
		var host bytes.Buffer
		var mu sync.Mutex
		_, ended := cc.call(t, &host, &mu)
		io.WriteString(cc.out, head)
		cc.out.Close()
		check(t, cc, &host, &mu, ended, io.EOF)
	})
}

// cutInPieces forwards the result res through a cutter that rewrites it
// as rw says, in pieces of the sizes seed picks, as the server's reader
// hands them over (what a feed did not consume comes again, with the
// next piece), and returns what it wrote.
func cutInPieces(res []byte, seed uint64, rw Rewrite) ([]byte, *cutter, error) {
	var out bytes.Buffer
	c := &cutter{emitTo: func(p []byte) error { out.Write(p); return nil }, rw: rw}
	rnd := rand.New(rand.NewPCG(seed, seed>>7))
	var pending []byte
	for i := 0; ; {
		n := min(1+rnd.IntN(16), len(res)-i)
		pending = append(pending, res[i:i+n]...)
		i += n
		final := i == len(res)
		used, done, err := c.feed(pending, final)
		if err != nil {
			return nil, c, err
		}
		pending = append(pending[:0], pending[used:]...)
		if done {
			return out.Bytes(), c, nil
		}
		if final {
			return nil, c, errors.New("not done at the end")
		}
	}
}

// FuzzCutter: a result forwarded piece by piece, when the cutter takes it
// whole, comes out as the whole line's rewriting makes it, with the same
// isError and size, in each of the ways a result is rewritten between
// revisions (seed's low bits choose one).
func FuzzCutter(f *testing.F) {
	for _, res := range []string{
		`{"content":[{"type":"text","text":"plain"}]}`,
		`{"content":[{"type":"text","text":"esc \" \\ \u00e9 \ud83d\ude00 \ud800 \udc00 ` + "\xff\xe2\x82 €" + `"}],"isError":true}`,
		`{"isError":false,"content":[{"type":"widget","x":1},{"text":"late","type":"video"}],"isError":true}`,
		`{"content":[{"TYPE":"text","text":"a"},"s",null,[1],{"type":"te\u0078t","text":"b"}]}`,
		`{"structuredContent":{"a":[1,{"b":"\\\""}]},"content":[],"n":-1.5e3,"t":true}`,
		"{ \"content\" : [ { \"type\" : \"image\" , \"data\" : \"AA\" } ] , \"_meta\" : { } }",
		`{"content":[{"text":"` + strings.Repeat(`\\`, 9) + `","type":"text"}]}`,
		`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[],"resultType":"complete"}`,
		"{ \"resultType\":\"complete\" , \"_meta\" : {\"a\":1} ,\"isError\":true }",
	} {
		for mode := range uint64(len(rewrites)) {
			f.Add([]byte(res), mode)
		}
	}
	f.Fuzz(func(t *testing.T, res []byte, seed uint64) {
		line := append(append([]byte(`{"jsonrpc":"2.0","id":"jr-1","result":`), res...), '}')
		var result []byte
		if !rawjson.EachMember(line, func(key, val []byte) {
			if string(key) == "result" {
				result = val
			}
		}) || len(result) == 0 || result[0] != '{' {
			return // not an answer the reader would take
		}
		// The reader starts the cutter at the result's '{' (streamHead).
		start := len(line) - 1 - len(bytes.TrimLeft(res, " \t\r\n"))
		rw := rewrites[seed%uint64(len(rewrites))].rw
		got, c, err := cutInPieces(line[start:], seed, rw)
		if err != nil {
			return // cut short: the answer is malformed, or not one it can stream
		}
		want, wantSize, wantErr := wholeAnswer(result, rw)
		want = want[len(`{"jsonrpc":"2.0","id":7,"result":`) : len(want)-2]
		if !bytes.Equal(got, want) {
			t.Fatalf("cut in pieces:\n%q\nwhole:\n%q", got, want)
		}
		if c.size != wantSize || c.isError != wantErr {
			t.Fatalf("size %d isError %v, want %d %v", c.size, c.isError, wantSize, wantErr)
		}
	})
}
