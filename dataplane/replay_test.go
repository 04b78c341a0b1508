package dataplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// after collects what s.After yields.
func after(s *replayStore, session, stream string, index int) ([]string, error) {
	var out []string
	for data, err := range s.After(context.Background(), session, stream, index) {
		if err != nil {
			return out, err
		}
		out = append(out, string(data))
	}
	return out, nil
}

func TestReplayStoreReplaysAfterIndex(t *testing.T) {
	ctx := context.Background()
	s := newReplayStore(1 << 20)
	s.Open(ctx, "s1", "a")
	for _, m := range []string{"", "m1", "m2"} { // "": go-sdk's priming event
		if err := s.Append(ctx, "s1", "a", []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for index, want := range map[int][]string{-1: {"", "m1", "m2"}, 0: {"m1", "m2"}, 2: nil, 5: nil} {
		got, err := after(s, "s1", "a", index)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("After(%d) = %q, %v; want %q", index, got, err, want)
		}
	}
	if _, err := after(s, "s1", "nope", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After on an unknown stream: %v, want ErrEventsPurged", err)
	}
	closed := false
	s.onClose("s1", func() { closed = true })
	s.SessionClosed(ctx, "s1")
	if s.size != 0 || len(s.sessions) != 0 || s.lru.Len() != 0 || !closed {
		t.Errorf("after SessionClosed: size %d, %d sessions, %d streams, onClose ran %v; want all gone", s.size, len(s.sessions), s.lru.Len(), closed)
	}
	if err := s.Append(ctx, "s1", "a", []byte("late")); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("Append after SessionClosed: %v, want ErrEventsPurged", err)
	}
}

// TestReplayStoreManyStreams: a session's streams past the first two are
// kept as well as those, found again, dropped singly and all at its end.
func TestReplayStoreManyStreams(t *testing.T) {
	ctx := context.Background()
	s := newReplayStore(1 << 20)
	ids := []string{"", "a", "b", "c", "d"}
	for _, id := range ids {
		s.Open(ctx, "s", id)
		s.Append(ctx, "s", id, []byte("m-"+id))
	}
	s.Open(ctx, "s", "b") // again: the same stream
	for _, id := range ids {
		if got, err := after(s, "s", id, -1); err != nil || !slices.Equal(got, []string{"m-" + id}) {
			t.Errorf("After(%q) = %q, %v", id, got, err)
		}
	}
	if s.lru.Len() != len(ids) {
		t.Errorf("%d streams, want %d", s.lru.Len(), len(ids))
	}
	s.mu.Lock()
	for _, id := range []string{"a", "c"} { // one of the first two, one past them
		s.drop(s.stream("s", id))
	}
	s.mu.Unlock()
	checkSize(t, s)
	s.Open(ctx, "s", "e") // takes the free place of "a"
	if s.stream("s", "a") != nil || s.stream("s", "c") != nil || s.stream("s", "e") == nil || s.stream("s", "d") == nil {
		t.Error("streams not where they should be after del and Open")
	}
	checkSize(t, s)
	s.SessionClosed(ctx, "s")
	if len(s.sessions) != 0 || s.lru.Len() != 0 || s.size != 0 {
		t.Errorf("after SessionClosed: %d sessions, %d streams, size %d", len(s.sessions), s.lru.Len(), s.size)
	}
}

