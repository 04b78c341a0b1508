package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeParksQuietSessions: through junction serve -http, a go-sdk
// host's quiet session is parked (junction_sessions_parked) and its next
// requests, calls forwarded raw and others, are answered under the same
// session as if nothing had happened: each must wake it to be answered.
func TestServeParksQuietSessions(t *testing.T) {
	cfg := echoConfig(t)
	url := startServe(t, "-insecure-no-auth", "-config", cfg, "-session-park", "100ms")
	c := newClient(nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// No standalone GET stream: an open stream keeps a session awake.
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	name := echoTool(t, cs)
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	rawBefore := rawCalls(t, url, "")
	for i := range 3 {
		waitFor(t, "the session to park", 20*time.Second, func() bool { return gauge(t, url, "", "junction_sessions_parked") == 1 })
		msg := fmt.Sprintf("after parking %d", i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"msg": msg}})
		if err != nil || res.IsError || textContent(res) != msg {
			t.Fatalf("call %d after parking: %v %v", i, err, res)
		}
		waitFor(t, "the session to park", 20*time.Second, func() bool { return gauge(t, url, "", "junction_sessions_parked") == 1 })
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list %d after parking: %v", i, err)
		}
	}
	if n := rawCalls(t, url, "") - rawBefore; n != 3 {
		t.Errorf("%d of 3 calls after parking went the raw path", n)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing (DELETE) the session: %v", err)
	}
}

// gauge reads an unlabelled gauge from the /metrics of the hub at url
// (its MCP endpoint), with token if it needs one.
func gauge(t *testing.T, url, token, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindSubmatch(hubMetrics(t, url, token))
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestServeSessionBoundToToken: through junction serve -http with two API
// tokens, a session belongs to the token that initialized it: a request
// for it with the other token is refused with 403 (and does not call
// through it, end it or wake it), live and parked; its own token's
// requests are served.
func TestServeSessionBoundToToken(t *testing.T) {
	const alice, mallory = "e2e-token-alice", "e2e-token-mallory"
	url := startServe(t, "-token", alice, "-token", mallory, "-config", echoConfig(t), "-session-park", "300ms")
	init := httpDo(t, http.MethodPost, url, alice, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"alice","version":"1"}}}`))
	if init.status != http.StatusOK || init.session == "" {
		t.Fatalf("initialize: HTTP %d, session %q", init.status, init.session)
	}
	inSession := []string{"Mcp-Session-Id", init.session, "Mcp-Protocol-Version", "2025-11-25"}
	post := func(token, method, body string) (int, string) {
		t.Helper()
		r := httpDo(t, method, url, token, []byte(body), inSession...)
		return r.status, r.body
	}
	post(alice, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	call := func(token, msg string) (int, string) {
		return post(token, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo__echo","arguments":{"msg":"`+msg+`"}}}`)
	}
	waitFor(t, "the upstream's tool", 20*time.Second, func() bool {
		code, body := call(alice, "ready")
		return code == http.StatusOK && strings.Contains(body, `"text":"ready"`)
	})
	for _, state := range []string{"live", "parked"} {
		if state == "parked" {
			waitFor(t, "the session to park", 20*time.Second, func() bool { return gauge(t, url, alice, "junction_sessions_parked") == 1 })
		}
		if code, body := call(mallory, "stolen"); code != http.StatusForbidden || strings.Contains(body, "stolen") {
			t.Errorf("the other token's tools/call on the %s session: HTTP %d %s, want 403", state, code, body)
		}
		if code, _ := post(mallory, http.MethodDelete, ""); code != http.StatusForbidden {
			t.Errorf("the other token's DELETE of the %s session: HTTP %d, want 403", state, code)
		}
		if state == "parked" && gauge(t, url, alice, "junction_sessions_parked") != 1 {
			t.Errorf("the other token's requests woke the parked session")
		}
		if code, body := call(alice, state); code != http.StatusOK || !strings.Contains(body, `"text":"`+state+`"`) {
			t.Errorf("its own token's call on the %s session: HTTP %d %s", state, code, body)
		}
	}
}

// TestServeSSESessionBoundToToken: the legacy SSE endpoint of junction
// serve -http binds its sessions as /mcp does: a POST to a session with
// another token than the one that opened its stream gets 403.
func TestServeSSESessionBoundToToken(t *testing.T) {
	const alice, mallory = "e2e-token-alice", "e2e-token-mallory"
	base := strings.TrimSuffix(startServe(t, "-token", alice, "-token", mallory), "/mcp")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/sse", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+alice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	endpoint := ""
	for endpoint == "" {
		line, err := events.ReadString('\n')
		if err != nil {
			t.Fatalf("reading /sse's endpoint event: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = data
		}
	}
	for token, want := range map[string]int{mallory: http.StatusForbidden, alice: http.StatusAccepted} {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`
		if r := httpDo(t, http.MethodPost, base+endpoint, token, []byte(body)); r.status != want {
			t.Errorf("POST to the session with token %s: HTTP %d, want %d", token, r.status, want)
		}
	}
}
