package daemon

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestServeStdio serves the core pack (no raw sources here, so
// everything goes through go-sdk) to a go-sdk client over pipes, and
// returns when the host closes its end or ctx ends.
func TestServeStdio(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	d, err := Build(t.Context(), Spec{Packs: []string{"core"}, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	for _, end := range []string{"eof", "ctx"} {
		t.Run(end, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			hostR, hubW := io.Pipe()
			hubR, hostW := io.Pipe()
			serveCtx, stop := context.WithCancel(ctx)
			defer stop()
			done := make(chan error, 1)
			go func() {
				done <- d.ServeStdio(serveCtx, hubR, hubW)
				hubW.Close()
			}()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).
				Connect(ctx, &mcp.IOTransport{Reader: hostR, Writer: hostW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "junction_version"})
			if err != nil || res.IsError {
				t.Fatalf("CallTool(junction_version) = %v, %v", res, err)
			}
			if end == "eof" {
				cs.Close()
			} else {
				stop()
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("ServeStdio = %v, want nil", err)
				}
			case <-ctx.Done():
				t.Fatal("ServeStdio did not return")
			}
			cs.Close()
			hostR.Close()
		})
	}
}
