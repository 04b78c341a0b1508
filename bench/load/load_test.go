package load

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/bench/echo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

const envEcho = "JUNCTION_LOAD_TEST_ECHO"

func TestMain(m *testing.M) {
	if os.Getenv(envEcho) == "1" {
		if err := echo.Serve(os.Stdin, os.Stdout); err != nil {
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

// newHTTPEcho serves a go-sdk server with an echo tool over Streamable HTTP.
func newHTTPEcho(t *testing.T, jsonResponse bool) string {
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
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
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

func TestIdleSessions(t *testing.T) {
	url := newHTTPEcho(t, false)
	per, err := IdleSessions(t.Context(), url, "tok", os.Getpid(), 20)
	if err != nil {
		t.Fatalf("IdleSessions: %v", err)
	}
	// Memory can shrink between samples (GC), so only the call is checked.
	t.Logf("%.0f bytes per session", per)
	if _, err := IdleSessions(t.Context(), url, "tok", 0, 20); err == nil {
		t.Error("IdleSessions without a pid: nil error")
	}
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
	if got := parseRSS([]byte("Name:\tx\nVmRSS:\t  1234 kB\n")); got != 1234<<10 {
		t.Errorf("parseRSS = %d, want %d", got, 1234<<10)
	}
	if got := parseRSS([]byte("Name:\tx\n")); got != 0 {
		t.Errorf("parseRSS(no VmRSS) = %d, want 0", got)
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
