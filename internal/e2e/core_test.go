package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runJunction runs the binary to completion (bounded) and returns its
// output and exit code.
func runJunction(t *testing.T, extraEnv []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runJunctionIn(t, extraEnv, "", args...)
}

// runJunctionIn is [runJunction] with stdin as the process's standard
// input.
func runJunctionIn(t *testing.T, extraEnv []string, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, junctionBin(t), args...)
	cmd.Env = append(childEnv(t.TempDir()), extraEnv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("junction %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestSelectionFlags drives the union rule through the binary: presets,
// -tool, -tools, JUNCTION_TOOLS and -deny add up, and an unknown name
// stops junction before it serves anything.
func TestSelectionFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"default is every tool", nil, nil, []string{"junction_version", "test_simple_text"}},
		{"repeated -tool", nil, []string{"-tool", "test_simple_text", "-tool", "test_image_content"}, []string{"test_image_content", "test_simple_text"}},
		{"-tools csv with blanks", nil, []string{"-tools", " test_simple_text , ,junction_version"}, []string{"junction_version", "test_simple_text"}},
		{"env and flag union", []string{"JUNCTION_TOOLS=junction_version"}, []string{"-tool", "test_error_handling"}, []string{"junction_version", "test_error_handling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"tools", "list", "-output", "json", "-pack", "conformance"}, tc.args...)
			out, errOut, code := runJunction(t, tc.env, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			var res struct{ Tools []struct{ Name string } }
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			got := map[string]bool{}
			for _, tool := range res.Tools {
				got[tool.Name] = true
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("tool %q missing from %v", w, res.Tools)
				}
			}
			if tc.args != nil || tc.env != nil {
				if len(got) != len(tc.want) {
					t.Errorf("got %d tools, want exactly %v", len(got), tc.want)
				}
			}
		})
	}

	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown tool flag", nil, []string{"-tool", "nope"}, `-tool: unknown tool "nope" (known: `},
		{"unknown tool csv", nil, []string{"-tools", "a_tool_that_is_not"}, `-tools: unknown tool "a_tool_that_is_not"`},
		{"unknown tool env", []string{"JUNCTION_TOOLS=ghost"}, nil, `JUNCTION_TOOLS: unknown tool "ghost"`},
		{"unknown preset", nil, []string{"-preset", "everything"}, `-preset: unknown preset "everything"`},
		{"empty selection", nil, []string{"-tools", " , "}, `tool selection is empty`},
		{"unknown pack", nil, []string{"-pack", "nosuch"}, `-pack "nosuch": unknown pack (known: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// serve over stdio: it must exit before reading or writing any
			// protocol.
			out, errOut, code := runJunction(t, tc.env, append([]string{"serve", "-pack", "conformance"}, tc.args...)...)
			if code != 2 {
				t.Fatalf("serve exited %d, want 2 (a bad flag or name, as the README says)", code)
			}
			if out != "" {
				t.Errorf("serve wrote to stdout before failing: %q", out)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr = %q, want it to contain %q", errOut, tc.want)
			}
		})
	}
}

// TestStdioParseErrorKeepsServing writes garbage between good requests on
// junction's stdin and checks every request is still answered.
func TestStdioParseErrorKeepsServing(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, junctionBin(t), "serve", "-log-level", "error")
	cmd.Env = childEnv(t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := newOutput() // read while junction runs: a locked buffer
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	lines := bufio.NewScanner(stdout)
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("stdout closed early; stderr:\n%s", stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("stdout line %q is not JSON: %v", lines.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := next(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize answer = %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{this is not json`)
	m := next()
	errObj, _ := m["error"].(map[string]any)
	if m["id"] != nil || errObj == nil || errObj["code"] != float64(-32700) {
		t.Fatalf("answer to garbage = %v, want a -32700 error with id null", m)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := next(); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("ping after garbage = %v, want {} result", m)
	}
	// A line over the frame limit (16 MiB) is read to its end, dropped,
	// and answered with -32600 and id null, as JSON-RPC has it.
	send(`{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("p", 17<<20) + `"}}`)
	m = next()
	errObj, _ = m["error"].(map[string]any)
	if m["id"] != nil || errObj == nil || errObj["code"] != float64(-32600) {
		t.Fatalf("answer to a 17 MiB line = %v, want a -32600 error with id null", m)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"junction_version","arguments":{}}}`)
	if m := next(); m["id"] != float64(3) || m["result"] == nil {
		t.Fatalf("tools/call after garbage and an oversized line = %v", m)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("junction serve exited with %v after stdin closed; stderr:\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), `"jsonrpc"`) {
		t.Errorf("protocol frames leaked into stderr:\n%s", stderr.String())
	}
}

func post(t *testing.T, url, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v // net/http sends req.Host, not a Host header
			continue
		}
		req.Header.Set(k, v)
	}
	hc := httpClient(token)
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestHTTPFront covers the HTTP front's security and plumbing: X-API-Key,
// Host and Origin checks, /healthz without a token, /metrics with one, a
// body that is not JSON, and the session going on after it.
func TestHTTPFront(t *testing.T) {
	const token = "front-token"
	srv := startServer(t, "-token", token, "-pack", "conformance")
	base := strings.TrimSuffix(srv.URL, "/mcp")
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

	t.Run("X-API-Key", func(t *testing.T) {
		resp, _ := post(t, srv.URL, "", initBody, map[string]string{"X-API-Key": token})
		if resp.StatusCode != http.StatusOK {
			t.Errorf("initialize with X-API-Key: HTTP %d, want 200", resp.StatusCode)
		}
	})
	t.Run("foreign Host refused", func(t *testing.T) {
		resp, _ := post(t, srv.URL, token, initBody, map[string]string{"Host": "evil.example.com"})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Host evil.example.com: HTTP %d, want 403", resp.StatusCode)
		}
	})
	t.Run("foreign Origin refused", func(t *testing.T) {
		resp, _ := post(t, srv.URL, token, initBody, map[string]string{"Origin": "https://evil.example.com"})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin evil: HTTP %d, want 403", resp.StatusCode)
		}
		resp, _ = post(t, srv.URL, token, initBody, map[string]string{"Origin": "http://localhost:5173"})
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Origin localhost: HTTP %d, want 200", resp.StatusCode)
		}
	})
	t.Run("healthz needs no token", func(t *testing.T) {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"status":"ok"`) {
			t.Errorf("/healthz = %d %s", resp.StatusCode, b)
		}
	})
	t.Run("parse error then the session goes on", func(t *testing.T) {
		cs := connectHTTP(t, srv.URL, token)
		resp, body := post(t, srv.URL, token, `{"jsonrpc":"2.0",`, map[string]string{"Mcp-Session-Id": cs.ID()})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"code":-32700`) || !strings.Contains(body, `"id":null`) {
			t.Errorf("garbage body: HTTP %d %s, want 400 with a -32700 error and id null", resp.StatusCode, body)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
			t.Errorf("call after the bad body: %v", err)
		}
	})
	t.Run("metrics count calls", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
		resp, err := httpClient(token).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `junction_tool_calls_total{outcome="ok",source="conformance",tool="test_simple_text"}`) ||
			!strings.Contains(string(b), "junction_tool_call_duration_seconds_bucket") {
			t.Errorf("/metrics lacks the call counters:\n%.2000s", b)
		}
		resp, err = http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/metrics without a token: HTTP %d, want 401", resp.StatusCode)
		}
	})
}

func TestInsecureNoAuthRefusedOffLoopback(t *testing.T) {
	_, errOut, code := runJunction(t, nil, "serve", "-http", "0.0.0.0:0", "-insecure-no-auth")
	if code == 0 || !strings.Contains(errOut, "only allowed on a loopback address") {
		t.Errorf("serve -http 0.0.0.0:0 -insecure-no-auth: exit %d, stderr %q", code, errOut)
	}
}

func TestGeneratedTokenIsPrinted(t *testing.T) {
	srv := startServer(t)
	var token string
	for _, line := range strings.Split(srv.Stderr(), "\n") {
		if f := strings.TrimSpace(line); len(f) == 48 && !strings.Contains(f, " ") {
			token = f
		}
	}
	if token == "" {
		t.Fatalf("no generated token on stderr:\n%s", srv.Stderr())
	}
	callVersion(t, connectHTTP(t, srv.URL, token))
}

// TestHTTPModes checks that one endpoint serves the stateless revision and
// older clients with sessions, and that -stateless and -json-response work.
func TestHTTPModes(t *testing.T) {
	connectVersion := func(t *testing.T, url, version string) *mcp.ClientSession {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
		defer cancel()
		tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient("")}
		cs, err := newClient(nil).Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect %s at %s: %v", url, version, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	t.Run("dual", func(t *testing.T) {
		url := startServe(t, "-insecure-no-auth")
		old := connectVersion(t, url, "2025-11-25")
		if old.ID() == "" {
			t.Error("2025-11-25 client got no session id in dual mode")
		}
		callVersion(t, old)
		modern := connectVersion(t, url, "2026-07-28")
		if got := modern.InitializeResult().ProtocolVersion; got != "2026-07-28" {
			t.Errorf("modern client negotiated %q, want 2026-07-28", got)
		}
		callVersion(t, modern)
	})
	t.Run("stateless", func(t *testing.T) {
		url := startServe(t, "-insecure-no-auth", "-stateless")
		cs := connectVersion(t, url, "2025-11-25")
		if cs.ID() != "" {
			t.Errorf("stateless mode handed out session id %q", cs.ID())
		}
		callVersion(t, cs)
	})
	t.Run("json-response", func(t *testing.T) {
		url := startServe(t, "-insecure-no-auth", "-json-response")
		cs := connectVersion(t, url, "2025-11-25")
		callVersion(t, cs)
		resp, _ := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, nil)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("Content-Type = %q, want application/json", ct)
		}
	})
	t.Run("json-response, progress asked without a session", func(t *testing.T) {
		// A 2026-07-28 request that asks for progress and log messages
		// has no stream for them when answers are JSON only: the call is
		// answered, and they go nowhere (docs/deviations.md; go-sdk's
		// handler failed the call).
		url := startServe(t, "-insecure-no-auth", "-json-response", "-pack", "conformance")
		for _, tool := range []string{"test_tool_with_progress", "test_tool_with_logging"} {
			resp, body := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{},"_meta":{`+
				`"progressToken":"pt","io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
				map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.Contains(body, "executed successfully") {
				t.Errorf("%s: %d %s %s; want its result as JSON", tool, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
	})
	t.Run("legacy sse", func(t *testing.T) {
		url := startServe(t, "-insecure-no-auth")
		ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
		defer cancel()
		sseURL := strings.TrimSuffix(url, "/mcp") + "/sse"
		cs, err := newClient(nil).Connect(ctx, &mcp.SSEClientTransport{Endpoint: sseURL}, nil)
		if err != nil {
			t.Fatalf("connect legacy SSE at %s: %v", sseURL, err)
		}
		defer cs.Close()
		callVersion(t, cs)
		// A legacy session is served as a stdio connection is: its call
		// took the raw path.
		if n := rawCalls(t, url, ""); n != 1 {
			t.Errorf("junction_tool_calls_raw_total = %d after one call over legacy SSE, want 1", n)
		}
	})
	t.Run("legacy sse log level", func(t *testing.T) {
		// As over stdio, the hub answers the session's logging/setLevel
		// and sends its log messages at that level and above.
		url := startServe(t, "-insecure-no-auth", "-pack", "conformance")
		ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
		defer cancel()
		var got atomic.Int64
		cs, err := newClient(&mcp.ClientOptions{LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {
			got.Add(1)
		}}).Connect(ctx, &mcp.SSEClientTransport{Endpoint: strings.TrimSuffix(url, "/mcp") + "/sse"}, nil)
		if err != nil {
			t.Fatalf("connect legacy SSE: %v", err)
		}
		defer cs.Close()
		// At warning the tool's three info messages are held back; at
		// info they come. Three in all, then: none of the first call's.
		for _, level := range []mcp.LoggingLevel{"warning", "info"} {
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
				t.Fatalf("logging/setLevel %s: %v", level, err)
			}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}}); err != nil {
				t.Fatalf("test_tool_with_logging: %v", err)
			}
		}
		waitFor(t, "the three info messages of the call at info", 10*time.Second, func() bool { return got.Load() >= 3 })
		if err := cs.Ping(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if n := got.Load(); n != 3 {
			t.Errorf("%d log messages, want the 3 of the call at info", n)
		}
		if n := rawCalls(t, url, "conformance"); n != 2 {
			t.Errorf("junction_tool_calls_raw_total = %d after two calls over legacy SSE, want 2", n)
		}
	})
	t.Run("idle session expires", func(t *testing.T) {
		url := startServe(t, "-insecure-no-auth", "-session-timeout", "300ms")
		cs := connectVersion(t, url, "2025-11-25")
		id := cs.ID()
		time.Sleep(1500 * time.Millisecond)
		resp, _ := post(t, url, "", `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{"Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"})
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("ping on an idle-expired session: HTTP %d, want 404", resp.StatusCode)
		}
	})
}

