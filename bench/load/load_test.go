package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/bench/echo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// envEcho makes the test binary a stdio server: "1" the echo server of
// 2025-11-25, "modern" the one of 2026-07-28, "sdk" a go-sdk server with
// an echo tool. envRecord, if set, names a file that gets a copy of what
// the server reads.
const (
	envEcho   = "JUNCTION_LOAD_TEST_ECHO"
	envRecord = "JUNCTION_LOAD_TEST_RECORD"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envEcho); mode != "" {
		var in io.Reader = os.Stdin
		if f := os.Getenv(envRecord); f != "" {
			rec, err := os.Create(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			defer rec.Close()
			in = io.TeeReader(os.Stdin, rec)
		}
		var err error
		switch mode {
		case "sdk":
			err = sdkEcho().Run(context.Background(), &mcp.IOTransport{Reader: io.NopCloser(in), Writer: os.Stdout})
		default:
			err = (&echo.Server{Modern: mode == "modern"}).Serve(in, os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func echoCommand() ([]string, []string) {
	return []string{os.Args[0]}, append(os.Environ(), envEcho+"=1")
}

func serverCommand(mode string, env ...string) ([]string, []string) {
	return []string{os.Args[0]}, append(append(os.Environ(), envEcho+"="+mode), env...)
}

func TestRunStdio(t *testing.T) {
	cmd, env := echoCommand()
	for _, driver := range []string{"raw", "sdk"} {
		t.Run(driver, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			res, err := Run(ctx, Config{Command: cmd, Env: env, Calls: 300, Concurrency: 4, Payload: 100, Driver: driver})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Errors != 0 || res.Calls != 300 || res.CallsPerSec <= 0 || res.P99us < res.P50us || res.InitMs <= 0 {
				t.Errorf("Run = %+v, want 300 good calls with sane figures", res)
			}
			if res.ServerCPUus < 0 || res.ServerRSSMiB <= 0 || res.ServerProcs != 1 {
				t.Errorf("server usage = cpu %v rss %v procs %d, want measured", res.ServerCPUus, res.ServerRSSMiB, res.ServerProcs)
			}
			// One process: the root is the whole tree.
			if res.ServerRootCPUus != res.ServerCPUus || res.ServerRootRSSMiB != res.ServerRSSMiB {
				t.Errorf("root usage = cpu %v rss %v, want the tree's %v, %v", res.ServerRootCPUus, res.ServerRootRSSMiB, res.ServerCPUus, res.ServerRSSMiB)
			}
		})
	}
}

func TestRunResultSize(t *testing.T) {
	cmd, env := echoCommand()
	res, err := Run(t.Context(), Config{Command: cmd, Env: env, Calls: 20, ResultSize: 1 << 16, Warmup: -1})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.MBPerSec <= 0 || res.Errors != 0 {
		t.Errorf("Run = %+v", res)
	}
}

func TestRunUnknownTool(t *testing.T) {
	cmd, env := echoCommand()
	_, err := Run(t.Context(), Config{Command: cmd, Env: env, Calls: 5, Tool: "nope"})
	if err == nil || !strings.Contains(err.Error(), `unknown tool \"nope\"`) {
		t.Errorf("Run(tool nope) = %v, want the server's error", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{{}, {Command: []string{"x"}, URL: "http://h"}, {Command: []string{"x"}, Driver: "fast"}} {
		if _, err := Run(t.Context(), c); err == nil {
			t.Errorf("Run(%+v) = nil error", c)
		}
	}
}

// TestRunStdioModern: at 2026-07-28 the driver sends no initialize, and
// every request carries the protocol fields in _meta: the echo server of
// that revision and go-sdk's server take its calls; the echo server of
// 2025-11-25, which knows no server/discover, is refused.
func TestRunStdioModern(t *testing.T) {
	for _, mode := range []string{"modern", "sdk"} {
		t.Run(mode, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "requests")
			cmd, env := serverCommand(mode, envRecord+"="+rec)
			res, err := Run(t.Context(), Config{Command: cmd, Env: env, Calls: 200, Concurrency: 4, ProtocolVersion: "2026-07-28"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Errors != 0 || res.Protocol != "2026-07-28" {
				t.Errorf("Run = %+v", res)
			}
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			checkModernRequests(t, strings.Split(strings.TrimSpace(string(b)), "\n"), 1+200+20+1)
		})
	}
	cmd, env := echoCommand()
	_, err := Run(t.Context(), Config{Command: cmd, Env: env, Calls: 5, ProtocolVersion: "2026-07-28"})
	if err == nil || !strings.Contains(err.Error(), "server/discover") {
		t.Errorf("Run(2026-07-28 against a 2025-11-25 server) = %v, want server/discover's error", err)
	}
}

// checkModernRequests checks requests (JSON-RPC lines) of a 2026-07-28
// client: no initialize, a server/discover first, then n-1 tools/call,
// each with the protocol fields in _meta.
func checkModernRequests(t *testing.T, lines []string, n int) {
	t.Helper()
	if len(lines) != n {
		t.Errorf("%d requests, want %d", len(lines), n)
	}
	for i, line := range lines {
		var req struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatalf("request %d: %v: %s", i, err, line)
		}
		want := "tools/call"
		if i == 0 {
			want = "server/discover"
		}
		if req.Method != want {
			t.Fatalf("request %d is %s, want %s: %s", i, req.Method, want, line)
		}
		m := req.Params.Meta
		if string(m["io.modelcontextprotocol/protocolVersion"]) != `"2026-07-28"` ||
			!strings.HasPrefix(string(m["io.modelcontextprotocol/clientCapabilities"]), "{") ||
			!strings.HasPrefix(string(m["io.modelcontextprotocol/clientInfo"]), `{"name":"mcpload"`) {
			t.Fatalf("request %d: _meta %s, want the protocol version, client capabilities and info", i, line)
		}
	}
}

func TestIdleRSS(t *testing.T) {
	cmd, env := echoCommand()
	for _, called := range []bool{false, true} {
		idle, err := IdleRSS(t.Context(), Config{Command: cmd, Env: env, Calls: 50, Concurrency: 4}, 10*time.Millisecond, called)
		if err != nil {
			t.Fatalf("IdleRSS (called %t): %v", called, err)
		}
		if idle.RootRSSMiB <= 0 || idle.TreeRSSMiB != idle.RootRSSMiB || idle.Procs != 1 || idle.InitMs <= 0 {
			t.Errorf("IdleRSS (called %t) = %+v, want one measured process", called, idle)
		}
	}
	// Called, the server answers the calls first: a tool it lacks fails.
	if _, err := IdleRSS(t.Context(), Config{Command: cmd, Env: env, Calls: 5, Tool: "nope"}, time.Millisecond, true); err == nil {
		t.Error("IdleRSS calling a missing tool: nil error")
	}
	if _, err := IdleRSS(t.Context(), Config{URL: "http://127.0.0.1:1/mcp"}, time.Millisecond, false); err == nil {
		t.Error("IdleRSS of a URL: nil error")
	}
}

func sdkEcho() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "e", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct {
			Msg  string `json:"msg"`
			Size int    `json:"size"`
		}
		json.Unmarshal(req.Params.Arguments, &a)
		if a.Size > 0 {
			a.Msg = strings.Repeat("x", a.Size)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Msg}}}, nil
	})
	return srv
}

