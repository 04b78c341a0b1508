package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/junction-mcp/junction/bench/echo"
	"github.com/junction-mcp/junction/bench/load"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// httpHost is a host calling tools over Streamable HTTP on one kept-alive
// connection, with requests and answers written and read by hand, so that
// the benchmark's allocations are nearly all the server's.
type httpHost struct {
	addr    string // the server's, for more connections (see dial)
	conn    net.Conn
	r       *bufio.Reader
	session string // Mcp-Session-Id; empty at 2026-07-28
	modern  bool   // a host of 2026-07-28: no session, headers and _meta
	req     []byte
	body    []byte
	id      int
}

// newHTTPForwarder serves the echo server's view (see echoView) over
// Streamable HTTP as junction serve -http does (the plane's handler in
// its default dual mode, behind httpguard's server), on 127.0.0.1, and
// connects a host of 2025-11-25 (a session) or, with modern, of
// 2026-07-28 (none) to it.
func newHTTPForwarder(tb testing.TB, modern bool) *httpHost {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	view, stop := echoView(tb, ctx, false)
	h := serveHTTP(tb, httpguard.NewServer(dataplane.New(view, nil).HTTPHandler(nil), httpguard.ServerOptions{}), modern)
	tb.Cleanup(func() {
		cancel()
		stop()
	})
	return h
}

// newHTTPDirect connects a host to the echo server's own Streamable HTTP
// endpoint, in process: the floor.
func newHTTPDirect(tb testing.TB, modern bool) *httpHost {
	return serveHTTP(tb, &http.Server{Handler: (&echo.Server{Modern: true}).HTTPHandler()}, modern)
}

func serveHTTP(tb testing.TB, srv *http.Server, modern bool) *httpHost {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	h := &httpHost{addr: ln.Addr().String(), conn: conn, r: bufio.NewReaderSize(conn, 64<<10), modern: modern}
	tb.Cleanup(func() {
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
		<-done
	})
	if modern {
		return h
	}
	if _, err := h.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`, "", ""); err != nil {
		tb.Fatalf("initialize: %v", err)
	}
	if h.session == "" {
		tb.Fatal("initialize: no Mcp-Session-Id")
	}
	if _, err := h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", ""); err != nil {
		tb.Fatalf("initialized: %v", err)
	}
	return h
}

// dial returns a host on a connection of its own, in h's session, whose
// request ids start after first.
func (h *httpHost) dial(tb testing.TB, first int) *httpHost {
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &httpHost{addr: h.addr, conn: conn, r: bufio.NewReaderSize(conn, 64<<10), session: h.session, modern: h.modern, id: first}
}

// post sends one JSON-RPC message and returns the answer's body (the
// last data line, for an event stream; nil for 202 Accepted). method and
// name go in the headers of a host of 2026-07-28.
func (h *httpHost) post(body, method, name string) ([]byte, error) {
	req := append(h.req[:0], "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"...)
	switch {
	case h.modern:
		req = append(req, "Mcp-Protocol-Version: 2026-07-28\r\nMcp-Method: "...)
		req = append(req, method...)
		if name != "" {
			req = append(req, "\r\nMcp-Name: "...)
			req = append(req, name...)
		}
		req = append(req, "\r\n"...)
	case h.session != "":
		req = append(req, "Mcp-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: "...)
		req = append(req, h.session...)
		req = append(req, "\r\n"...)
	}
	req = append(req, "Content-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\n\r\n"...)
	req = append(req, body...)
	h.req = req
	if _, err := h.conn.Write(req); err != nil {
		return nil, err
	}
	return h.answer()
}

// answer reads one response; a body without Content-Length (an event
// stream) is read chunked.
func (h *httpHost) answer() ([]byte, error) {
	status, err := h.r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(status) < 12 {
		return nil, fmt.Errorf("status line %q", status)
	}
	code := string(status[9:12])
	length, chunked := -1, false
	for {
		line, err := h.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, _ := bytes.Cut(line, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, _ = strconv.Atoi(string(v))
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Mcp-Session-Id")):
			h.session = string(v)
		}
	}
	h.body = h.body[:0]
	switch {
	case chunked:
		for {
			line, err := h.r.ReadSlice('\n')
			if err != nil {
				return nil, err
			}
			n, err := strconv.ParseInt(string(bytes.TrimRight(line, "\r\n")), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("chunk size %q", line)
			}
			if n == 0 {
				if _, err := h.r.ReadSlice('\n'); err != nil {
					return nil, err
				}
				break
			}
			start := len(h.body)
			h.body = append(h.body, make([]byte, n)...)
			if _, err := io.ReadFull(h.r, h.body[start:]); err != nil {
				return nil, err
			}
			if _, err := h.r.Discard(2); err != nil {
				return nil, err
			}
		}
		if i := bytes.LastIndex(h.body, []byte("data: ")); i >= 0 {
			h.body = bytes.TrimSpace(h.body[i+len("data: "):])
		}
	case length >= 0:
		if cap(h.body) < length {
			h.body = make([]byte, length)
		}
		h.body = h.body[:length]
		if _, err := io.ReadFull(h.r, h.body); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("a response without Content-Length")
	}
	switch code {
	case "200":
		return h.body, nil
	case "202":
		return nil, nil
	}
	return nil, fmt.Errorf("HTTP %s: %.300s", code, h.body)
}

func (h *httpHost) call(tb testing.TB, tool, args string) []byte {
	res, err := h.tryCall(tool, args)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// tryCall is call for a goroutine that must not stop the benchmark (one
// of RunParallel's): it returns what went wrong.
func (h *httpHost) tryCall(tool, args string) ([]byte, error) {
	h.id++
	var meta string
	if h.modern {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	res, err := h.post(`{"jsonrpc":"2.0","id":`+strconv.Itoa(h.id)+`,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+meta+`}}`, "tools/call", tool)
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", args, err)
	}
	if !bytes.Contains(res, []byte(`"result"`)) || bytes.Contains(res, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("call %s: %.300s", args, res)
	}
	return res, nil
}