// TestSelftestCatchesDrift locks the served tools, then changes what is
// served (or the lock) and checks selftest reports each kind of drift.
func TestSelftestCatchesDrift(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "junction.lock.json")
	pack := []string{"-pack", "conformance"}
	if out, errOut, code := runJunction(t, nil, append([]string{"lock", "-o", lock}, pack...)...); code != 0 {
		t.Fatalf("lock: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runJunction(t, nil, append([]string{"selftest", "-lock", lock}, pack...)...); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("selftest right after lock: exit %d\n%s%s", code, out, errOut)
	}

	raw, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Version int              `json:"version"`
		Tools   []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, mm any) string {
		p := filepath.Join(t.TempDir(), "edited.lock.json")
		b, _ := json.Marshal(mm)
		os.WriteFile(p, b, 0o644)
		return p
	}
	first, second := m.Tools[0]["name"].(string), m.Tools[1]["name"].(string)

	for _, tc := range []struct {
		name  string
		lock  func(t *testing.T) string
		args  []string
		want  string
		wantJ string
	}{
		{"added", func(t *testing.T) string {
			mm := m
			mm.Tools = m.Tools[1:]
			return write(t, mm)
		}, nil, "added:     " + first, `"added":["` + first + `"]`},
		{"removed", func(*testing.T) string { return lock }, []string{"-deny", first}, "removed:   " + first, `"removed":["` + first + `"]`},
		{"changed", func(t *testing.T) string {
			mm := m
			mm.Tools = append([]map[string]any(nil), m.Tools...)
			c := map[string]any{}
			for k, v := range m.Tools[0] {
				c[k] = v
			}
			c["description_sha256"] = "0000"
			mm.Tools[0] = c
			return write(t, mm)
		}, nil, "changed:   " + first + " (description)", `"Fields":["description"]`},
		{"reordered", func(t *testing.T) string {
			mm := m
			mm.Tools = append([]map[string]any(nil), m.Tools...)
			mm.Tools[0], mm.Tools[1] = mm.Tools[1], mm.Tools[0]
			return write(t, mm)
		}, nil, "reordered:", `"reordered":true`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.lock(t)
			args := append(append([]string{"selftest", "-lock", p}, pack...), tc.args...)
			out, errOut, code := runJunction(t, nil, args...)
			if code != 1 {
				t.Errorf("selftest exit %d, want 1\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("selftest output:\n%s\nwant it to contain %q", out, tc.want)
			}
			out, _, _ = runJunction(t, nil, append(args, "-json")...)
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(out)); err != nil {
				t.Fatalf("selftest -json printed invalid JSON: %v\n%s", err, out)
			}
			if !strings.Contains(compact.String(), tc.wantJ) {
				t.Errorf("selftest -json output:\n%s\nwant it to contain %s", out, tc.wantJ)
			}
		})
	}
	_ = second

	t.Run("missing lock is a usage error", func(t *testing.T) {
		_, errOut, code := runJunction(t, nil, "selftest", "-lock", filepath.Join(dir, "none.json"))
		if code != 2 || !strings.Contains(errOut, "run \"junction lock\" first") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

// TestSIGTERMFinishesInFlightCall starts a slow call, sends SIGTERM, and
// checks the call still gets its answer and the process exits 0.
func TestSIGTERMFinishesInFlightCall(t *testing.T) {
	const prefix = "junction: listening on "
	cmd := exec.Command(junctionBin(t), "serve", "-http", "127.0.0.1:0", "-insecure-no-auth", "-pack", "conformance")
	cmd.Env = childEnv(t.TempDir())
	w := newLineWatcher(prefix)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var exitedOK bool
	defer func() {
		if exitedOK {
			return
		}
		cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			t.Errorf("junction (pid %d) still not reaped %v after SIGKILL", cmd.Process.Pid, stopTimeout)
		}
	}()
	var url string
	select {
	case line := <-w.found:
		url = strings.TrimSpace(strings.TrimPrefix(line, prefix))
	case <-time.After(startTimeout):
		t.Fatalf("serve did not start:\n%s", w.String())
	}
	cs := connectHTTP(t, url, "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		// test_tool_with_progress takes a while: it reports progress in
		// steps with pauses between them.
		params := &mcp.CallToolParams{Name: "test_tool_with_progress"}
		params.SetProgressToken("p1")
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("in-flight call across SIGTERM: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatalf("in-flight call did not end within 40s of SIGTERM; stderr:\n%s", w.String())
	}
	select {
	case err := <-exited:
		exitedOK = true
		if err != nil {
			t.Errorf("junction exited with %v after SIGTERM; stderr:\n%s", err, w.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("junction did not exit within 15s of SIGTERM; stderr:\n%s", w.String())
	}
}

// TestClientToleratesJunkFromStdioServer points "junction tools" at a
// server that prints junk on stdout before speaking MCP: the client skips
// it, as the hub does, and passes the server's stderr through.
func TestClientToleratesJunkFromStdioServer(t *testing.T) {
	script := fmt.Sprintf("echo 'not json-rpc'; echo 'server says hi' >&2; exec %q serve -log-level error", junctionBin(t))
	out, errOut, code := runJunction(t, nil, "tools", "call", "junction_version", "--", "sh", "-c", script)
	if code != 0 || !strings.Contains(out, `"version"`) {
		t.Fatalf("tools call through a junk-printing server: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "server says hi") || !strings.Contains(errOut, "skipped non-JSON-RPC line") {
		t.Errorf("stderr = %q, want the server's stderr and a note about the skipped line", errOut)
	}
	_, errOut, code = runJunction(t, nil, "tools", "list", "--", "/nonexistent/server")
	if code != 1 || !strings.Contains(errOut, "connect to /nonexistent/server") || strings.Count(errOut, "no such file") != 1 {
		t.Errorf("missing server: exit %d, stderr %q", code, errOut)
	}
}

// TestTokenFileAndSSEClient serves with tokens from a file and reaches the
// hub with "junction tools" over the legacy SSE transport.
func TestTokenFileAndSSEClient(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# hub tokens\n\nfile-token-1\nfile-token-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, "-token-file", file)
	base := strings.TrimSuffix(srv.URL, "/mcp")
	out, errOut, code := runJunction(t, nil, "tools", "call", "junction_version", "-url", base+"/sse", "-transport", "sse", "-token", "file-token-2")
	if code != 0 || !strings.Contains(out, `"version"`) {
		t.Fatalf("tools call over SSE with a token from the file: exit %d\n%s%s", code, out, errOut)
	}
	if status := postInitialize(t, srv.URL, "not-in-file"); status != http.StatusUnauthorized {
		t.Errorf("a token not in the file: HTTP %d, want 401", status)
	}
	_, errOut, code = runJunction(t, nil, "serve", "-http", "127.0.0.1:0", "-token-file", filepath.Join(t.TempDir(), "missing"))
	if code == 0 || !strings.Contains(errOut, "-token-file") || strings.Contains(errOut, "hub ready") {
		t.Errorf("missing token file: exit %d, stderr %q; want an error about -token-file before the hub is built", code, errOut)
	}
}

// TestStdioSIGTERMFinishesInFlightCall sends SIGTERM to a stdio server
// while a call is running: the answer still comes, then junction exits 0.
func TestStdioSIGTERMFinishesInFlightCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, junctionBin(t), "serve", "-pack", "conformance", "-log-level", "error")
	cmd.Env = childEnv(t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := newOutput() // read while junction runs: a locked buffer
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n")
	if !lines.Scan() {
		t.Fatalf("no initialize answer; stderr:\n%s", stderr.String())
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p"}}}`+"\n")
	// SIGTERM once the call is under way: its first progress notification
	// says so.
	answered, signalled := false, false
	for lines.Scan() {
		var m map[string]any
		if json.Unmarshal(lines.Bytes(), &m) != nil {
			continue
		}
		if !signalled && m["method"] == "notifications/progress" {
			cmd.Process.Signal(syscall.SIGTERM)
			signalled = true
		}
		if m["id"] == float64(2) {
			if m["result"] == nil {
				t.Errorf("call answered with %v, want a result", m)
			}
			if !signalled {
				t.Errorf("the call ended before it sent progress: %v", m)
			}
			answered = true
		}
	}
	if !answered {
		t.Errorf("the call in flight at SIGTERM got no answer; stderr:\n%s", stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("junction exited with %v after SIGTERM; stderr:\n%s", err, stderr.String())
	}
}
