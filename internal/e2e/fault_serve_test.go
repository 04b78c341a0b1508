package e2e

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/files/filestest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeSlowClients: junction serve -http bounds what a slow client can
// hold (-read-header-timeout, -progress-timeout), while a call whose
// response stream idles longer than those bounds (an elicitation the
// person takes a while to answer) still completes.
func TestServeSlowClients(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond
	s := startReloadServer(t, "-insecure-no-auth", "-no-default-packs", "-pack", "conformance",
		"-progress-timeout", window.String(), "-read-header-timeout", window.String())
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	addr := u.Host

	t.Run("trickled bodies", func(t *testing.T) {
		const conns = 20
		stop := make(chan struct{})
		defer close(stop)
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var slowest time.Duration
		for range conns {
			c := filestest.DialBounded(t, addr)
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n", addr)
			go filestest.Trickle(c, 20*time.Millisecond, stop)
			wg.Go(func() {
				filestest.CutOff(t, c)
				mu.Lock()
				slowest = max(slowest, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		t.Logf("%d trickled bodies cut off, the last %v in (progress timeout %v)", conns, slowest.Round(time.Millisecond), window)
	})

	t.Run("unfinished header", func(t *testing.T) {
		c := filestest.DialBounded(t, addr)
		start := time.Now()
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n", addr)
		filestest.CutOff(t, c)
		t.Logf("closed %v after a header that never ended (read-header timeout %v)", time.Since(start).Round(time.Millisecond), window)
	})

	t.Run("idle stream completes", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		const think = 4 * window // the person takes a while
		client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
			ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				select {
				case <-time.After(think):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ann", "email": "ann@example.com"}}, nil
			},
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who are you?"}})
		if err != nil || res.IsError {
			t.Fatalf("a call whose stream idled %v (progress timeout %v): %v, %+v", think, window, err, res)
		}
		t.Logf("a call whose stream idled %v completed in %v", think, time.Since(start).Round(time.Millisecond))
	})
}
