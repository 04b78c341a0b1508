package dataplane

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// eventReader reads an SSE stream one event at a time.
type eventReader struct{ sc *bufio.Scanner }

func newEventReader(r io.Reader) *eventReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	return &eventReader{sc}
}

// next returns the next event, or fails t at the end of the stream.
func (r *eventReader) next(t *testing.T) sseEvent {
	t.Helper()
	ev, ok := r.read()
	if !ok {
		t.Fatalf("the stream ended (%v) before the next event", r.sc.Err())
	}
	return ev
}

// read returns the next event, or false at the end of the stream.
func (r *eventReader) read() (sseEvent, bool) {
	var ev sseEvent
	for any := false; r.sc.Scan(); {
		k, v, _ := strings.Cut(r.sc.Text(), ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			if any {
				return ev, true
			}
			continue
		case "event":
			ev.name = v
		case "id":
			ev.id = v
		case "data":
			ev.data = v
		case "retry":
			ev.retry = v
		}
		any = true
	}
	return ev, false
}

// eventIndex is the index in an event id (<stream>_<index>).
func eventIndex(t *testing.T, id string) (string, int) {
	t.Helper()
	stream, idx, ok := strings.Cut(id, "_")
	n, err := strconv.Atoi(idx)
	if !ok || err != nil {
		t.Fatalf("event id %q is not <stream>_<index>", id)
	}
	return stream, n
}

// TestHTTPRawStreamResumes: a raw call whose response has become an SSE
// stream goes on when the host loses the stream; the host resumes it
// with Last-Event-ID and gets the rest, live, with ids that go on from
// its last one; once the call is over, the same GET replays it from the
// store. A call answered with JSON (no stream yet) still ends with its
// POST, and a session's DELETE ends a call no POST holds any more.
func TestHTTPRawStreamResumes(t *testing.T) {
	release := make(chan struct{})
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	f := &rawFake{tools: []string{"slow", "quiet", "stuck"}, raw: func(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
		started <- struct{}{}
		ss := junction.HostSession(ctx)
		if name != "quiet" {
			junction.Log(ctx, ss, &mcp.LoggingMessageParams{Level: "error", Data: "one"})
		}
		wait := release
		if name != "slow" {
			wait = nil // until the call ends
		}
		select {
		case <-wait:
		case <-ctx.Done():
			ended <- context.Cause(ctx)
			return nil, ctx.Err()
		}
		junction.Log(ctx, ss, &mcp.LoggingMessageParams{Level: "error", Data: "two"})
		ended <- nil
		return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	}}
	srv := startHTTPFast(t, f, HTTPOptions{})
	sid := rawSession(t, srv.URL)
	io.Copy(io.Discard, rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`).Body)

	// post starts the call and returns its stream, and a func that drops
	// the POST as a host that loses its connection does.
	post := func(id int, tool string) (*http.Response, func()) {
		ctx, cancel := context.WithCancel(t.Context())
		req := rawRequest(t, srv.URL, sid, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"s__`+tool+`"}}`).WithContext(ctx)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	resume := func(last string) *http.Response {
		req := request(t, http.MethodGet, srv.URL, "", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25", "Last-Event-ID", last)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET with Last-Event-ID %s: %s", last, resp.Status)
		}
		return resp
	}

	resp, drop := post(7, "slow")
	<-started
	er := newEventReader(resp.Body)
	prime, one := er.next(t), er.next(t)
	stream, n := eventIndex(t, one.id)
	if prime.name != "prime" || prime.id != stream+"_0" || prime.data != "" || n != 1 || !strings.Contains(one.data, `"one"`) {
		t.Fatalf("the stream began with %+v, %+v; want a priming event <stream>_0, then the log message <stream>_1", prime, one)
	}
	drop()

	live := resume(one.id)
	close(release)
	er = newEventReader(live.Body)
	two, answer := er.next(t), er.next(t)
	if two.id != stream+"_2" || !strings.Contains(two.data, `"two"`) {
		t.Errorf("resumed stream: %+v; want the second log message as %s_2", two, stream)
	}
	if answer.id != stream+"_3" || answer.data != `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"done"}]}}` {
		t.Errorf("resumed stream's answer: %+v; want the result as %s_3", answer, stream)
	}
	if err := <-ended; err != nil {
		t.Errorf("the call ended with %v when its POST was dropped; want it to go on", err)
	}
	if rest, _ := io.ReadAll(live.Body); len(rest) != 0 {
		t.Errorf("after the answer the resumed stream had %q; want its end", rest)
	}

	// Over: go-sdk replays the stream from the store.
	replay := readEvents(t, resume(one.id).Body)
	if len(replay) != 2 || replay[0] != two || replay[1] != answer {
		t.Errorf("replayed after the call: %+v; want %+v, %+v", replay, two, answer)
	}

	// A call with no stream yet ends with its POST: its answer would be a
	// JSON body, which no GET can resume.
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		req := rawRequest(t, srv.URL, sid, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"s__quiet"}}`).WithContext(ctx)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a call without a stream ended with %v when its POST was dropped; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call without a stream went on after its POST was dropped")
	}

	// A call no POST holds ends with its session.
	resp, drop = post(9, "stuck")
	<-started
	if one := newEventReader(resp.Body); one.next(t).name != "prime" {
		t.Fatal("no priming event")
	}
	drop()
	req := request(t, http.MethodDelete, srv.URL, "", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dresp.Body.Close()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the session's DELETE ended the call with %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session's DELETE did not end a call whose POST was dropped")
	}
	if f.slow.Load() != 0 {
		t.Errorf("%d calls went through go-sdk; want all raw", f.slow.Load())
	}
}
