//go:build linux

package upstream

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingConfig returns a Config running the npm package
// @modelcontextprotocol/server-everything over stdio, or skips the test
// when the npm tools are not installed (scripts/setup installs them).
func everythingConfig(t *testing.T) Config {
	t.Helper()
	node, dir := os.Getenv("JUNCTION_NODE"), os.Getenv("JUNCTION_NPM_DIR")
	if node == "" || dir == "" {
		if os.Getenv("JUNCTION_REQUIRE_TOOLS") == "1" {
			t.Fatal("JUNCTION_NODE and JUNCTION_NPM_DIR must be set (run scripts/setup)")
		}
		t.Skip("JUNCTION_NODE or JUNCTION_NPM_DIR unset: run scripts/setup to install Node and the npm test servers")
	}
	entry := filepath.Join(dir, "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("server-everything not installed: %v", err)
	}
	return Config{Command: node, Args: []string{entry, "stdio"}, StopTimeout: time.Second}
}

// TestServerEverything runs the reference MCP server from npm as an
// upstream behind a hub and drives it from a go-sdk host client.
func TestServerEverything(t *testing.T) {
	t.Parallel()
	cfg := everythingConfig(t)
	r, _ := newRegistry(t, nil)
	up := addReady(t, r, "everything", cfg)
	pid := up.Snapshot().PID
	if pid == 0 {
		t.Fatal("Snapshot().PID = 0 for a connected stdio server")
	}

	ctx := ctxTimeout(t, 90*time.Second)
	var mu sync.Mutex
	var progress []float64
	client := mcp.NewClient(&mcp.Implementation{Name: "host"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		},
	})
	cs := hostThroughHub(t, ctx, "everything", up, client, "")

	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	for _, want := range []string{"everything__echo", "everything__get-sum", "everything__trigger-long-running-operation", "everything__get-tiny-image"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %q", names, want)
		}
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hi"}})
	if err != nil || resultText(t, res) != "Echo: hi" {
		t.Errorf("echo = %v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-tiny-image"})
	if err != nil || !slices.ContainsFunc(res.Content, func(c mcp.Content) bool { _, ok := c.(*mcp.ImageContent); return ok }) {
		t.Errorf("get-tiny-image = %v, %v; want image content", res, err)
	}

	// Progress, end to end.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "everything__trigger-long-running-operation",
		Arguments: map[string]any{"duration": 0.3, "steps": 3},
		Meta:      mcp.Meta{"progressToken": "p1"},
	})
	if err != nil || !strings.Contains(resultText(t, res), "completed") {
		t.Fatalf("long-running = %v, %v", res, err)
	}
	// The hub sends the progress before the result, but go-sdk's client
	// hands the result over as soon as it is read and queues
	// notifications for their handler: the last one may come just after.
	waitFor(t, "progress 1, 2, 3", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(progress, []float64{1, 2, 3})
	})
	mu.Lock()
	progress = nil
	mu.Unlock()

	// Cancellation: the host gives up after the first progress; the call
	// ends at once and the upstream stays usable.
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{
			Name:      "everything__trigger-long-running-operation",
			Arguments: map[string]any{"duration": 30, "steps": 30},
			Meta:      mcp.Meta{"progressToken": "p2"},
		})
		done <- err
	}()
	waitFor(t, "first progress", func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) > 0 })
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("cancelled call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return")
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || !strings.Contains(resultText(t, res), "5") {
		t.Errorf("get-sum after a cancel = %v, %v", res, err)
	}

	// Resources and prompts come through too.
	var resources []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, r.URI)
	}
	if len(resources) == 0 {
		t.Error("no resources listed through the hub")
	} else if rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: resources[0]}); err != nil || len(rr.Contents) == 0 {
		t.Errorf("ReadResource(%s) = %v, %v", resources[0], rr, err)
	}
	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if len(prompts) == 0 {
		t.Error("no prompts listed through the hub")
	}

	if err := r.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if pidAlive(pid) {
		t.Errorf("server-everything (pid %d) still running after Close", pid)
	}
}
