package upstream

import (
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/canceltest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A cancelled call must not silence the session it was made on. These
// tests cancel a call to a go-sdk server over Streamable HTTP in each way
// the server can be busy when the cancellation comes (canceltest.Modes),
// then make calls that use every kind of server-to-client traffic.

// TestCancelledCallGoSDK is the plain case: a go-sdk client straight to a
// go-sdk server. Later calls keep their traffic, but go-sdk v1.8.0's
// client never learns that the server gave up the sampling or elicitation
// request it made during the cancelled call (docs/reports/go-sdk-cancel.md):
// the client's handler goes on, and ClientSession.Close would wait for it
// forever. This test fails once go-sdk delivers that cancellation;
// junction does not depend on it (TestCancelledCallThroughHub).
func TestCancelledCallGoSDK(t *testing.T) {
	t.Parallel()
	for _, mode := range canceltest.Modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			up := canceltest.StartUpstream(t)
			rec, client := canceltest.NewClient(up)
			cs, err := client.Connect(ctxTimeout(t, 30*time.Second), &mcp.StreamableClientTransport{Endpoint: up.URL}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			t.Cleanup(rec.ReleaseHeld) // runs first: Close waits for handlers
			canceltest.Subscribe(t, cs)
			rec.Run(t, cs, "", mode, canceltest.NeverCancelled)
		})
	}
}

// TestCancelledCallThroughHub cancels a host's call through a hub to an
// HTTP upstream.Server: the host's handler of a request the upstream made
// during the call is cancelled with it, and the host still gets all of
// the upstream's traffic for later calls.
func TestCancelledCallThroughHub(t *testing.T) {
	t.Parallel()
	for _, mode := range canceltest.Modes {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			up := canceltest.StartUpstream(t)
			r, _ := newRegistry(t, nil)
			ctx := ctxTimeout(t, 60*time.Second)
			rec, client := canceltest.NewClient(up)
			cs := hostThroughHub(t, ctx, "up", addReady(t, r, "up", Config{URL: up.URL}), client, "2025-11-25")
			t.Cleanup(rec.ReleaseHeld) // runs first: Close waits for handlers
			canceltest.Subscribe(t, cs)
			rec.Run(t, cs, "up__", mode, canceltest.MustCancel)
		})
	}
}
