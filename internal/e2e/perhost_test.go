package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPerHostSessions: five hosts call one upstream at once through the
// hub, and each upstream request for input reaches the host whose call
// caused it. The upstream is a junction serving the conformance pack at
// protocol 2025-11-25, so it asks with plain sampling/createMessage and
// roots/list requests that name no call; with sessions: per_host each
// host has its own connection to it. Three hosts speak 2025-11-25 (asked
// on their sessions), two 2026-07-28 (asked through input-required
// results, the hub bridging). Every host's sampling handler waits until
// all five have been asked before answering, so the five calls are in
// flight together when the upstream asks: on a shared connection the hub
// could not tell them apart and would refuse.
func TestPerHostSessions(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf(`servers:
  fixtures:
    command: %q
    args: [serve, -no-default-packs, -pack, conformance]
    prefix: never
    protocol_version: "2025-11-25"
    sessions: per_host
`, junctionBin(t)))
	url := startServe(t, "-insecure-no-auth", "-config", cfg)
	waitForTool(t, url, "test_sampling")

	const hosts = 5
	var asked sync.WaitGroup
	asked.Add(hosts)
	allAsked := make(chan struct{})
	go func() { asked.Wait(); close(allAsked) }()

	type host struct {
		name    string
		version string
		cs      *mcp.ClientSession
	}
	var all []*host
	for i := range hosts {
		h := &host{name: fmt.Sprintf("host-%d", i), version: "2025-11-25"}
		if i >= 3 {
			h.version = "2026-07-28"
		}
		var once sync.Once
		c := newClient(&mcp.ClientOptions{
			CreateMessageHandler: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				once.Do(asked.Done)
				select {
				case <-allAsked:
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(30 * time.Second):
					return nil, fmt.Errorf("%s: not every host was asked within 30 s", h.name)
				}
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: h.name}}, nil
			},
		})
		c.AddRoots(&mcp.Root{URI: "file:///" + h.name, Name: h.name})
		hc := httpClient("")
		ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: h.version})
		cancel()
		if err != nil {
			t.Fatalf("%s: connect: %v", h.name, err)
		}
		t.Cleanup(func() { cs.Close(); hc.CloseIdleConnections() })
		h.cs = cs
		all = append(all, h)
	}

	call := func(h *host, tool string, args map[string]any) string {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return "error: " + err.Error()
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if res.IsError {
			return "tool error: " + b.String()
		}
		return b.String()
	}

	var wg sync.WaitGroup
	got := make([]string, hosts)
	for i, h := range all {
		wg.Go(func() { got[i] = call(h, "test_sampling", map[string]any{"prompt": "who are you?"}) })
	}
	wg.Wait()
	for i, h := range all {
		if want := "LLM response: " + h.name; got[i] != want {
			t.Errorf("%s (%s): test_sampling answered %q, want %q", h.name, h.version, got[i], want)
		}
	}

	// Roots, asked by the upstream with roots/list, come from the host
	// that called.
	for i, h := range all {
		wg.Go(func() { got[i] = call(h, "test_input_required_result_list_roots", nil) })
	}
	wg.Wait()
	for i, h := range all {
		if want := "Client exposed 1 root(s): file:///" + h.name; got[i] != want {
			t.Errorf("%s (%s): test_input_required_result_list_roots answered %q, want %q", h.name, h.version, got[i], want)
		}
	}
}
