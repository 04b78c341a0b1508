package telemetry_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/metrics"
	"github.com/junction-mcp/junction/internal/telemetry"
)

// auditHub is a hub whose calls to src__op are audited by a.
func auditHub(t *testing.T, a *telemetry.Audit) *junction.Hub {
	t.Helper()
	h := junction.New(&junction.Options{Observe: a.Observe})
	t.Cleanup(func() { h.Close() })
	if err := h.Add(t.Context(), "src", &fakeSource{call: answer(okResult, nil)}, nil); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAuditLineOverSizeLimit: a line longer than the file may grow
// (max_size_mb) is written without its arguments, marked so with its
// size, instead of being dropped in silence; the metric counts it.
func TestAuditLineOverSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	lines := metrics.NewRegistry().NewCounterVec("junction_audit_lines_total", "test", "result")
	a, err := telemetry.OpenAudit(telemetry.AuditFile{Output: path, MaxSizeMB: 1}, nil, telemetry.AuditOptions{Arguments: true, Lines: lines})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	h := auditHub(t, a)
	huge := json.RawMessage(`{"blob":"` + strings.Repeat("x", 3<<19) + `"}`) // 1.5 MiB
	for _, args := range []json.RawMessage{huge, json.RawMessage(`{"small":1}`)} {
		if _, err := h.Call(t.Context(), "src__op", args); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(got) != 2 {
		t.Fatalf("%d lines in the audit file, want 2 (the huge call's without its arguments, and the small one's):\n%.300s", len(got), b)
	}
	var big, small telemetry.AuditLine
	if err := json.Unmarshal([]byte(got[0]), &big); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(got[1]), &small); err != nil {
		t.Fatal(err)
	}
	if big.Tool != "src__op" || big.Arguments != nil || !big.ArgumentsTruncated || big.LineBytes <= len(huge) || big.RequestBytes != len(huge) {
		t.Errorf("the huge call's line = %s; want it without arguments, arguments_truncated, line_bytes over %d", got[0], len(huge))
	}
	if small.ArgumentsTruncated || string(small.Arguments) != `{"small":1}` {
		t.Errorf("the small call's line = %s; want it whole", got[1])
	}
	for result, want := range map[string]uint64{telemetry.AuditTruncated: 1, telemetry.AuditWritten: 1, telemetry.AuditDropped: 0} {
		if n := lines.WithLabelValues(result).Value(); n != want {
			t.Errorf("lines %s = %d, want %d", result, n, want)
		}
	}
}

// failWriter fails every write, as a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestAuditWriteFailureCounted: a line that cannot be written is dropped
// (calls go on) and counted.
func TestAuditWriteFailureCounted(t *testing.T) {
	lines := metrics.NewRegistry().NewCounterVec("junction_audit_lines_total", "test", "result")
	a := telemetry.NewAudit(failWriter{}, telemetry.AuditOptions{Lines: lines})
	if _, err := auditHub(t, a).Call(t.Context(), "src__op", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("a call with the audit failing: %v", err)
	}
	if n := lines.WithLabelValues(telemetry.AuditDropped).Value(); n != 1 {
		t.Errorf("lines dropped = %d, want 1", n)
	}
}