// TestReplayStoreBound: past its bound the store drops the streams used
// least recently, whole; a stream alone over the bound keeps its newest
// message; resuming what was dropped fails; the charged size never stays
// over the bound and matches what is held.
func TestReplayStoreBound(t *testing.T) {
	ctx := context.Background()
	msg := strings.Repeat("x", 100)
	perStream := replayStreamCost + len(msg) + replayEventCost
	s := newReplayStore(3 * perStream)
	for i := range 3 {
		id := fmt.Sprint(i)
		s.Open(ctx, "s", id)
		s.Append(ctx, "s", id, []byte(msg))
	}
	if _, err := after(s, "s", "0", -1); err != nil { // resuming 0 makes 1 the least recently used
		t.Fatal(err)
	}
	s.Open(ctx, "t", "3")
	s.Append(ctx, "t", "3", []byte(msg))
	if _, err := after(s, "s", "1", -1); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("stream 1 (least recently used) still resumable: %v", err)
	}
	for _, id := range []string{"0", "2"} {
		if got, err := after(s, "s", id, -1); err != nil || len(got) != 1 {
			t.Errorf("stream %s: %d messages, %v; want it kept", id, len(got), err)
		}
	}
	if err := s.Append(ctx, "s", "1", []byte(msg)); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("Append to a dropped stream: %v, want ErrEventsPurged", err)
	}
	checkSize(t, s)

	// One stream bigger than the whole bound: the others go, then its
	// own oldest messages; the newest stays even alone over the bound.
	big := strings.Repeat("y", 2*perStream)
	s.Open(ctx, "u", "big")
	for _, m := range []string{"first", big, big} {
		s.Append(ctx, "u", "big", []byte(m))
	}
	if s.lru.Len() != 1 || len(s.sessions) != 1 {
		t.Errorf("%d streams in %d sessions left, want only the big one", s.lru.Len(), len(s.sessions))
	}
	if got, err := after(s, "u", "big", 1); err != nil || len(got) != 1 {
		t.Errorf("After(1) on the big stream = %d messages, %v; want its newest", len(got), err)
	}
	if _, err := after(s, "u", "big", 0); !errors.Is(err, mcp.ErrEventsPurged) {
		t.Errorf("After(0) on the big stream: %v, want ErrEventsPurged (message 1 is gone)", err)
	}
	checkSize(t, s)
}

// checkSize checks the store's accounting against what it holds.
func checkSize(t *testing.T, s *replayStore) {
	t.Helper()
	n := 0
	for _, rs := range s.sessions {
		for st := range rs.all {
			sz := replayStreamCost
			for _, m := range st.msgs {
				sz += len(m) + replayEventCost
			}
			if sz != st.size {
				t.Errorf("stream %s/%s charged %d, holds %d", st.session, st.id, st.size, sz)
			}
			n += sz
		}
	}
	if n != s.size {
		t.Errorf("store charged %d, holds %d", s.size, n)
	}
	if s.size > s.max && s.lru.Len() > 1 {
		t.Errorf("store at %d bytes, over its bound %d with %d streams", s.size, s.max, s.lru.Len())
	}
	// The LRU list links every stream both ways.
	walked := 0
	var prev *replayStream
	for st := s.lru.front; st != nil; st = st.newer {
		if st.older != prev || s.stream(st.session, st.id) != st {
			t.Fatalf("LRU list broken at stream %s/%s", st.session, st.id)
		}
		prev = st
		walked++
	}
	if prev != s.lru.back || walked != s.lru.Len() {
		t.Errorf("LRU list: %d streams walked, Len %d, back %p, last %p", walked, s.lru.Len(), s.lru.back, prev)
	}
}

