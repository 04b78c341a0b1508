package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioHostHTTPUpstream: a stdio host calls a tool of a Streamable
// HTTP upstream through "junction serve". The hub answers the call on its
// own path (the upstream's CallTool behind the raw call, counted in the
// "hub stopped" line, stoppedLine), and everything the upstream does
// during the call reaches the host: its progress under the host's token,
// its log message, and its elicitation, whose answer goes back to the
// upstream and into the result.
func TestStdioHostHTTPUpstream(t *testing.T) {
	t.Parallel()
	up := mcp.NewServer(&mcp.Implementation{Name: "http-up", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2}); err != nil {
				return nil, err
			}
		}
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "http-up", Data: "asking"}); err != nil {
			return nil, err
		}
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}},
		}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("hello %v", res.Content["name"])}}}, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf("servers:\n  up:\n    url: http://%s/mcp\n", ln.Addr()))

	var (
		mu       sync.Mutex
		progress []float64
		logs     []any
	)
	client := newClient(&mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, req.Params.Data)
			mu.Unlock()
		},
	})
	stderr := newOutput()
	cs := connectStdioOpts(t, client, stderr, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "-no-default-packs", "-config", cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "up__ask", 30*time.Second, func() bool { return hasName(toolNames(t, cs), "up__ask") })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__ask", Arguments: map[string]any{}, Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hello ada" {
		t.Fatalf("up__ask = %+v, want the text %q", res, "hello ada")
	}
	mu.Lock()
	if len(progress) != 1 || progress[0] != 1 {
		t.Errorf("progress seen by the host: %v, want [1]", progress)
	}
	if len(logs) != 1 || logs[0] != "asking" {
		t.Errorf("log messages seen by the host: %v, want [asking]", logs)
	}
	mu.Unlock()
	if err := cs.Close(); err != nil {
		t.Logf("closing: %v", err)
	}
	m := stoppedLine.FindStringSubmatch(stderr.String())
	if m == nil || m[1] == "0" {
		t.Errorf("the call did not take the hub's own path (hub stopped line: %v)\n%s", m, stderr.String())
	}
}
