package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/junction-mcp/junction/wire"
)

// readMessages reads from c until EOF, with a bound, answering each
// request so that the transport's drain at EOF does not wait.
func readMessages(t *testing.T, c interface {
	Read(context.Context) (jsonrpc.Message, error)
	Write(context.Context, jsonrpc.Message) error
}) []jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var msgs []jsonrpc.Message
	for {
		m, err := c.Read(ctx)
		if err != nil {
			if err != io.EOF {
				t.Fatalf("Read: %v", err)
			}
			return msgs
		}
		msgs = append(msgs, m)
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			c.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
		}
	}
}

type lockedBuffer struct {
	ch chan []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.ch <- append([]byte(nil), p...)
	return len(p), nil
}

// syncBuffer is a buffer that goroutines other than the test's write
// to, such as a logger's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startConn is what serving a host over stdio does without the raw path:
// a conn fed by readFrames, as go-sdk's server would read it.
func startConn(in io.Reader, out io.Writer, max int, onBad func(error)) *conn {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	c := newConn(wire.NewWriter(out), onBad)
	c.sdk = true
	go func() { c.endInput(readFrames(in, max, c, nil, nil)) }()
	return c
}

func TestStdioRejectsBadFramesAndGoesOn(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`not json at all`,
		``,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":{"bad":"id"},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
		strings.Repeat("x", 200), // over MaxFrame
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, "\n") + "\n"
	out := &lockedBuffer{ch: make(chan []byte, 100)}
	var bad []string
	conn := startConn(strings.NewReader(in), out, 100, func(err error) { bad = append(bad, err.Error()) })
	defer conn.Close()
	msgs := readMessages(t, conn)
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want the 3 good ones: %v", len(msgs), msgs)
	}
	close(out.ch)
	var codes []int64
	for line := range out.ch {
		var resp struct {
			ID    any `json:"id"`
			Error struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(line), &resp); err != nil {
			t.Fatalf("error response %q is not JSON: %v", line, err)
		}
		if resp.Error.Code != 0 && resp.ID != nil {
			t.Errorf("error response id = %v, want null", resp.ID)
		}
		codes = append(codes, resp.Error.Code)
	}
	// Two answers to the good requests, then the four rejections (order
	// between them is not fixed).
	var errCodes []int64
	for _, c := range codes {
		if c != 0 {
			errCodes = append(errCodes, c)
		}
	}
	codes = errCodes
	want := []int64{-32700, -32600, -32600, -32600}
	if len(codes) != len(want) {
		t.Fatalf("error codes = %v, want %v", codes, want)
	}
	for i := range want {
		if codes[i] != want[i] {
			t.Errorf("error codes = %v, want %v", codes, want)
			break
		}
	}
	if len(bad) != 4 {
		t.Errorf("OnBadFrame called %d times, want 4", len(bad))
	}
}

func TestStdioDrainsBeforeEOF(t *testing.T) {
	pr, pw := io.Pipe()
	var out bytes.Buffer
	conn := startConn(pr, &out, 0, nil)
	defer conn.Close()
	go func() {
		io.WriteString(pw, `{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n")
		pw.Close()
	}()
	ctx := t.Context()
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eof := make(chan error, 1)
	go func() { _, err := conn.Read(ctx); eof <- err }()
	select {
	case err := <-eof:
		t.Fatalf("Read returned %v before the pending request was answered", err)
	case <-time.After(100 * time.Millisecond):
	}
	resp, _ := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}`))
	if err := conn.Write(ctx, resp); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-eof:
		if err != io.EOF {
			t.Errorf("Read after drain = %v, want EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not return EOF after the last answer")
	}
	_ = msg
}

// FuzzStdioFrames feeds arbitrary input: the transport must never panic,
// and must answer every non-blank frame it cannot deliver.
func FuzzStdioFrames(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	f.Add([]byte("garbage\n{\"jsonrpc\":\"2.0\"}\n[]\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"result":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := &lockedBuffer{ch: make(chan []byte, 4096)}
		conn := startConn(bytes.NewReader(data), out, 1<<10, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		delivered := 0
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				break
			}
			delivered++
			// Answer requests so the drain at EOF does not wait.
			if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
				resp, _ := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
				resp.(*jsonrpc.Response).ID = req.ID
				conn.Write(ctx, resp)
			}
		}
		conn.Close()
		close(out.ch)
		for line := range out.ch {
			if !json.Valid(bytes.TrimSpace(line)) {
				t.Fatalf("transport wrote invalid JSON %q", line)
			}
		}
		frames := 0
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				frames++
			}
		}
		if sc.Err() == nil && delivered > frames {
			t.Fatalf("delivered %d messages from %d frames", delivered, frames)
		}
	})
}