// newHTTPEcho serves a go-sdk server with an echo tool over Streamable
// HTTP, with sessions, or without (stateless) for 2026-07-28 clients.
func newHTTPEcho(t *testing.T, jsonResponse bool) string {
	return newSDKHTTP(t, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
}

func newSDKHTTP(t *testing.T, opts *mcp.StreamableHTTPOptions) string {
	srv := sdkEcho()
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestRunHTTP(t *testing.T) {
	for _, tc := range []struct {
		name, driver string
		json         bool
	}{{"raw sse", "raw", false}, {"raw json", "raw", true}, {"sdk", "sdk", false}} {
		t.Run(tc.name, func(t *testing.T) {
			url := newHTTPEcho(t, tc.json)
			res, err := Run(t.Context(), Config{URL: url, Token: "tok", PID: os.Getpid(), Calls: 200, Concurrency: 4, Driver: tc.driver})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Errors != 0 || res.ServerCPUus < 0 {
				t.Errorf("Run = %+v", res)
			}
		})
	}
	t.Run("bad token", func(t *testing.T) {
		url := newHTTPEcho(t, false)
		_, err := Run(t.Context(), Config{URL: url, Token: "wrong", Calls: 1})
		if err == nil || !strings.Contains(err.Error(), "HTTP 401") {
			t.Errorf("Run(bad token) = %v, want HTTP 401", err)
		}
	})
}

// TestRunHTTPModern: at 2026-07-28 over HTTP the driver opens no session
// and names each POST's method and tool in headers; go-sdk's stateless
// handler, which checks them, and the echo server's HTTP floor take its
// calls.
func TestRunHTTPModern(t *testing.T) {
	t.Run("go-sdk", func(t *testing.T) {
		url := newSDKHTTP(t, &mcp.StreamableHTTPOptions{Stateless: true})
		res, err := Run(t.Context(), Config{URL: url, Token: "tok", Calls: 200, Concurrency: 4, ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Errors != 0 {
			t.Errorf("Run = %+v", res)
		}
	})
	t.Run("echo", func(t *testing.T) {
		var (
			mu    sync.Mutex
			lines []string
			bad   []string
		)
		h := (&echo.Server{Modern: true}).HTTPHandler()
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			mu.Lock()
			lines = append(lines, string(b))
			if r.Header.Get("Mcp-Session-Id") != "" || r.Header.Get("Mcp-Protocol-Version") != "2026-07-28" || r.Header.Get("Mcp-Method") == "" {
				bad = append(bad, fmt.Sprint(r.Header))
			}
			mu.Unlock()
			h.ServeHTTP(w, r)
		}))
		defer ts.Close()
		res, err := Run(t.Context(), Config{URL: ts.URL, Calls: 100, Concurrency: 4, Warmup: -1, ProtocolVersion: "2026-07-28", ResultSize: 1000})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if res.Errors != 0 {
			t.Errorf("Run = %+v", res)
		}
		checkModernRequests(t, lines, 1+1+100)
		if len(bad) > 0 {
			t.Errorf("%d POSTs with a session or without the headers of 2026-07-28, first: %s", len(bad), bad[0])
		}
	})
}

// TestRunHTTPEcho: the raw driver against the echo server's HTTP floor,
// which answers wrongly asked requests with an error, at both revisions.
func TestRunHTTPEcho(t *testing.T) {
	ts := httptest.NewServer((&echo.Server{Modern: true}).HTTPHandler())
	defer ts.Close()
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		res, err := Run(t.Context(), Config{URL: ts.URL, PID: os.Getpid(), Calls: 300, Concurrency: 8, Payload: 100, ProtocolVersion: v})
		if err != nil {
			t.Fatalf("Run(%s): %v", v, err)
		}
		if res.Errors != 0 || res.ServerRootCPUus < 0 {
			t.Errorf("Run(%s) = %+v", v, res)
		}
	}
	if _, err := Run(t.Context(), Config{URL: ts.URL, Calls: 5, Tool: "nope"}); err == nil || !strings.Contains(err.Error(), `unknown tool \"nope\"`) {
		t.Errorf("Run(tool nope) = %v, want the server's error", err)
	}
	old := httptest.NewServer((&echo.Server{}).HTTPHandler())
	defer old.Close()
	if _, err := Run(t.Context(), Config{URL: old.URL, Calls: 5, ProtocolVersion: "2026-07-28"}); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("Run(2026-07-28 against a 2025-11-25 HTTP floor) = %v, want HTTP 400", err)
	}
	per, _, err := IdleSessions(t.Context(), ts.URL, "", os.Getpid(), 50, IdleOptions{})
	if err != nil {
		t.Fatalf("IdleSessions: %v", err)
	}
	t.Logf("%.0f bytes per echo session", per.RSS)
	if _, _, err := IdleSessions(t.Context(), ts.URL, "", os.Getpid(), 2, IdleOptions{Streams: true}); err == nil || !strings.Contains(err.Error(), "HTTP 405") {
		t.Errorf("IdleSessions with streams on a server without them: %v, want its 405", err)
	}
}

