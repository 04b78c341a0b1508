package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoConfig builds the benchmark's echo server (bench/cmd/echoserver, a
// hand-written stdio MCP server) and writes a config file that serves it,
// with args, as the upstream "echo".
func echoConfig(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "echoserver")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/junction-mcp/junction/bench/cmd/echoserver").CombinedOutput()
	if err != nil {
		t.Fatalf("building echoserver: %v\n%s", err, out)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf("servers:\n  echo:\n    command: %q\n    args: [%s]\n", bin, strings.Join(quoted, ", ")))
}

// echoTool waits until the hub lists the echo upstream's tool and returns
// its name.
func echoTool(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	var name string
	waitFor(t, "the echo upstream's tool", 30*time.Second, func() bool {
		for _, n := range toolNames(t, cs) {
			if strings.HasSuffix(n, "echo") {
				name = n
				return true
			}
		}
		return false
	})
	return name
}

// TestServeGoSDKClient: a go-sdk host calls through the hub: lists,
// calls with and without _meta, and tool errors.
func TestServeGoSDKClient(t *testing.T) {
	cfg := echoConfig(t)
	cs := connectStdio(t, "-no-default-packs", "-config", cfg)
	name := echoTool(t, cs)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	for i := range 20 {
		msg := fmt.Sprintf("hello %d", i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"msg": msg}})
		if err != nil {
			t.Fatalf("CallTool(%s) = %v", name, err)
		}
		if got := textContent(res); got != msg || res.IsError {
			t.Errorf("CallTool(%s, %q) = %q (isError %v)", name, msg, got, res.IsError)
		}
	}
	// With _meta (a progress token).
	params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{"msg": "with meta"}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	if err != nil || textContent(res) != "with meta" {
		t.Errorf("CallTool with _meta = %v, %v", res, err)
	}
	// An unknown tool is an error.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil && !res.IsError {
		t.Errorf("CallTool(no_such_tool) = %v, want an error", res)
	}
}

