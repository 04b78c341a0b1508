package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPCallLogsBeforeItsResult: the log messages a Streamable HTTP
// upstream sends on a call's response stream reach the host before the
// call's result, and the hub counts them as that call's (by the progress
// token it gave the call), not as messages of no call, which every call's
// result would wait for.
func TestHTTPCallLogsBeforeItsResult(t *testing.T) {
	t.Parallel()
	const n = 30
	srv := mcp.NewServer(&mcp.Implementation{Name: "logger", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "logs", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Run int }
		if err := jsonUnmarshal(req.Params.Arguments, &args); err != nil {
			return nil, err
		}
		for i := range n {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprintf("run %d message %d", args.Run, i)}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)

	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "up", Config{URL: ts.URL})
	ctx := ctxTimeout(t, 60*time.Second)
	// What the host reads, in the order it reads it: go-sdk's client
	// hands a result over as soon as it reads it and queues
	// notifications, so its handlers cannot tell the order.
	var wire syncBuffer
	cs := hostThroughHubOver(t, ctx, "up", up, mcp.NewClient(&mcp.Implementation{Name: "host"}, nil), "2025-11-25",
		func(tr mcp.Transport) mcp.Transport { return &mcp.LoggingTransport{Transport: tr, Writer: &wire} })
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for run := range 3 {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__logs", Arguments: map[string]any{"run": run}}); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}
	// Each run's messages, then its result ("done").
	var seen []string
	for _, line := range strings.Split(wire.String(), "\n") {
		if !strings.HasPrefix(line, "read: ") {
			continue
		}
		switch {
		case strings.Contains(line, `"notifications/message"`):
			seen = append(seen, "log")
		case strings.Contains(line, `"text":"done"`):
			seen = append(seen, "result")
		}
	}
	var want []string
	for range 3 {
		want = append(want, slices.Repeat([]string{"log"}, n)...)
		want = append(want, "result")
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the host read %q; want each call's %d log messages before its result", seen, n)
	}
	if read, free := up.logsRead.Load(), up.logsFree.Load(); read != 3*n || free != 0 {
		t.Errorf("log messages read %d, the last one of no call number %d; want %d and 0 (all of them the calls' own)", read, free, 3*n)
	}
}
