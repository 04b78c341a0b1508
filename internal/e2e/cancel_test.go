package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/canceltest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCancelledCallKeepsUpstreamSession: a host's cancelled call through
// "junction serve -http" to a Streamable HTTP upstream does not silence
// that upstream's session. A request the upstream made to the host during
// the call is cancelled with it (go-sdk v1.8.0's client would never learn
// of that cancellation on its own, docs/reports/go-sdk-cancel.md), and
// later calls still bring the host the upstream's progress, log messages,
// sampling and elicitation requests, and resource updates, also when the
// host's next call reaches the hub before its notifications/cancelled
// (which the host holds back until then: DelayCancel). One upstream
// session (a go-sdk server in this process) serves every mode in turn,
// each from a new host session.
func TestCancelledCallKeepsUpstreamSession(t *testing.T) {
	t.Parallel()
	up := canceltest.StartUpstream(t)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf("servers:\n  up:\n    url: %s\n", up.URL))
	url := startServe(t, "-insecure-no-auth", "-config", cfg)
	for _, mode := range canceltest.Modes {
		t.Run(mode, func(t *testing.T) {
			rec, client := canceltest.NewClient(up)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			hc := httpClient("")
			defer hc.CloseIdleConnections()
			hc.Transport = rec.DelayCancel(hc.Transport)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			defer rec.ReleaseHeld() // runs first: Close waits for handlers
			waitFor(t, "up__chatty", 30*time.Second, func() bool { return hasName(toolNames(t, cs), "up__chatty") })
			canceltest.Subscribe(t, cs)
			rec.Run(t, cs, "up__", mode, canceltest.MustCancel)
		})
	}
}