func textContent(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestServeRawClient drives "junction serve" with a raw JSON-RPC client: 200 tools/call sent at once, from 8 writers, must
// get 200 answers, each with its own text, for a host and an upstream of
// each protocol era: a result of 2026-07-28 names the hub (and not the
// upstream) to a host of that revision, and nothing to one before it,
// long results (forwarded while they arrive) included.
func TestServeRawClient(t *testing.T) {
	for _, up := range []string{"2025-11-25", "2026-07-28"} {
		for _, host := range []string{"2025-11-25", "2026-07-28"} {
			t.Run("upstream "+up+"/host "+host, func(t *testing.T) {
				rawClientCalls(t, up, host >= "2026-07-28")
			})
		}
	}
}

// rawClientCalls is TestServeRawClient with an upstream speaking
// protocol up and a host at 2026-07-28 (modern) or 2025-11-25.
func rawClientCalls(t *testing.T, up string, modern bool) {
	cfg := echoConfig(t, "-protocol", up)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, junctionBin(t), "serve", "-no-default-packs", "-config", cfg)
	cmd.Env = childEnv(t.TempDir())
	cmd.WaitDelay = stopTimeout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("junction serve exited with %v", err)
		}
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	}()

	// One reader delivers every line to lines; it ends at EOF.
	lines := make(chan []byte, 256)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				lines <- line
			}
			if err != nil {
				io.Copy(io.Discard, r)
				return
			}
		}
	}()
	var wmu sync.Mutex
	send := func(s string) {
		wmu.Lock()
		defer wmu.Unlock()
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Errorf("write: %v", err)
		}
	}
	type response struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	next := func() response {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatal("junction closed stdout")
			}
			var r response
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("bad line %q: %v", line, err)
			}
			return r
		case <-ctx.Done():
			t.Fatal("timed out waiting for an answer")
		}
		return response{}
	}

	// A host at 2026-07-28 sends no initialize: each request says in its
	// _meta what initialize said.
	meta := ""
	if modern {
		meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	} else {
		send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if r := next(); string(r.ID) != `"init"` || r.Result == nil {
			t.Fatalf("initialize answer: id %s, error %s", r.ID, r.Error)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}

	// The upstream connects in the background: list until its tool shows.
	var tool string
	for i := 0; tool == ""; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"list-%d","method":"tools/list","params":{%s}}`, i, meta))
		r := next()
		for string(r.ID) != fmt.Sprintf(`"list-%d"`, i) {
			r = next() // a list_changed notification
		}
		var res struct{ Tools []struct{ Name string } }
		json.Unmarshal(r.Result, &res)
		for _, tl := range res.Tools {
			if strings.HasSuffix(tl.Name, "echo") {
				tool = tl.Name
			}
		}
		if tool == "" {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				t.Fatal("the echo upstream's tool never showed")
			}
		}
	}

	// Every tenth call asks for a long result, which the hub forwards
	// while it arrives: the other answers queue behind it, and no line is
	// mixed with another.
	const n = 200
	size := func(i int) int {
		if i%10 == 3 {
			return 200_000 + i
		}
		return 0
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{"msg":"m-%d","size":%d}%s}}`, i, tool, i, size(i), strings.TrimSuffix(","+meta, ",")))
			}
		}()
	}
	wg.Wait()
	seen := make(map[int]bool)
	for len(seen) < n {
		r := next()
		var id int
		if err := json.Unmarshal(r.ID, &id); err != nil {
			continue // a notification
		}
		if seen[id] {
			t.Fatalf("second answer for id %d", id)
		}
		seen[id] = true
		var res mcp.CallToolResult
		if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
			t.Errorf("id %d: result %s, error %s", id, r.Result, r.Error)
			continue
		}
		want := fmt.Sprintf("m-%d", id)
		if size(id) > 0 {
			want = strings.Repeat("x", size(id))
		}
		if got := textContent(&res); got != want || res.IsError {
			t.Errorf("id %d: %d bytes of text (isError %v), want %d", id, len(got), res.IsError, len(want))
		}
		var names struct {
			ResultType string `json:"resultType"`
			Meta       struct {
				ServerInfo *struct{ Name string } `json:"io.modelcontextprotocol/serverInfo"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(r.Result, &names); err != nil {
			t.Fatalf("id %d: %v", id, err)
		}
		switch info := names.Meta.ServerInfo; {
		case modern && (names.ResultType != "complete" || info == nil || info.Name != "junction"):
			t.Errorf("id %d: resultType %q, serverInfo %+v; want complete, and junction's", id, names.ResultType, info)
		case !modern && (names.ResultType != "" || info != nil):
			t.Errorf("id %d: resultType %q, serverInfo %+v; want neither before 2026-07-28", id, names.ResultType, info)
		}
	}
}

// TestRawPathRealUpstream: the npm server-everything (TypeScript SDK,
// protocol 2025-11-25) behind junction serve over HTTP, called by
// inspector-cli (a TypeScript host): calls are forwarded raw (with
// sessions, and with -stateless).
func TestRawPathRealUpstream(t *testing.T) {
	node, everything := everythingCmd(t)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf("servers:\n  everything:\n    command: %q\n    args: [%q, stdio]\n", node, everything))
	for _, flags := range [][]string{nil, {"-stateless"}} {
		t.Run("serve"+strings.Join(flags, ""), func(t *testing.T) {
			url := startServe(t, append([]string{"-insecure-no-auth", "-config", cfg}, flags...)...)
			waitForTool(t, url, "everything__echo")
			for i := range 3 {
				var res inspectorResult
				msg := fmt.Sprintf("raw %d", i)
				inspectorJSON(t, &res, url, "--transport", "http", "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message="+msg)
				if len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, msg) || res.IsError {
					t.Errorf("everything__echo(%q) = %+v", msg, res)
				}
			}
			var sum inspectorResult
			inspectorJSON(t, &sum, url, "--transport", "http", "--method", "tools/call", "--tool-name", "everything__get-sum", "--tool-arg", "a=2", "--tool-arg", "b=3")
			if len(sum.Content) != 1 || !strings.Contains(sum.Content[0].Text, "5") {
				t.Errorf("everything__get-sum(2, 3) = %+v", sum)
			}
			if n := rawCalls(t, url, "everything"); n != 4 {
				t.Errorf("%d calls forwarded raw, want all 4", n)
			}
		})
	}
}