func TestIdleSessions(t *testing.T) {
	url := newHTTPEcho(t, false)
	per, _, err := IdleSessions(t.Context(), url, "tok", os.Getpid(), 20, IdleOptions{})
	if err != nil {
		t.Fatalf("IdleSessions: %v", err)
	}
	// Memory can shrink between samples (GC), so only the call is checked.
	t.Logf("%.0f bytes per session (%.0f anonymous)", per.RSS, per.Anon)
	var after IdleGrowth
	if per, after, err = IdleSessions(t.Context(), url, "tok", os.Getpid(), 20, IdleOptions{Tool: "echo", Wait: time.Millisecond}); err != nil {
		t.Fatalf("IdleSessions after a call each: %v", err)
	}
	t.Logf("%.0f bytes per session after a call, %.0f a moment later", per.RSS, after.RSS)
	if _, _, err := IdleSessions(t.Context(), url, "tok", os.Getpid(), 2, IdleOptions{Tool: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("IdleSessions calling an unknown tool: %v, want its error", err)
	}
	if _, _, err := IdleSessions(t.Context(), url, "tok", 0, 20, IdleOptions{}); err == nil {
		t.Error("IdleSessions without a pid: nil error")
	}
	if per, _, err = IdleSessions(t.Context(), url, "tok", os.Getpid(), 20, IdleOptions{Streams: true}); err != nil {
		t.Fatalf("IdleSessions with GET streams: %v", err)
	}
	t.Logf("%.0f bytes per session with a GET stream open", per.RSS)
}

func TestSpawnToInitialize(t *testing.T) {
	cmd, env := echoCommand()
	d, err := SpawnToInitialize(t.Context(), cmd, env, 3)
	if err != nil || d <= 0 {
		t.Errorf("SpawnToInitialize = %v, %v", d, err)
	}
	if _, err := SpawnToInitialize(t.Context(), []string{"/nonexistent/echo"}, nil, 1); err == nil || !strings.Contains(err.Error(), "/nonexistent/echo") {
		t.Errorf("SpawnToInitialize(missing program) = %v, want an error naming it", err)
	}
}

func TestParseStat(t *testing.T) {
	got, err := parseStat([]byte("42 (a (weird) name) S 7 42 42 0 -1 4194560 100 0 0 0 15 4 0 0 20 0 1 0 100 1000 50\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(procStat{ppid: 7, ticks: 19}, got, cmp.AllowUnexported(procStat{})); diff != "" {
		t.Errorf("parseStat (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "1 (x) S 1", "1 (x) S a 1 1 0 -1 0 0 0 0 0 x y"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = nil error", bad)
		}
	}
	self := Usage(os.Getpid())
	if self.Procs < 1 || self.RSSBytes <= 0 {
		t.Errorf("Usage(self) = %+v", self)
	}
}

func TestParseRSS(t *testing.T) {
	status := []byte("Name:\tx\nVmRSS:\t  1234 kB\nRssAnon:\t  1000 kB\n")
	if got := parseStatus(status, "VmRSS:"); got != 1234<<10 {
		t.Errorf("VmRSS = %d, want %d", got, 1234<<10)
	}
	if got := parseStatus(status, "RssAnon:"); got != 1000<<10 {
		t.Errorf("RssAnon = %d, want %d", got, 1000<<10)
	}
	if got := parseStatus([]byte("Name:\tx\n"), "VmRSS:"); got != 0 {
		t.Errorf("no VmRSS = %d, want 0", got)
	}
}

func TestResponseID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		id   int64
		want bool
	}{
		{`{"jsonrpc":"2.0","id":17,"result":{}}`, 17, true},
		{`{"id": 3,"result":{"id":9}}`, 3, true},
		{`{"jsonrpc":"2.0","result":{"id":9}}`, 0, false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":9}}`, 0, false},
		{`{"id":"abc","result":{}}`, 0, false},
		{`{"id":null,"error":{}}`, 0, false},
	} {
		id, ok := responseID([]byte(tc.in))
		if id != tc.id || ok != tc.want {
			t.Errorf("responseID(%s) = %d, %v; want %d, %v", tc.in, id, ok, tc.id, tc.want)
		}
	}
}

