package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver on 127.0.0.1: it decodes
// each export (protobuf) and keeps its spans.
type otlpReceiver struct {
	URL   string
	mu    sync.Mutex
	spans []*tracepb.Span
	bad   []string // what it could not take
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var export collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &export)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			r.bad = append(r.bad, req.Method+" "+req.URL.Path+" "+req.Header.Get("Content-Type")+": "+otlpErrString(err))
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		for _, rs := range export.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func otlpErrString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// telemetryRun is what one "junction serve" run left: its audit lines
// (without time and duration), its spans, the _meta the upstream got
// for the traced call, and its stderr.
type telemetryRun struct {
	audit    []map[string]any
	spans    []*tracepb.Span
	upMeta   map[string]any
	stderr   string
	rawCalls int
}

const (
	e2eTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	e2eSpanID  = "00f067aa0ba902b7"
)

// runTelemetry runs "junction serve" over stdio with the echo upstream,
// an audit file and traces to recv, and makes three calls: echo (with a
// traceparent), fail (a tool error) and rpcerr (a protocol error).
func runTelemetry(t *testing.T, recv *otlpReceiver) telemetryRun {
	t.Helper()
	dir := t.TempDir()
	auditPath := filepath.Join(dir, "audit.jsonl")
	cfg := echoUpstreamConfig(t, "echo", "audit:\n  output: "+strconv.Quote(auditPath)+"\n")
	cmd := exec.Command(junctionBin(t), "serve", "-no-default-packs", "-config", cfg, "-audit-arguments")
	cmd.Env = append(childEnv(dir),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_SERVICE_NAME=junction-e2e")
	stderr := newOutput()
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil)
	if err != nil {
		t.Fatalf("connecting to junction serve: %v\nstderr:\n%s", err, stderr.String())
	}
	defer func() {
		if t.Failed() {
			t.Logf("junction serve stderr:\n%s", stderr.String())
		}
	}()
	waitFor(t, "the echo upstream's tools", connectTimeout, func() bool {
		return hasName(toolNames(t, cs), "echo__echo")
	})

	var run telemetryRun
	params := &mcp.CallToolParams{Name: "echo__echo", Arguments: json.RawMessage(`{"msg":"traced"}`),
		Meta: mcp.Meta{"traceparent": "00-" + e2eTraceID + "-" + e2eSpanID + "-01", "tracestate": "e2e=1"}}
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("echo__echo: %v, %v", res, err)
	}
	var echoed struct {
		Meta map[string]any `json:"meta"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &echoed); err != nil {
		t.Fatalf("echo__echo's structured content %s: %v", b, err)
	}
	run.upMeta = echoed.Meta
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo__fail", Arguments: json.RawMessage(`{}`)}); err != nil || !res.IsError {
		t.Fatalf("echo__fail = %v, %v; want a tool error", res, err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo__rpcerr", Arguments: json.RawMessage(`{"x":1}`)}); err == nil {
		t.Fatal("echo__rpcerr: no error, want a JSON-RPC error")
	}
	// Closing the session ends the process: it flushes its spans and
	// logs how many calls it forwarded raw.
	if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Logf("closing: %v", err)
	}
	run.stderr = stderr.String()
	m := stoppedLine.FindStringSubmatch(run.stderr)
	if m == nil {
		t.Fatalf("junction did not log %q as it stopped:\n%s", stoppedLine, run.stderr)
	}
	run.rawCalls, _ = strconv.Atoi(m[1])

	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		if _, ok := line["time"].(string); !ok {
			t.Errorf("audit line %q has no time", l)
		}
		if _, ok := line["duration_us"].(float64); !ok {
			t.Errorf("audit line %q has no duration_us", l)
		}
		delete(line, "time")
		delete(line, "duration_us")
		run.audit = append(run.audit, line)
	}
	recv.mu.Lock()
	run.spans = append([]*tracepb.Span(nil), recv.spans...)
	if len(recv.bad) > 0 {
		t.Errorf("the OTLP receiver refused exports: %v", recv.bad)
	}
	recv.mu.Unlock()
	return run
}

// TestTelemetry runs the built binary with an audit file and traces to
// an OTLP receiver: calls are forwarded raw, each is one audit line and
// one span, and the traced one continues the host's trace and passes the
// hub's span on to the upstream in its _meta.
func TestTelemetry(t *testing.T) {
	t.Parallel()
	run := runTelemetry(t, newOTLPReceiver(t))
	if run.rawCalls == 0 {
		t.Errorf("no call was forwarded raw")
	}
	if len(run.spans) != 3 {
		t.Fatalf("%d spans exported, want 3 (one per call)", len(run.spans))
	}
	var traced *tracepb.Span
	for _, s := range run.spans {
		if s.Name == "tools/call echo__echo" {
			traced = s
		}
		if s.Kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("span %q kind %v, want server", s.Name, s.Kind)
		}
	}
	if traced == nil {
		t.Fatalf("no span \"tools/call echo__echo\" among %v", run.spans)
	}
	if got := hex.EncodeToString(traced.TraceId); got != e2eTraceID {
		t.Errorf("span trace id %s, want the host's %s", got, e2eTraceID)
	}
	if got := hex.EncodeToString(traced.ParentSpanId); got != e2eSpanID {
		t.Errorf("span parent %s, want the host's span %s", got, e2eSpanID)
	}
	want := "00-" + e2eTraceID + "-" + hex.EncodeToString(traced.SpanId) + "-01"
	if got := run.upMeta["traceparent"]; got != want {
		t.Errorf("the upstream got traceparent %v, want %s (the hub's span)", got, want)
	}
	if got := run.upMeta["tracestate"]; got != "e2e=1" {
		t.Errorf("the upstream got tracestate %v, want the host's e2e=1", got)
	}

	audit := run.audit // less time and duration
	wantAudit := []map[string]any{
		{"tool": "echo__echo", "source": "echo", "host": "junction-e2e", "outcome": "ok", "request_bytes": float64(len(`{"msg":"traced"}`)), "arguments": map[string]any{"msg": "traced"}},
		{"tool": "echo__fail", "source": "echo", "host": "junction-e2e", "outcome": "tool_error", "request_bytes": float64(2), "arguments": map[string]any{},
			"result_bytes": float64(len(`{"content":[{"type":"text","text":"it failed"}],"isError":true}`))},
		{"tool": "echo__rpcerr", "source": "echo", "host": "junction-e2e", "outcome": "protocol_error", "code": float64(-32602), "request_bytes": float64(7), "arguments": map[string]any{"x": float64(1)}, "result_bytes": float64(0)},
	}
	// The echo result's size depends on the span id in the _meta it
	// echoes only by value, not by length; check it is there, then compare.
	if len(audit) == 0 {
		t.Fatal("no audit lines")
	}
	if n, _ := audit[0]["result_bytes"].(float64); n < 100 {
		t.Errorf("echo__echo result_bytes = %v, want the size of its result", audit[0]["result_bytes"])
	}
	wantAudit[0]["result_bytes"] = audit[0]["result_bytes"]
	if diff := cmp.Diff(wantAudit, audit); diff != "" {
		t.Errorf("audit lines (-want +got):\n%s", diff)
	}
}

// TestAuditHTTP: over Streamable HTTP the audit lines name the host's
// session (where it has one) and the host, and the calls are forwarded
// raw.
func TestAuditHTTP(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stateful", "dual"} {
		t.Run(mode, func(t *testing.T) { auditHTTP(t, mode) })
	}
}

// auditHTTP is TestAuditHTTP in one HTTP mode: stateful (the
// host has a session) or dual, where the e2e host, at 2026-07-28, makes
// stateless requests that carry its client info in their _meta.
func auditHTTP(t *testing.T, mode string) {
	t.Parallel()
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := echoUpstreamConfig(t, "echo", "")
	p := startServer(t, "-insecure-no-auth", "-no-default-packs", "-config", cfg, "-audit", auditPath, "-http-mode", mode)
	cs := connectHTTP(t, p.URL, "")
	waitFor(t, "the echo upstream's tools", connectTimeout, func() bool { return hasName(toolNames(t, cs), "echo__echo") })
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo__echo", Arguments: json.RawMessage(`{"msg":"over http"}`)}); err != nil || res.IsError {
		t.Fatalf("echo__echo: %v, %v", res, err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo__fail", Arguments: json.RawMessage(`{}`)}); err != nil || !res.IsError {
		t.Fatalf("echo__fail = %v, %v; want a tool error", res, err)
	}
	// The line is written before the answer: the file has both now.
	data, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		switch {
		case mode == "stateful" && (line["session"] != cs.ID() || cs.ID() == ""):
			t.Errorf("audit line session %v, want the host's Mcp-Session-Id %q", line["session"], cs.ID())
		case mode == "dual" && line["session"] != nil:
			t.Errorf("audit line session %v for a stateless request, want none", line["session"])
		}
		if line["host"] != "junction-e2e" {
			t.Errorf("audit line host %v, want the host's client name junction-e2e", line["host"])
		}
		if _, ok := line["arguments"]; ok {
			t.Errorf("audit line %s has the arguments without -audit-arguments", l)
		}
		calls = append(calls, fmt.Sprintf("%v %v %v", line["tool"], line["source"], line["outcome"]))
	}
	if want := []string{"echo__echo echo ok", "echo__fail echo tool_error"}; !slices.Equal(calls, want) {
		t.Errorf("audit lines (tool, source, outcome): %q, want %q", calls, want)
	}
	if raw := rawCalls(t, p.URL, ""); raw == 0 {
		t.Errorf("junction_tool_calls_raw_total = 0: no call was forwarded raw")
	}
}
