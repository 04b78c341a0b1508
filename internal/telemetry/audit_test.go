package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/telemetry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuffer is a bytes.Buffer safe for the hub's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(b.b.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line %q is not a JSON object: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestAuditOutcomes: each outcome of a call gives one line with what the
// call was, and no arguments unless asked for.
func TestAuditOutcomes(t *testing.T) {
	const args = `{"path":"/etc/secret"}`
	for _, tc := range []struct {
		name string
		call func(context.Context) (string, error)
		want map[string]any // beside tool, source, view, host, request_bytes
	}{
		{"ok", answer(okResult, nil), map[string]any{"outcome": "ok", "result_bytes": float64(len(okResult))}},
		{"tool error", answer(`{"content":[],"isError":true}`, nil), map[string]any{"outcome": "tool_error", "result_bytes": float64(len(`{"content":[],"isError":true}`))}},
		{"protocol error", answer("", &jsonrpc.Error{Code: -32602, Message: "bad"}), map[string]any{"outcome": "protocol_error", "code": float64(-32602), "result_bytes": float64(0)}},
		{"timeout", func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }, map[string]any{"outcome": "timeout"}},
		{"cancelled", answer("", context.Canceled), map[string]any{"outcome": "cancelled"}},
		{"unavailable", answer("", junction.ErrSourceDown), map[string]any{"outcome": "source_unavailable"}},
		{"panic", func(context.Context) (string, error) { panic("boom") }, map[string]any{"outcome": "panic"}},
	} {
		for _, withArgs := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "", true: "/arguments"}[withArgs], func(t *testing.T) {
				var buf syncBuffer
				a := telemetry.NewAudit(&buf, telemetry.AuditOptions{Arguments: withArgs})
				h := junction.New(&junction.Options{Observe: a.Observe})
				t.Cleanup(func() { h.Close() })
				if err := h.Add(t.Context(), "src", &fakeSource{call: tc.call}, &junction.SourceOptions{Timeout: 20 * time.Millisecond}); err != nil {
					t.Fatal(err)
				}
				v, err := h.NewView("reviewer", junction.Selection{})
				if err != nil {
					t.Fatal(err)
				}
				before := time.Now()
				connect(t, v).CallTool(t.Context(), &mcp.CallToolParams{Name: "src__op", Arguments: json.RawMessage(args)})
				lines := buf.lines(t)
				if len(lines) != 1 {
					t.Fatalf("%d audit lines, want 1: %v", len(lines), lines)
				}
				got := lines[0]
				when, err := time.Parse(time.RFC3339Nano, got["time"].(string))
				if err != nil || when.Before(before.Add(-time.Second)) || when.After(time.Now()) || when.Location() != time.UTC {
					t.Errorf("time = %v, want the call's start in UTC (%v)", got["time"], err)
				}
				if d, _ := got["duration_us"].(float64); d < 0 {
					t.Errorf("duration_us = %v, want 0 or more", got["duration_us"])
				}
				want := map[string]any{"tool": "src__op", "source": "src", "view": "reviewer", "host": "test-host", "request_bytes": float64(len(args))}
				for k, v := range tc.want {
					want[k] = v
				}
				if withArgs {
					want["arguments"] = map[string]any{"path": "/etc/secret"}
				}
				if _, ok := want["result_bytes"]; !ok {
					// A tool error the hub made: its size is its text's.
					if n, _ := got["result_bytes"].(float64); n <= 0 {
						t.Errorf("result_bytes = %v, want the hub's tool error's size", got["result_bytes"])
					}
					want["result_bytes"] = got["result_bytes"]
				}
				delete(got, "time")
				delete(got, "duration_us")
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("audit line (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestAuditRotation: a file output is rotated by size, keeping as many
// old files as asked.
func TestAuditRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	a, err := telemetry.OpenAudit(telemetry.AuditFile{Output: path, MaxSizeMB: 1, MaxFiles: 2}, nil, telemetry.AuditOptions{Arguments: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file after OpenAudit: %v, %v; want it made, mode 0600", fi, err)
	}
	big := json.RawMessage(`{"blob":"` + strings.Repeat("x", 100<<10) + `"}`)
	h := junction.New(&junction.Options{Observe: a.Observe})
	defer h.Close()
	if err := h.Add(t.Context(), "src", &fakeSource{call: answer(okResult, nil)}, nil); err != nil {
		t.Fatal(err)
	}
	// 45 lines of about 100 KiB: 4.4 MiB, so the current file and three
	// rotated ones, of which two are kept.
	for range 45 {
		if _, err := h.Call(t.Context(), "src__op", big); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// lumberjack removes old files on a goroutine of its own after a
	// rotation: wait for the count to settle (bounded).
	var rotated []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rotated, _ = filepath.Glob(filepath.Join(dir, "audit-*.jsonl"))
		if len(rotated) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(rotated) != 2 {
		t.Errorf("rotated files %v, want 2 (MaxFiles)", rotated)
	}
	total := 0
	for _, f := range append(rotated, path) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1<<20 {
			t.Errorf("%s: %d bytes, want at most 1 MiB", f, len(b))
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
			var line telemetry.AuditLine
			if err := json.Unmarshal(l, &line); err != nil || line.Tool != "src__op" || len(line.Arguments) != len(big) {
				t.Fatalf("%s: line %.80q: %v; want a whole audit line with the arguments", f, l, err)
			}
			total++
		}
	}
	if total < 20 || total >= 45 {
		t.Errorf("%d lines kept, want the lines of the current file and two rotated ones", total)
	}
}

// TestOpenAuditErrors: an output that cannot be written is an error at
// once, naming the file.
func TestOpenAuditErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "audit.jsonl")
	for _, tc := range []struct {
		f    telemetry.AuditFile
		want string
	}{
		{telemetry.AuditFile{Output: missing}, missing},
		{telemetry.AuditFile{}, "no output"},
		{telemetry.AuditFile{Output: filepath.Join(t.TempDir(), "a"), MaxSizeMB: -1}, "want 0"},
	} {
		a, err := telemetry.OpenAudit(tc.f, nil, telemetry.AuditOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OpenAudit(%+v) = %v, %v; want an error naming %q", tc.f, a, err, tc.want)
		}
	}
	var buf bytes.Buffer
	a, err := telemetry.OpenAudit(telemetry.AuditFile{Output: "stderr"}, &buf, telemetry.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a.Observe(junction.CallInfo{Tool: "t", Source: "s", Outcome: "ok", Start: time.Unix(0, 0)})
	var line telemetry.AuditLine
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line.Time != "1970-01-01T00:00:00Z" {
		t.Errorf("stderr output: %q (%v), want the line", buf.String(), err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close of a stderr audit: %v", err)
	}
}

// TestCheckAuditFile: config check's look at an audit file finds what
// OpenAudit would refuse, without leaving a file behind.
func TestCheckAuditFile(t *testing.T) {
	dir := t.TempDir()
	for _, out := range []string{"stderr", filepath.Join(dir, "new.jsonl")} {
		if err := telemetry.CheckAuditFile(telemetry.AuditFile{Output: out}); err != nil {
			t.Errorf("CheckAuditFile(%s) = %v, want nil", out, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("CheckAuditFile left %v in the directory", entries)
	}
	missing := filepath.Join(dir, "no", "audit.jsonl")
	if err := telemetry.CheckAuditFile(telemetry.AuditFile{Output: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("CheckAuditFile(%s) = %v, want an error naming it", missing, err)
	}
	if os.Geteuid() != 0 { // root writes anyway
		ro := filepath.Join(dir, "ro.jsonl")
		if err := os.WriteFile(ro, nil, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := telemetry.CheckAuditFile(telemetry.AuditFile{Output: ro}); err == nil {
			t.Errorf("CheckAuditFile of a read-only file = nil, want an error")
		}
	}
}
