//go:build unix

package toolbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pidFromSource calls the example's pid tool directly on the source.
func pidFromSource(t *testing.T, ctx context.Context, src *Source) int {
	t.Helper()
	res, err := src.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pid", Arguments: json.RawMessage(`{}`)}})
	if err != nil || res.IsError {
		t.Fatalf("pid = %+v, %v", res, err)
	}
	var v struct{ PID int }
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &v); err != nil || v.PID == 0 {
		t.Fatalf("pid result %s: %v", b, err)
	}
	return v.PID
}

// TestHealthCheckRestartsHungPlugin freezes the plugin (SIGSTOP): it still
// exists but answers nothing, so only the health check can notice. The
// supervisor must kill it (SIGTERM cannot stop a stopped process, so this
// also exercises the SIGKILL after StopTimeout) and start a new one.
func TestHealthCheckRestartsHungPlugin(t *testing.T) {
	logs := &logBuffer{}
	opts := testOptions("hung", logs)
	opts.HealthInterval = 100 * time.Millisecond
	opts.HealthFailures = 2
	opts.StopTimeout = 300 * time.Millisecond
	src, err := NewPlugin(Command{Path: goPluginPath}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	pid := pidFromSource(t, ctx, src)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the health check to give up", func() bool {
		return strings.Contains(logs.String(), "health checks in a row")
	})
	waitFor(t, 15*time.Second, "a new plugin process", func() bool {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		defer ccancel()
		res, err := src.CallTool(cctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "pid", Arguments: json.RawMessage(`{}`)}})
		if err != nil || res.IsError {
			return false
		}
		b, _ := json.Marshal(res.StructuredContent)
		return !strings.Contains(string(b), strconv.Itoa(pid))
	})
	if !strings.Contains(logs.String(), "did not stop after SIGTERM") {
		t.Errorf("the frozen plugin was not killed with SIGKILL:\n%s", logs.String())
	}
}

// TestProcessGroupReaped starts the plugin through a shell that leaves a
// helper process behind; stopping the source must kill the helper too.
func TestProcessGroupReaped(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "helper.pid")
	script := filepath.Join(dir, "wrapper.sh")
	body := "#!/bin/sh\nsleep 300 &\necho $! > " + pidFile + "\nexec " + goPluginPath + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := NewPlugin(Command{Path: script}, testOptions("wrapped", &logBuffer{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Identity(t.Context()); err != nil {
		src.Close()
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		src.Close()
		t.Fatal(err)
	}
	helper, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		src.Close()
		t.Fatal(err)
	}
	if !reaper.Alive(helper) {
		src.Close()
		t.Fatalf("helper %d not running before Close", helper)
	}
	src.Close()
	waitFor(t, 5*time.Second, "the helper to die", func() bool { return !reaper.Alive(helper) })
}
