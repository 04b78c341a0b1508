package daemon

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/metrics"
	"github.com/junction-mcp/junction/internal/telemetry"
)

// observers are what the hub reports each tool call to: base (the
// metrics and the status page) always, and the audit trail and the
// tracer when they are on. Its closers flush them, after the hub and its
// sources have stopped.
type observers struct {
	observe func(junction.CallInfo)
	trace   func(context.Context, *junction.Call, junction.TraceContext) context.Context
	closers []io.Closer
}

// newObservers sets up the audit trail spec asks for, its lines counted
// in auditLines, and the tracer the OTEL_* variables ask for (see
// telemetry.NewOTLPTracer).
func newObservers(ctx context.Context, spec Spec, getenv func(string) string, base func(junction.CallInfo), auditLines *metrics.CounterVec) (*observers, error) {
	o := &observers{observe: base}
	fns := []func(junction.CallInfo){base}
	if spec.Audit.Output != "" {
		stderr := spec.AuditStderr
		if stderr == nil {
			stderr = os.Stderr
		}
		a, err := telemetry.OpenAudit(telemetry.AuditFile{Output: spec.Audit.Output, MaxSizeMB: spec.Audit.MaxSizeMB, MaxFiles: spec.Audit.MaxFiles},
			stderr, telemetry.AuditOptions{Arguments: spec.Audit.Arguments, Lines: auditLines})
		if err != nil {
			return nil, err
		}
		o.closers = append(o.closers, a)
		fns = append(fns, a.Observe)
	}
	logger := spec.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t, err := telemetry.NewOTLPTracer(ctx, getenv, buildinfo.Version(), func(err error) { logger.Warn("traces", "error", err) })
	if err != nil {
		o.close()
		return nil, err
	}
	if t != nil {
		o.closers = append(o.closers, t)
		o.trace = t.Start
		fns = append(fns, t.Observe)
	}
	if len(fns) > 1 {
		o.observe = func(ci junction.CallInfo) {
			for _, f := range fns {
				f(ci)
			}
		}
	}
	return o, nil
}

func (o *observers) close() {
	for _, c := range o.closers {
		c.Close()
	}
}
