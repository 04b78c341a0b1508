package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeParksQuietSessions: through junction serve -http, a go-sdk
// host's quiet session is parked (junction_sessions_parked) and its next
// requests, on the raw path and on go-sdk's, are answered under the same
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
		waitFor(t, "the session to park", 20*time.Second, func() bool { return gauge(t, url, "junction_sessions_parked") == 1 })
		msg := fmt.Sprintf("after parking %d", i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"msg": msg}})
		if err != nil || res.IsError || textContent(res) != msg {
			t.Fatalf("call %d after parking: %v %v", i, err, res)
		}
		waitFor(t, "the session to park", 20*time.Second, func() bool { return gauge(t, url, "junction_sessions_parked") == 1 })
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
// (its MCP endpoint).
func gauge(t *testing.T, url, name string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindSubmatch(hubMetrics(t, url))
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
