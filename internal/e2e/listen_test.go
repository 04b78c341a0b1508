package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listenWait bounds each wait of these tests for a line or a notification.
const listenWait = 15 * time.Second

// TestListChangedAfterResourceUnsubscribe: with the hub's default
// configuration (one upstream session shared by all hosts, spoken to at
// 2026-07-28, so followed with subscriptions/listen streams), a
// 2025-11-25 host that subscribes to a resource and unsubscribes again
// must not leave the hub deaf to the upstream's list_changed: the
// upstream's tool list changes, and the host hears of it. (go-sdk v1.8.0's
// server forgets a session's list_changed subscriptions when any listen
// on it ends; see docs/reports/go-sdk-listen-unsubscribe.md.)
func TestListChangedAfterResourceUnsubscribe(t *testing.T) {
	t.Parallel()
	changed := make(chan struct{}, 16)
	c := newClient(&mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		},
	})
	cs := connectStdioVersion(t, c, "2025-11-25", "-config", hubConfig(t, "never", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 2*listenWait)
	defer cancel()
	// The upstream connects in the background.
	for deadline := time.Now().Add(listenWait); !hasName(toolNames(t, cs), "test_trigger_tool_change"); {
		if time.Now().After(deadline) {
			t.Fatalf("the hub did not list test_trigger_tool_change within %v", listenWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	drain(changed)
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_trigger_tool_change"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(listenWait):
		t.Fatalf("no notifications/tools/list_changed within %v of the upstream's tool list changing, after a resource unsubscribe", listenWait)
	}
}

// drain empties ch.
func drain(ch chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// connectStdioVersion is [connectStdioClient] with the client offering
// protocol version (and falling back to initialize for one before
// 2026-07-28).
func connectStdioVersion(t *testing.T, c *mcp.Client, version string, args ...string) *mcp.ClientSession {
	t.Helper()
	return connectStdioOpts(t, c, newOutput(), &mcp.ClientSessionOptions{ProtocolVersion: version}, args...)
}

// TestServeListenEndKeepsOthers: a 2026-07-28 host on junction serve's
// stdio opens three subscriptions/listen streams, and cancels two of
// them (one for a resource, one for tools/list_changed as well); the one
// left still gets notifications/tools/list_changed, tagged with its id,
// and the cancelled ones get nothing.
func TestServeListenEndKeepsOthers(t *testing.T) {
	t.Parallel()
	h := startRawStdio(t, "-no-default-packs", "-pack", "conformance")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`)
	h.expect(t, "the acknowledgement of listen 1", ackOf("1"))
	h.send(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["test://watched-resource"]},%s}}`)
	h.expect(t, "the acknowledgement of listen 2", ackOf("2"))
	h.send(`{"jsonrpc":"2.0","id":"three","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},%s}}`)
	h.expect(t, "the acknowledgement of listen three", ackOf(`"three"`))
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"three"}}`)
	// An answer follows the cancellations (one connection, read in
	// order): go-sdk has ended the listens by then, if it was given them.
	h.send(`{"jsonrpc":"2.0","id":10,"method":"prompts/list","params":{%s}}`)
	h.expect(t, "the answer to prompts/list", answerTo("10"))
	h.send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{},%s}}`)
	h.expect(t, "notifications/tools/list_changed for listen 1", func(m rawMsg) bool {
		if m.Method == "notifications/tools/list_changed" {
			if tag := id(m); tag != "1" {
				t.Errorf("list_changed tagged %s after listen 1 alone was left", tag)
			}
			return id(m) == "1"
		}
		return false
	})
	h.send(`{"jsonrpc":"2.0","id":12,"method":"prompts/list","params":{%s}}`)
	h.expect(t, "the answer to the second prompts/list", answerTo("12"))
	for _, m := range h.seen {
		if m.Method != "" && m.ID == nil && string(m.Params.Meta[mcp.MetaKeySubscriptionID]) != "1" && m.Method != "notifications/subscriptions/acknowledged" {
			t.Errorf("a notification for a listen that was cancelled: %s", m.line)
		}
		if len(m.ID) > 0 && (string(m.ID) == "2" || string(m.ID) == `"three"`) {
			t.Errorf("an answer to a cancelled listen: %s", m.line)
		}
	}
}

// modernMeta is the _meta of a request at 2026-07-28.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw-host","version":"0"}}`

