package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/junction-mcp/junction/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeConn is a serverConn on pipes, without a process: the test plays the
// server on the other ends.
type pipeConn struct {
	c         *serverConn
	serverIn  *os.File // the server's stdin: what junction wrote
	serverOut *os.File // the server's stdout: what junction reads
}

func newPipeConn(t *testing.T) *pipeConn {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := newServerConn(inW, outR, nil)
	p := &pipeConn{c: c, serverIn: inR, serverOut: outW}
	t.Cleanup(func() {
		outW.Close() // the reader ends
		c.Wait()
		c.Close()
		inR.Close()
		outR.Close()
	})
	return p
}

// replies is a rawReceiver on a channel.
type replies chan rawReply

func (r replies) ReceiveRaw(reply rawReply) { r <- reply }

// sentCall is a raw call and where its reply arrives.
type sentCall struct {
	*rawCall
	reply replies
}

func (s sentCall) Reply() <-chan rawReply { return s.reply }

// sendRaw starts a raw call with progress token tok.
func (p *pipeConn) sendRaw(tok string, params json.RawMessage) (sentCall, error) {
	reply := make(replies, 1)
	rc := p.c.newRawCall(reply)
	err := rc.Send(context.Background(), []byte(`"progressToken":"`+tok+`"`), params)
	return sentCall{rc, reply}, err
}

// queued reports how many raw requests wait in the write queue.
func (p *pipeConn) queued() int {
	return p.c.in.Stats().QueuedIDs
}