var httpForwarders = []struct {
	name string
	new  func(testing.TB) *httpHost
}{
	{"hub", func(tb testing.TB) *httpHost { return newHTTPForwarder(tb, false) }},
	{"hub/host-2026-07-28", func(tb testing.TB) *httpHost { return newHTTPForwarder(tb, true) }},
	{"direct", func(tb testing.TB) *httpHost { return newHTTPDirect(tb, false) }},
	{"direct/host-2026-07-28", func(tb testing.TB) *httpHost { return newHTTPDirect(tb, true) }},
}

func TestForwardHTTP(t *testing.T) {
	for _, tc := range httpForwarders {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.new(t)
			res := h.call(t, "echo", `{"msg":"hello \"hub\""}`)
			if !bytes.Contains(res, []byte(`"text":"hello \"hub\""`)) {
				t.Errorf("echo = %s, want the text back", res)
			}
		})
	}
}

// BenchmarkForwardHTTP measures one tools/call over Streamable HTTP on a
// kept-alive connection, through the hub's HTTP front (host → hub →
// upstream process → back) and against the echo server's own HTTP
// endpoint, sequentially. Allocations are the server's (through the hub:
// without its upstream, another process) and the few of the
// hand-written host.
//
// The c16 cases make 16 calls at a time (each on a connection of its
// own, in one session) and report the process's CPU time per call
// (cpu-µs/op: the server's, the hand-written hosts' little, not the
// upstream's), which varies less with the machine's load than ns/op.
func BenchmarkForwardHTTP(b *testing.B) {
	for _, tc := range httpForwarders {
		b.Run(tc.name, func(b *testing.B) {
			h := tc.new(b)
			b.ReportAllocs()
			for b.Loop() {
				h.call(b, "echo", `{"msg":"hello, hub"}`)
			}
		})
		b.Run(tc.name+"/c16", func(b *testing.B) {
			h := tc.new(b)
			hosts := make(chan *httpHost, 16)
			for i := range cap(hosts) {
				hosts <- h.dial(b, (i+1)<<32) // ids unique in the session
			}
			b.ReportAllocs()
			b.SetParallelism((cap(hosts) + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			cpu := load.SelfCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				h := <-hosts // more goroutines than hosts wait for one
				defer func() { hosts <- h }()
				for pb.Next() {
					if _, err := h.tryCall("echo", `{"msg":"hello, hub"}`); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(load.SelfCPU()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
		})
	}
}