func TestSSEAnswer(t *testing.T) {
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
		"id: 1\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\r\ndata: \"result\":{}}\r\n\r\n"
	got := string(sseAnswer([]byte(stream)))
	if want := "{\"jsonrpc\":\"2.0\",\"id\":5,\n\"result\":{}}"; got != want {
		t.Errorf("sseAnswer = %q, want %q", got, want)
	}
}

func FuzzResponseID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":17,"result":{}}`))
	f.Add([]byte(`{"id":99999999999999999999999}`))
	f.Add([]byte(`"id":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		responseID(b)
		sseAnswer(b)
		checkResult(b)
	})
}

func TestCheckResult(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}}` + "\n"
	for _, c := range []struct {
		resp string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, true},
		{big, true},
		{` {"id":1,"result":{"content":[],"isError":false}}` + "\n", true},
		{`{"id":1,"result":{"content":[{"type":"text","text":"\"isError\":true"}]}}`, true},
		{`{"id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`, false},
		{`{"id":1,"error":{"code":-32602,"message":"unknown tool"}}`, false},
		{`{"id":1,"error":{"code":1,"message":"\"result\""}}`, false},
		{`{"id":1}`, false},
		{`{"id":1,"result":`, false},
		{`not json`, false},
	} {
		err := checkResult([]byte(c.resp))
		if (err == nil) != c.ok {
			t.Errorf("checkResult(%.80q) = %v, want ok %v", c.resp, err, c.ok)
		}
	}
}

func BenchmarkCheckResult(b *testing.B) {
	resp := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}}`)
	b.SetBytes(int64(len(resp)))
	for b.Loop() {
		if err := checkResult(resp); err != nil {
			b.Fatal(err)
		}
	}
}