// TestReplayStoreSharesInitializeAnswers: sessions keep one copy of the
// same answer to initialize; other messages, and answers too big to
// share, are kept as they came; the shared copies are bounded.
func TestReplayStoreSharesInitializeAnswers(t *testing.T) {
	ctx := context.Background()
	s := newReplayStore(1 << 20)
	answer := func(n int) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"junction","version":"1"}}}`, n)
	}
	for _, sid := range []string{"a", "b"} {
		s.Open(ctx, sid, "init")
		s.Append(ctx, sid, "init", answer(1))
		s.Append(ctx, sid, "init", []byte(`{"jsonrpc":"2.0","id":2,"result":{}}`))
	}
	a, b := s.stream("a", "init").msgs, s.stream("b", "init").msgs
	if &a[0][0] != &b[0][0] || string(a[0]) != string(answer(1)) {
		t.Error("two sessions keep two copies of the same answer to initialize")
	}
	if &a[1][0] == &b[1][0] {
		t.Error("an answer to another request is shared")
	}
	big := append(answer(1)[:len(answer(1))-2], fmt.Sprintf(`,"instructions":%q}}`, strings.Repeat("i", replaySharedBytes))...)
	for _, sid := range []string{"c", "d"} {
		s.Open(ctx, sid, "init")
		s.Append(ctx, sid, "init", slices.Clone(big))
	}
	if &s.stream("c", "init").msgs[0][0] == &s.stream("d", "init").msgs[0][0] {
		t.Error("an answer over replaySharedBytes is shared")
	}
	for i := range 2 * replaySharedMax {
		s.Open(ctx, "e", fmt.Sprint(i))
		s.Append(ctx, "e", fmt.Sprint(i), answer(10+i))
	}
	if len(s.shared) != replaySharedMax {
		t.Errorf("%d shared answers, want at most %d", len(s.shared), replaySharedMax)
	}
	got, err := after(s, "e", fmt.Sprint(2*replaySharedMax-1), -1)
	if err != nil || len(got) != 1 || got[0] != string(answer(10+2*replaySharedMax-1)) {
		t.Errorf("an answer past the shared bound: %q, %v", got, err)
	}
	checkSize(t, s)
}

// sseEvent is one event of an SSE stream.
type sseEvent struct{ name, id, data, retry string }

// readEvents reads an SSE stream to its end.
func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	for er := newEventReader(r); ; {
		ev, ok := er.read()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// TestHTTPResumesClosedStream: a pack tool closes its SSE stream before
// it answers (SEP-1699), as the conformance pack's test_reconnection
// does; the stream started with a priming event and ended with the retry
// delay, and a GET with Last-Event-ID gets the answer, under the host's
// own id though go-sdk had it under the plane's (1.5 would come back as
// 1). The tool is told it may close its stream only where it can be
// resumed, whatever the host sends.
func TestHTTPResumesClosedStream(t *testing.T) {
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	resumable := make(chan bool, 1)
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "drop", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ok := req.Extra != nil && req.Extra.Header.Get(junction.ResumableStreamHeader) != ""
		resumable <- ok
		if ok {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after the drop"}}}, nil
	})
	hub.Add(t.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixNever})
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"drop","arguments":{}}}`

	srv := httptestServer(t, New(v, nil).HTTPHandler(nil))
	sid := rawSession(t, srv.URL)
	resp := postWith(t, srv.URL, call, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
	events := readEvents(t, resp.Body)
	if !<-resumable {
		t.Fatal("the tool was not told that its stream can be resumed")
	}
	if len(events) != 2 || events[0].id == "" || events[0].data != "" || events[1].name != "close" || events[1].retry != "10" {
		t.Fatalf("POST stream = %+v; want a priming event (id, empty data), then close with retry 10", events)
	}
	get := request(t, http.MethodGet, srv.URL, "", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25", "Last-Event-ID", events[0].id)
	resumed, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Body.Close()
	var answer string
	sc := bufio.NewScanner(resumed.Body)
	for answer == "" && sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && d != "" {
			answer = d
		}
	}
	if got := answerID(t, []byte(answer)); got != "1.5" || !strings.Contains(answer, "after the drop") {
		t.Errorf("resumed stream's answer = %s; want id 1.5 and the tool's text", answer)
	}

	// Where the stream could not be resumed the tool is not told so, even
	// when the host sends the header itself.
	for _, tc := range []struct {
		name string
		opts *HTTPOptions
		hdrs []string
	}{
		{"replay off", &HTTPOptions{ReplayBytes: -1}, []string{"Mcp-Protocol-Version", "2025-11-25"}},
		{"json responses", &HTTPOptions{JSONResponse: true}, []string{"Mcp-Protocol-Version", "2025-11-25"}},
		{"2025-06-18 (no priming event)", nil, []string{"Mcp-Protocol-Version", "2025-06-18"}},
		{"stateless 2026-07-28", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptestServer(t, New(v, nil).HTTPHandler(tc.opts))
			hdrs := append([]string{junction.ResumableStreamHeader, "1"}, tc.hdrs...)
			body := call
			if tc.hdrs == nil {
				body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"drop","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
				hdrs = append(hdrs, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "drop")
			} else {
				hdrs = append(hdrs, "Mcp-Session-Id", rawSession(t, srv.URL))
			}
			resp := postWith(t, srv.URL, body, hdrs...)
			out, _ := io.ReadAll(resp.Body)
			if <-resumable {
				t.Errorf("the tool was told its stream can be resumed")
			}
			if !strings.Contains(string(out), "after the drop") {
				t.Errorf("answer %s (%s), want the tool's text", out, resp.Status)
			}
		})
	}
}

func request(t *testing.T, method, url, body string, hdrs ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	for i := 0; i+1 < len(hdrs); i += 2 {
		req.Header.Set(hdrs[i], hdrs[i+1])
	}
	return req
}

// postWith POSTs body with the given header names and values.
func postWith(t *testing.T, url, body string, hdrs ...string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(request(t, http.MethodPost, url, body, hdrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