// TestRawBurstInterleaved sends a burst of raw requests while the first
// write is stuck (so the rest queue and go out together), then answers
// them in reverse order: every call gets its own answer, and the queued
// lines reach the server whole.
func TestRawBurstInterleaved(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	const n = 64
	// The first request is bigger than the pipe: its write blocks until
	// the server reads.
	big := strings.Repeat("b", 256<<10)
	type sent struct {
		id    string
		reply <-chan rawReply
	}
	results := make(chan sent, n)
	errs := make(chan error, n)
	send := func(i int) {
		arg := fmt.Sprintf(`{"name":"echo","arguments":{"i":%d`, i)
		if i == 0 {
			arg += `,"pad":"` + big + `"`
		}
		rc, err := p.sendRaw(fmt.Sprintf("tok-%d", i), json.RawMessage(arg+"}}"))
		if err != nil {
			errs <- err
			return
		}
		results <- sent{string(appendRawID(nil, rc.n)), rc.Reply()}
	}
	go send(0)
	waitFor(t, "the first write to block", func() bool {
		return p.c.in.Stats().Writing
	})
	for i := 1; i < n; i++ {
		go send(i)
	}
	waitFor(t, "the burst to queue", func() bool { return p.queued() == n-1 })

	// The server reads every request, then answers in reverse order.
	sc := bufio.NewScanner(p.serverIn)
	sc.Buffer(nil, 1<<20)
	type request struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Meta      map[string]string `json:"_meta"`
			Arguments struct {
				I int `json:"i"`
			} `json:"arguments"`
		} `json:"params"`
	}
	var reqs []request
	for len(reqs) < n && sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("request line %d is not whole JSON: %v: %.200s", len(reqs), err, sc.Bytes())
		}
		if want := fmt.Sprintf("tok-%d", r.Params.Arguments.I); r.Params.Meta["progressToken"] != want {
			t.Errorf("request %d has progress token %q, want %q", r.Params.Arguments.I, r.Params.Meta["progressToken"], want)
		}
		reqs = append(reqs, r)
	}
	if len(reqs) != n {
		t.Fatalf("server read %d requests, want %d (%v)", len(reqs), n, sc.Err())
	}
	rounds := p.c.in.Stats().Rounds
	if rounds >= n-1 {
		t.Errorf("%d queued requests took %d rounds of writes, want them coalesced", n-1, rounds)
	}
	w := bufio.NewWriter(p.serverOut)
	for i := len(reqs) - 1; i >= 0; i-- {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%d"}]}}`+"\n", reqs[i].ID, reqs[i].Params.Arguments.I)
		if i%7 == 0 {
			w.Flush() // answers arrive in several reads
		}
	}
	w.Flush()

	// Match each reply to its request by id.
	byID := make(map[string]int)
	for _, r := range reqs {
		byID[string(r.ID)] = r.Params.Arguments.I
	}
	for range n {
		select {
		case err := <-errs:
			t.Fatal(err)
		case s := <-results:
			select {
			case r := <-s.reply:
				want := fmt.Sprintf(`{"content":[{"type":"text","text":"%d"}]}`, byID[s.id])
				if string(r.Result) != want || r.Err != nil || r.Fail != nil {
					t.Errorf("reply to %s = %s, %v, %v; want %s", s.id, r.Result, r.Err, r.Fail, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no reply to %s", s.id)
			}
		}
	}
	if p.c.rawPending.Load() != 0 {
		t.Errorf("%d raw calls still pending", p.c.rawPending.Load())
	}
}

// TestWriteFailureReachesQueuedCalls: when the server stops reading
// (its stdin closes) with requests queued behind a stuck write, the
// writer, the queued raw calls and the queued go-sdk writes all fail, and
// so does every later write.
func TestWriteFailureReachesQueuedCalls(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	big := json.RawMessage(`{"name":"echo","arguments":{"pad":"` + strings.Repeat("b", 256<<10) + `"}}`)
	firstErr := make(chan error, 1)
	go func() {
		_, err := p.sendRaw("t0", big)
		firstErr <- err
	}()
	waitFor(t, "the first write to block", func() bool {
		return p.c.in.Stats().Writing
	})
	rc1, err := p.sendRaw("t1", json.RawMessage(`{"name":"echo"}`))
	reply := rc1.Reply()
	if err != nil {
		t.Fatalf("queued sendRaw = %v, want it queued", err)
	}
	pingID, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	sdkErr := make(chan error, 1)
	go func() {
		sdkErr <- p.c.Write(t.Context(), &jsonrpc.Request{Method: "ping", ID: pingID})
	}()
	waitFor(t, "the go-sdk write to queue", func() bool {
		return strings.Contains(string(p.c.in.Stats().Queued), `"ping"`)
	})
	select {
	case err := <-sdkErr:
		t.Fatalf("a queued go-sdk write returned (%v) before its round was written", err)
	default:
	}

	p.serverIn.Close() // the server is gone: the stuck write fails

	for what, ch := range map[string]chan error{"stuck write": firstErr, "queued go-sdk write": sdkErr} {
		select {
		case err := <-ch:
			if !errors.Is(err, mcp.ErrConnectionClosed) {
				t.Errorf("%s = %v, want an error wrapping ErrConnectionClosed", what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not fail", what)
		}
	}
	select {
	case r := <-reply:
		if !errors.Is(r.Fail, mcp.ErrConnectionClosed) {
			t.Errorf("queued raw call got %+v, want a write failure", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("queued raw call got no reply")
	}
	if _, err := p.sendRaw("t2", json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("sendRaw after the failure = %v, want ErrConnectionClosed", err)
	}
	if p.c.rawPending.Load() != 0 {
		t.Errorf("%d raw calls still pending", p.c.rawPending.Load())
	}
}

// TestWriteFailureOwnLine: a writer whose own (queued) line fails gets the
// error back, and its raw call is not left waiting.
func TestWriteFailureOwnLine(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	p.serverIn.Close()
	if _, err := p.sendRaw("t", json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("sendRaw to a server that is gone = %v, want ErrConnectionClosed", err)
	}
	if n := p.c.rawPending.Load(); n != 0 {
		t.Errorf("%d raw calls pending after a failed send", n)
	}
}

// lockingReceiver takes mu to receive, as a caller's receiver may while
// the caller holds mu to make the call.
type lockingReceiver struct {
	mu    *sync.Mutex
	reply replies
}

func (l lockingReceiver) ReceiveRaw(r rawReply) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reply <- r
}

// A raw call made after the server's stdout has ended is not sent, and
// says so (wire.ErrNotSent) through Send, not through newRawCall: a caller may
// hold what its receiver takes while it makes the call (it did, and the
// call never ended).
func TestRawCallAfterEnd(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	p.serverOut.Close()
	waitFor(t, "the reader to end", func() bool {
		p.c.rawMu.Lock()
		defer p.c.rawMu.Unlock()
		return p.c.readEnded
	})
	var mu sync.Mutex
	rcv := lockingReceiver{&mu, make(replies, 1)}
	done := make(chan *rawCall, 1)
	go func() {
		mu.Lock()
		rc := p.c.newRawCall(rcv)
		mu.Unlock()
		done <- rc
	}()
	var rc *rawCall
	select {
	case rc = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("newRawCall after the end delivered its reply at once, into a receiver its caller holds")
	}
	if err := rc.Send(context.Background(), nil, json.RawMessage(`{"name":"echo"}`)); !errors.Is(err, wire.ErrNotSent) {
		t.Errorf("Send after the end = %v, want wire.ErrNotSent", err)
	}
	if r := <-rcv.reply; !errors.Is(r.Fail, wire.ErrNotSent) {
		t.Errorf("reply = %+v, want a failure wrapping wire.ErrNotSent", r)
	}
}

// Arguments that are not UTF-8 reach the server as U+FFFD, so the line it
// reads is JSON text it can parse (a server that cannot answers a parse
// error with id null, which no call can be told about).
func TestRawCallFixesText(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	if _, err := p.sendRaw("tok", json.RawMessage("{\"name\":\"echo\",\"arguments\":{\"text\":\"a\xff\xfeb\",\"s\":\"\\ud800\"}}")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.serverIn).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Params struct {
			Arguments map[string]string `json:"arguments"`
		} `json:"params"`
	}
	if !utf8.Valid(line) || json.Unmarshal(line, &msg) != nil {
		t.Fatalf("the server read %q: not clean JSON text", line)
	}
	if got := msg.Params.Arguments; got["text"] != "a\uFFFD\uFFFDb" || got["s"] != "\uFFFD" {
		t.Errorf("arguments as the server read them: %q", got)
	}
}

// Params the host's side read (a wire.Link's Request) go out with their
// _meta member replaced, where the record says it is, and text that is
// not UTF-8 before and after it reaches the server as U+FFFD too.
func TestRawCallFixesTextBesideMeta(t *testing.T) {
	t.Parallel()
	for _, args := range []string{"{\"text\":\"a\xffb\"}", "{\"text\":\"ok\"}"} {
		for _, after := range []string{"", ",\"requestState\":\"s\xfe\""} {
			p := newPipeConn(t)
			meta := `,"_meta":{"progressToken":"host","k":"v"}`
			params := []byte(`{"name":"echo","arguments":` + args + meta + after + `}`)
			at := bytes.Index(params, []byte(meta))
			hr := &wire.HostRequest{Params: params, MetaAt: [2]int{at, at + len(meta)}}
			ctx := wire.WithLink(context.Background(), &wire.Link{Request: hr})
			rc := p.c.newRawCall(make(replies, 1))
			if err := rc.Send(ctx, []byte(`"progressToken":"tok"`), params); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(p.serverIn).ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			var msg struct {
				Params map[string]any `json:"params"`
			}
			if !utf8.Valid(line) || json.Unmarshal(line, &msg) != nil {
				t.Fatalf("arguments %q, then %q: the server read %q, not clean JSON text", args, after, line)
			}
			if m, _ := msg.Params["_meta"].(map[string]any); len(m) != 1 || m["progressToken"] != "tok" {
				t.Errorf("arguments %q, then %q: the server read _meta %v, want the hub's alone", args, after, msg.Params["_meta"])
			}
		}
	}
}

// An error the server sends with id null (it could not read the request)
// ends the one raw call waiting, at once, rather than at its timeout; with
// two waiting it ends neither (it cannot be told whose it is).
func TestRawCallNullIDError(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	r := bufio.NewReader(p.serverIn)
	one, err := p.sendRaw("t1", json.RawMessage(`{"name":"echo"}`))
	if err != nil {
		t.Fatal(err)
	}
	r.ReadBytes('\n')
	nullErr := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n"
	p.serverOut.WriteString(nullErr)
	select {
	case reply := <-one.Reply():
		if reply.Err == nil || reply.Err.Code != -32700 {
			t.Errorf("reply = %+v, want the server's -32700", reply)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the lone call did not get the server's id-null error")
	}

	two, _ := p.sendRaw("t2", json.RawMessage(`{"name":"echo"}`))
	three, _ := p.sendRaw("t3", json.RawMessage(`{"name":"echo"}`))
	r.ReadBytes('\n')
	line, _ := r.ReadBytes('\n')
	p.serverOut.WriteString(nullErr)
	// The server answers the third call; the second still waits.
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(line, &req)
	p.serverOut.WriteString(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[]}}` + "\n")
	answered, waiting := three, two
	if string(req.ID) == string(appendRawID(nil, two.n)) {
		answered, waiting = two, three
	}
	select {
	case reply := <-answered.Reply():
		if reply.Result == nil {
			t.Errorf("answered call: %+v", reply)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	select {
	case reply := <-waiting.Reply():
		t.Errorf("an id-null error with two calls waiting ended one: %+v", reply)
	default:
	}
	waiting.Fail(errors.New("test over"))
}

// A raw call whose line cannot be written, because the server closed
// its stdin (it exited), was not read by the server: its reply says so
// (wire.ErrNotSent), so that the call may go to the next session.
func TestRawCallUnwritten(t *testing.T) {
	t.Parallel()
	p := newPipeConn(t)
	p.serverIn.Close() // the server is gone: nothing reads its stdin
	rcv := make(replies, 1)
	rc := p.c.newRawCall(rcv)
	rc.Send(context.Background(), nil, json.RawMessage(`{"name":"echo"}`))
	select {
	case r := <-rcv:
		if !errors.Is(r.Fail, wire.ErrNotSent) || !errors.Is(r.Fail, syscall.EPIPE) {
			t.Errorf("reply = %+v, want a failure wrapping wire.ErrNotSent and EPIPE", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply within 10s for a call whose write failed")
	}
}
