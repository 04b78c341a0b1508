package dataplane

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/junction-mcp/junction/wire"
)

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

// readGood runs readFrames over in, as a line connection reads its
// host, with a taker that takes what go-sdk's decoder reads as a
// message: the messages it took are returned, and the rest is refused on
// out (conn.decode).
func readGood(in io.Reader, out io.Writer, max int, onBad func(error)) []jsonrpc.Message {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	c := newConn(wire.NewWriter(out), onBad)
	var msgs []jsonrpc.Message
	take := func(line []byte) bool {
		m, err := jsonrpc.DecodeMessage(line)
		if err == nil && line[0] == '{' {
			msgs = append(msgs, m)
		}
		return err == nil && line[0] == '{'
	}
	readFrames(in, max, c, take, func() { c.out.Flush() })
	return msgs
}

// TestStdioRejectsBadFramesAndGoesOn: a frame that is not JSON, a batch,
// one that is no JSON-RPC message and one over the longest line are each
// answered with an error (id null) and reported, and reading goes on.
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
	msgs := readGood(strings.NewReader(in), out, 100, func(err error) { bad = append(bad, err.Error()) })
	if len(msgs) != 3 {
		t.Fatalf("got %d messages, want the 3 good ones: %v", len(msgs), msgs)
	}
	close(out.ch)
	var codes []int64
	for chunk := range out.ch {
		for line := range bytes.Lines(chunk) {
			var resp struct {
				ID    any `json:"id"`
				Error struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(bytes.TrimSpace(line), &resp); err != nil {
				t.Fatalf("error response %q is not JSON: %v", line, err)
			}
			if resp.ID != nil {
				t.Errorf("error response id = %v, want null", resp.ID)
			}
			codes = append(codes, resp.Error.Code)
		}
	}
	want := []int64{-32700, -32600, -32600, -32600}
	if !slices.Equal(codes, want) {
		t.Errorf("error codes = %v, want %v", codes, want)
	}
	if len(bad) != 4 {
		t.Errorf("OnBadFrame called %d times, want 4", len(bad))
	}
}

// FuzzStdioFrames feeds arbitrary input: reading must never panic, must
// write only JSON, and must take no more messages than there are
// frames.
func FuzzStdioFrames(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	f.Add([]byte("garbage\n{\"jsonrpc\":\"2.0\"}\n[]\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"result":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		delivered := len(readGood(bytes.NewReader(data), &out, 1<<10, nil))
		for line := range bytes.Lines(out.Bytes()) {
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
