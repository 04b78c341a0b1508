// Package telemetry turns the hub's per-call observation
// ([junction.CallInfo]) into an audit trail and OpenTelemetry traces.
//
//	a := telemetry.NewAudit(os.Stderr, telemetry.AuditOptions{})
//	t, err := telemetry.NewOTLPTracer(ctx, os.Getenv, "1.2.3", nil) // nil, nil when OTEL_* name no endpoint
//	hub := junction.New(&junction.Options{
//		Trace:   t.Start,
//		Observe: func(ci junction.CallInfo) { a.Observe(ci); t.Observe(ci) },
//	})
//
// # Audit
//
// An [Audit] writes one JSON line per tool call: when, for whom (host
// session, view, host), which tool of which source, how long, the
// outcome, and the sizes of the arguments and the result. The arguments
// themselves only when the operator asks for them (they are the host's
// data: file contents, queries, tokens a model pasted). [OpenAudit]
// writes to stderr or to a file that is rotated by size; a line too long
// for that size goes without its arguments, marked arguments_truncated,
// and [AuditOptions.Lines] counts the lines written, truncated and
// dropped.
//
// # Traces
//
// A [Tracer] makes one span per tool call, a child of the W3C trace
// context the host sent in the request's _meta (or of a span the call's
// context already has, for a tool a pack calls), following the
// OpenTelemetry semantic conventions for MCP; the upstream the call is
// forwarded to gets the span as its parent in its own request's _meta
// (see [junction.WithTraceContext]). [NewOTLPTracer] exports over
// OTLP/HTTP, configured by the standard OTEL_* environment variables.
//
//	host ──tools/call {_meta.traceparent}──▶ hub: span "tools/call fs__read" ──{_meta.traceparent: span}──▶ upstream
package telemetry