// rawMsg is a JSON-RPC message as the raw host reads it.
type rawMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
	line string
}

// id returns a notification's subscription id, as JSON.
func id(m rawMsg) string { return string(m.Params.Meta[mcp.MetaKeySubscriptionID]) }

func ackOf(listen string) func(rawMsg) bool {
	return func(m rawMsg) bool {
		return m.Method == "notifications/subscriptions/acknowledged" && id(m) == listen
	}
}

func answerTo(reqID string) func(rawMsg) bool {
	return func(m rawMsg) bool { return m.Method == "" && string(m.ID) == reqID }
}

// rawStdio is a host that writes and reads junction serve's stdio itself.
type rawStdio struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan string
	seen  []rawMsg // everything read so far
}

// startRawStdio runs "junction serve ARGS" with its stdio as the host's.
func startRawStdio(t *testing.T, args ...string) *rawStdio {
	t.Helper()
	stderr := newOutput()
	cmd := exec.Command(junctionBin(t), append([]string{"serve"}, args...)...)
	cmd.Env = childEnv(t.TempDir())
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &rawStdio{t: t, in: in, lines: make(chan string, 256)}
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(stopTimeout):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("junction serve (stdio) stderr:\n%s", stderr.String())
		}
	})
	return h
}

// send writes one line: format with modernMeta for its %s.
func (h *rawStdio) send(format string) {
	h.t.Helper()
	line := format
	if strings.Contains(format, "%s") {
		line = fmt.Sprintf(format, modernMeta)
	}
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatalf("writing %s: %v", line, err)
	}
}

// expect reads lines until one satisfies match, for up to listenWait.
func (h *rawStdio) expect(t *testing.T, what string, match func(rawMsg) bool) rawMsg {
	t.Helper()
	timer := time.NewTimer(listenWait)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				t.Fatalf("junction serve's stdout ended before %s", what)
			}
			var m rawMsg
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("a line that is not JSON-RPC: %s", line)
			}
			m.line = line
			h.seen = append(h.seen, m)
			if match(m) {
				return m
			}
		case <-timer.C:
			t.Fatalf("no %s within %v; read:\n%s", what, listenWait, h.transcript())
		}
	}
}

func (h *rawStdio) transcript() string {
	var b strings.Builder
	for _, m := range h.seen {
		b.WriteString(m.line)
		b.WriteByte('\n')
	}
	return b.String()
}

// TestServeHTTPListenAlone: over junction serve's Streamable HTTP, a
// 2026-07-28 client's subscriptions/listen without a session is a stream
// of its own on the POST's response: acknowledged, then told of a tool
// list change another request of the client causes, tagged with the
// listen's id, until the client goes away.
func TestServeHTTPListenAlone(t *testing.T) {
	t.Parallel()
	url := startServe(t, "-insecure-no-auth", "-no-default-packs", "-pack", "conformance")
	post := func(ctx context.Context, method, name, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(strings.ReplaceAll(body, "%s", modernMeta)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*listenWait)
	defer cancel()
	resp := post(ctx, "subscriptions/listen", "", `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("listen: %d %s %s; want 200 text/event-stream", resp.StatusCode, ct, b)
	}
	events := make(chan rawMsg, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			m := rawMsg{line: data}
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Errorf("an event that is not JSON: %s", data)
				continue
			}
			events <- m
		}
	}()
	next := func(what string) rawMsg {
		t.Helper()
		select {
		case m, ok := <-events:
			if !ok {
				t.Fatalf("the listen's stream ended before %s", what)
			}
			return m
		case <-time.After(listenWait):
			t.Fatalf("no %s within %v", what, listenWait)
		}
		return rawMsg{}
	}
	if m := next("acknowledgement"); !ackOf(`"l1"`)(m) {
		t.Fatalf("first event %s; want the acknowledgement of listen l1", m.line)
	}
	call := post(ctx, "tools/call", "test_trigger_tool_change", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_trigger_tool_change","arguments":{},%s}}`)
	io.Copy(io.Discard, call.Body)
	call.Body.Close()
	if call.StatusCode != http.StatusOK {
		t.Fatalf("tools/call test_trigger_tool_change: HTTP %d", call.StatusCode)
	}
	if m := next("notifications/tools/list_changed"); m.Method != "notifications/tools/list_changed" || id(m) != `"l1"` {
		t.Errorf("event %s; want notifications/tools/list_changed tagged l1", m.line)
	}
}
