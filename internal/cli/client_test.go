package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resumableServer is a go-sdk Streamable HTTP server with an event store,
// so a client may resume a dropped response stream with Last-Event-ID. It
// counts those resumptions.
type resumableServer struct {
	*httptest.Server
	server  *mcp.Server
	resumed atomic.Int32 // GET requests carrying Last-Event-ID
}

func newResumableServer(t *testing.T, wrap func(http.Handler) http.Handler) *resumableServer {
	t.Helper()
	rs := &resumableServer{server: mcp.NewServer(&mcp.Implementation{Name: "resumable", Version: "1"}, nil)}
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return rs.server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	if wrap != nil {
		h = wrap(h)
	}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			rs.resumed.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(rs.Close)
	return rs
}

// TestToolsCallResumesStreamTheServerCloses: the tool's handler closes its
// response stream (SSE "close" event with a retry delay, as a server about
// to restart would) and then answers; the CLI reconnects and the answer
// reaches it on the resumed stream.
func TestToolsCallResumesStreamTheServerCloses(t *testing.T) {
	t.Parallel()
	rs := newResumableServer(t, nil)
	mcp.AddTool(rs.server, &mcp.Tool{Name: "restart"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: time.Millisecond})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered after the drop"}}}, nil, nil
	})
	out, errOut, code := run(t, nil, "tools", "call", "restart", "-url", rs.URL, "-timeout", "20s")
	if code != 0 || !strings.Contains(out, "answered after the drop") {
		t.Fatalf("tools call restart: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if n := rs.resumed.Load(); n < 1 {
		t.Errorf("resumed streams = %d, want at least 1", n)
	}

	_, errOut, code = run(t, nil, "tools", "call", "restart", "-url", rs.URL, "-timeout", "20s", "-reconnects", "0")
	if code != 1 || !strings.Contains(errOut, "failed to reconnect") {
		t.Errorf("tools call restart -reconnects 0: exit %d, stderr %q; want exit 1 and the failed reconnect", code, errOut)
	}
	_, errOut, code = run(t, nil, "tools", "list", "-url", rs.URL, "-reconnects", "-1")
	if code != 2 || !strings.Contains(errOut, "-reconnects -1: want 0 or more") {
		t.Errorf("tools list -reconnects -1: exit %d, stderr %q", code, errOut)
	}
}

