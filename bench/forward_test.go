package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/bench/echo"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// envEcho makes the test binary act as the echo server, so the upstream
// is a real process without a separate build.
const envEcho = "JUNCTION_BENCH_ECHO_SERVER"

// envEchoModern makes that echo server speak 2026-07-28 as well.
const envEchoModern = "JUNCTION_BENCH_ECHO_MODERN"

func TestMain(m *testing.M) {
	if os.Getenv(envEcho) == "1" {
		s := &echo.Server{Modern: os.Getenv(envEchoModern) == "1"}
		if err := s.Serve(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// pipeHost is a host speaking raw JSON-RPC lines to a server over pipes.
type pipeHost struct {
	w   *io.PipeWriter
	r   *bufio.Reader
	buf []byte
	id  int
	// meta, if not empty, is the _meta member each call carries: a host
	// at 2026-07-28, which does not initialize.
	meta string
}

// modernMeta is the _meta of a request of a host at 2026-07-28.
const modernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}`

// newForwarder builds a hub whose one source is the echo server as an
// upstream process, and connects a pipeHost to it through
// dataplane.Plane.ServeStdio, as junction serve builds it: tools/call
// goes to package upstream's Server.CallToolRaw.
func newForwarder(tb testing.TB) *pipeHost {
	return newForwarderAt(tb, false, false)
}

// newForwarderAt is newForwarder with a host (modernHost) or an upstream
// (modernUp) at 2026-07-28.
func newForwarderAt(tb testing.TB, modernHost, modernUp bool) *pipeHost {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	view, stop := echoView(tb, ctx, modernUp)
	run := func(ctx context.Context, in io.Reader, out io.Writer) error {
		return dataplane.New(view, nil).ServeStdio(ctx, in, out, nil)
	}
	if modernHost {
		return serveModern(tb, ctx, cancel, run, stop)
	}
	return serve(tb, ctx, cancel, run, stop)
}

// echoView builds a hub whose one source is the echo server as an
// upstream process (tool "echo"), speaking 2026-07-28 if modern, and
// returns its view and what stops them.
func echoView(tb testing.TB, ctx context.Context, modern bool) (*junction.View, func()) {
	tb.Helper()
	hub := junction.New(nil)
	env := map[string]string{envEcho: "1"}
	if modern {
		env[envEchoModern] = "1"
	}
	up, err := upstream.New("echo", upstream.Config{Command: os.Args[0], Env: env}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := hub.Add(ctx, "echo", up, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		tb.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := up.WaitReady(wctx); err != nil {
		tb.Fatalf("upstream: %v", err)
	}
	if err := hub.Refresh(wctx); err != nil {
		tb.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		tb.Fatal(err)
	}
	return view, func() {
		hub.Close()
		up.Close()
	}
}

func hubHost2026(tb testing.TB) *pipeHost { return newForwarderAt(tb, true, false) }
func hubUp2026(tb testing.TB) *pipeHost   { return newForwarderAt(tb, false, true) }
func hubBoth2026(tb testing.TB) *pipeHost { return newForwarderAt(tb, true, true) }

// newPackHost builds a hub whose one source is a pack with the echo
// server's tool, in process, and connects a pipeHost to it through
// dataplane.Plane.ServeStdio: the pack's handler behind the raw call.
func newPackHost(tb testing.TB) *pipeHost {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hub := junction.New(nil)
	p := junction.NewPack("echo")
	type echoIn struct {
		Msg  string `json:"msg"`
		Size int    `json:"size,omitempty"`
	}
	junction.AddTool(p, &mcp.Tool{Name: "echo", Description: "Echoes msg, or size bytes of x."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			text := in.Msg
			if in.Size > 0 {
				text = strings.Repeat("x", in.Size)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	if err := hub.Add(ctx, "echo", p, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		tb.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		tb.Fatal(err)
	}
	return serve(tb, ctx, cancel, func(ctx context.Context, in io.Reader, out io.Writer) error {
		return dataplane.New(view, nil).ServeStdio(ctx, in, out, nil)
	}, func() { hub.Close() })
}

// newDirect connects a pipeHost straight to an in-process echo server:
// the floor of the in-process benchmark.
func newDirect(tb testing.TB) *pipeHost {
	ctx, cancel := context.WithCancel(context.Background())
	return serve(tb, ctx, cancel, func(_ context.Context, in io.Reader, out io.Writer) error {
		return echo.Serve(in, out)
	}, func() {})
}

func serve(tb testing.TB, ctx context.Context, cancel context.CancelFunc, run func(context.Context, io.Reader, io.Writer) error, stop func()) *pipeHost {
	h := start(tb, ctx, cancel, run, stop)
	h.roundTrip(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	if _, err := io.WriteString(h.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		tb.Fatal(err)
	}
	return h
}

// serveModern is serve for a host at 2026-07-28: no initialize, and each
// call carries that revision's _meta.
func serveModern(tb testing.TB, ctx context.Context, cancel context.CancelFunc, run func(context.Context, io.Reader, io.Writer) error, stop func()) *pipeHost {
	h := start(tb, ctx, cancel, run, stop)
	h.meta = modernMeta
	return h
}

// start runs run between the pipes of a new pipeHost until the test ends.
func start(tb testing.TB, ctx context.Context, cancel context.CancelFunc, run func(context.Context, io.Reader, io.Writer) error, stop func()) *pipeHost {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, inR, outW)
		outW.Close()
	}()
	h := &pipeHost{w: inW, r: bufio.NewReaderSize(outR, 1<<20)}
	tb.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Error("server did not stop")
		}
		outR.Close()
		stop()
	})
	return h
}

// roundTrip writes one request line and returns the answer line.
func (h *pipeHost) roundTrip(tb testing.TB, req string) []byte {
	if _, err := io.WriteString(h.w, req+"\n"); err != nil {
		tb.Fatal(err)
	}
	h.buf = h.buf[:0]
	for {
		chunk, err := h.r.ReadSlice('\n')
		h.buf = append(h.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			tb.Fatalf("reading answer: %v", err)
		}
		// Skip notifications (there should be none for echo).
		if bytes.Contains(h.buf, []byte(`"id":`)) {
			return h.buf
		}
		h.buf = h.buf[:0]
	}
}

func (h *pipeHost) call(tb testing.TB, args string) []byte {
	h.id++
	res := h.roundTrip(tb, `{"jsonrpc":"2.0","id":`+strconv.Itoa(h.id)+`,"method":"tools/call","params":{"name":"echo","arguments":`+args+h.meta+`}}`)
	if !bytes.Contains(res, []byte(`"result"`)) || bytes.Contains(res, []byte(`"isError":true`)) {
		tb.Fatalf("call %s: %.300s", args, res)
	}
	return res
}

func TestForward(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(testing.TB) *pipeHost
	}{{"hub", newForwarder}, {"direct", newDirect}, {"pack", newPackHost},
		{"hub-host2026", hubHost2026}, {"hub-up2026", hubUp2026}, {"hub-both2026", hubBoth2026}} {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.new(t)
			res := h.call(t, `{"msg":"hello \"hub\""}`)
			if !bytes.Contains(res, []byte(`"text":"hello \"hub\""`)) {
				t.Errorf("echo = %s, want the text back", res)
			}
			res = h.call(t, `{"msg":"","size":100000}`)
			if !bytes.Contains(res, []byte(strings.Repeat("x", 100000))) {
				t.Errorf("result of size 100000 not forwarded whole (%d bytes)", len(res))
			}
		})
	}
}

// BenchmarkForward measures one tools/call through the hub (host pipe →
// hub → upstream process → back), sequentially. Allocations are the hub
// process's own: the upstream is another process. direct is the floor:
// the echo server in process, without the hub. The pack cases call a
// pack in the hub's process instead of an upstream. The -2026 cases put
// a host (host2026), the upstream (up2026) or both at 2026-07-28.
func BenchmarkForward(b *testing.B) {
	for _, tc := range []struct {
		name string
		new  func(testing.TB) *pipeHost
	}{{"hub", newForwarder}, {"direct", newDirect}, {"pack", newPackHost},
		{"hub-host2026", hubHost2026}, {"hub-up2026", hubUp2026}, {"hub-both2026", hubBoth2026}} {
		b.Run(tc.name+"/small", func(b *testing.B) {
			h := tc.new(b)
			b.ReportAllocs()
			for b.Loop() {
				h.call(b, `{"msg":"hello, hub"}`)
			}
		})
		b.Run(tc.name+"/result-1MiB", func(b *testing.B) {
			h := tc.new(b)
			b.ReportAllocs()
			b.SetBytes(1 << 20)
			for b.Loop() {
				h.call(b, `{"msg":"","size":1048576}`)
			}
		})
	}
}