// TestToolsCallResumesStreamCutMidway: the connection carrying the tool
// call's response stream is aborted mid-stream (no clean end of the
// chunked body, as when a proxy or the network drops it) while the tool is
// still working; the tool answers after the cut, and the CLI gets the
// answer by resuming the stream.
func TestToolsCallResumesStreamCutMidway(t *testing.T) {
	t.Parallel()
	var (
		entered  = make(chan struct{}) // the tool is running: its stream is open
		dropped  = make(chan struct{}) // the first call's stream is cut
		release  = make(chan struct{}) // the tool may answer
		cutOnce  sync.Once
		cutFirst context.CancelFunc
		mu       sync.Mutex
	)
	rs := newResumableServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			first := false
			if r.Method == http.MethodPost && jsonRPCMethod(t, r) == "tools/call" {
				cutOnce.Do(func() { first = true })
			}
			if !first {
				next.ServeHTTP(w, r)
				return
			}
			ctx, cancel := context.WithCancel(r.Context())
			mu.Lock()
			cutFirst = cancel
			mu.Unlock()
			// Ask for a quick reconnect, as a server may, so the test
			// does not wait out go-sdk's default delay of 1 to 2 s.
			next.ServeHTTP(&retryWriter{ResponseWriter: w, retry: "retry: 1\n\n"}, r.WithContext(ctx))
			close(dropped)
			// Abort the response: the client sees the stream break
			// without its terminating chunk.
			panic(http.ErrAbortHandler)
		})
	})
	mcp.AddTool(rs.server, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered after the cut"}}}, nil, nil
	})

	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := run(t, nil, "tools", "call", "slow", "-url", rs.URL, "-timeout", "20s")
		done <- result{out, errOut, code}
	}()
	select {
	case <-entered:
	case r := <-done:
		t.Fatalf("tools call slow ended before the tool ran: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	mu.Lock()
	cutFirst()
	mu.Unlock()
	<-dropped
	close(release)
	r := <-done
	if r.code != 0 || !strings.Contains(r.out, "answered after the cut") {
		t.Fatalf("tools call slow: exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.errOut)
	}
	if n := rs.resumed.Load(); n < 1 {
		t.Errorf("resumed streams = %d, want at least 1", n)
	}
}

// jsonRPCMethod returns the method of the JSON-RPC message in r's body,
// leaving the body to be read again.
func jsonRPCMethod(t *testing.T, r *http.Request) string {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading a request body: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	json.Unmarshal(body, &msg)
	return msg.Method
}

// retryWriter writes an SSE retry field before the first bytes of an event
// stream response.
type retryWriter struct {
	http.ResponseWriter
	retry   string
	written bool
}

func (w *retryWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.written = true
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			if _, err := w.ResponseWriter.Write([]byte(w.retry)); err != nil {
				return 0, err
			}
		}
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the underlying writer.
func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestToolsListEndsAtTimeoutWhenTheServerNeverAnswersItsGET: the server
// accepts the standalone stream's GET and never answers it; the command
// still ends at -timeout with an error, instead of waiting forever inside
// go-sdk's Connect.
func TestToolsListEndsAtTimeoutWhenTheServerNeverAnswersItsGET(t *testing.T) {
	t.Parallel()
	rs := newResumableServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				<-r.Context().Done() // until the client gives up
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	done := make(chan string, 1)
	go func() {
		_, errOut, code := run(t, nil, "tools", "list", "-url", rs.URL, "-timeout", "500ms")
		done <- fmt.Sprintf("exit %d, stderr %q", code, errOut)
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, "exit 1") || !strings.Contains(got, "context deadline exceeded") {
			t.Errorf("tools list against a server that never answers its GET: %s; want exit 1 and the deadline", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tools list -timeout 500ms still running after 30 s: the standalone stream's GET is not bounded by -timeout")
	}
}

// TestToolsCallSendsParamHeaders: over Streamable HTTP at protocol
// 2026-07-28, a tool call carries the Mcp-Param-* headers its tool's
// x-mcp-header annotations ask for (SEP-2243), which go-sdk adds only for
// a tool the session has listed; and a tool the server does not list is
// refused before it is called.
func TestToolsCallSendsParamHeaders(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		headers []string // Mcp-Param-Region of each tools/call
	)
	// go-sdk serves protocol 2026-07-28 only statelessly.
	server := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && jsonRPCMethod(t, r) == "tools/call" {
			mu.Lock()
			headers = append(headers, r.Header.Get("Mcp-Param-Region"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
	server.AddTool(&mcp.Tool{Name: "route", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "routed"}}}, nil
	})
	for _, args := range [][]string{{"-args", `{"region":"eu-west1"}`}, {"-arg", "region=eu-west1"}} {
		out, errOut, code := run(t, nil, append([]string{"tools", "call", "route", "-url", ts.URL, "-timeout", "20s"}, args...)...)
		if code != 0 || !strings.Contains(out, "routed") {
			t.Fatalf("tools call route %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
	mu.Lock()
	got := strings.Join(headers, ",")
	mu.Unlock()
	if got != "eu-west1,eu-west1" {
		t.Errorf("Mcp-Param-Region of the calls = %q, want eu-west1 on both", got)
	}
	_, errOut, code := run(t, nil, "tools", "call", "hidden", "-url", ts.URL, "-timeout", "20s")
	if code != 1 || !strings.Contains(errOut, `no tool named "hidden"`) {
		t.Errorf("tools call hidden: exit %d, stderr %q; want exit 1 and no such tool", code, errOut)
	}
}
