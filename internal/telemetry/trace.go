package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span attributes, from the OpenTelemetry semantic conventions for MCP
// and GenAI (development status: the names may still change), and
// junction's own.
const (
	attrMethod          = attribute.Key("mcp.method.name")
	attrSessionID       = attribute.Key("mcp.session.id")
	attrProtocolVersion = attribute.Key("mcp.protocol.version")
	attrToolName        = attribute.Key("gen_ai.tool.name")
	attrOperation       = attribute.Key("gen_ai.operation.name")
	attrErrorType       = attribute.Key("error.type")
	attrRPCStatusCode   = attribute.Key("rpc.response.status_code")
	attrSource          = attribute.Key("junction.source")
	attrView            = attribute.Key("junction.view")
	attrRequestBytes    = attribute.Key("junction.request.bytes")
	attrResultBytes     = attribute.Key("junction.result.bytes")
)

// A Tracer makes one span per tool call: [Tracer.Start] is the hub's
// [junction.Options.Trace] and [Tracer.Observe] ends the span from
// [junction.Options.Observe]. A nil *Tracer traces nothing.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// NewTracer returns a Tracer that makes its spans with tp.
func NewTracer(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer("github.com/junction-mcp/junction")}
}

type spanKey struct{}

// Start starts the span of call c as a child of parent, the W3C trace
// context of the host's request, or, without one, of the span ctx
// already has (a tool a pack calls inside another call). The context it
// returns carries the span, and names it ([junction.WithTraceContext]) for
// the upstream the call goes to.
func (t *Tracer) Start(ctx context.Context, c *junction.Call, parent junction.TraceContext) context.Context {
	if t == nil {
		return ctx
	}
	if parent.Parent != "" {
		carrier := propagation.MapCarrier{"traceparent": parent.Parent}
		if parent.State != "" {
			carrier["tracestate"] = parent.State
		}
		ctx = t.prop.Extract(ctx, carrier) // an invalid traceparent leaves ctx as it was
	}
	attrs := []attribute.KeyValue{
		attrMethod.String("tools/call"),
		attrOperation.String("execute_tool"),
		attrToolName.String(c.Name()),
		attrSource.String(c.SourceName()),
	}
	if ss := c.HostSession(); ss != nil {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, attrSessionID.String(id))
		}
		if p := ss.InitializeParams(); p != nil && p.ProtocolVersion != "" {
			attrs = append(attrs, attrProtocolVersion.String(p.ProtocolVersion))
		}
	}
	ctx, span := t.tracer.Start(ctx, "tools/call "+c.Name(), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	ctx = context.WithValue(ctx, spanKey{}, span)
	carrier := propagation.MapCarrier{}
	t.prop.Inject(ctx, carrier)
	return junction.WithTraceContext(ctx, junction.TraceContext{Parent: carrier["traceparent"], State: carrier["tracestate"]})
}

// Observe ends the span [Tracer.Start] began for the call ci reports,
// with its outcome as the status; a call Start did not see is left
// alone.
func (t *Tracer) Observe(ci junction.CallInfo) {
	if t == nil || ci.Context == nil {
		return
	}
	span, ok := ci.Context.Value(spanKey{}).(trace.Span)
	if !ok {
		return
	}
	if ci.View != "" {
		span.SetAttributes(attrView.String(ci.View))
	}
	span.SetAttributes(attrRequestBytes.Int(ci.RequestSize()), attrResultBytes.Int(ci.ResultSize()))
	if ci.Outcome != "ok" {
		outcome := ci.Outcome
		if ci.Panicked {
			outcome = "panic"
		}
		span.SetAttributes(attrErrorType.String(outcome))
		if ci.Outcome == "protocol_error" {
			span.SetAttributes(attrRPCStatusCode.String(strconv.FormatInt(ci.Code, 10)))
		}
		span.SetStatus(codes.Error, outcome)
	}
	span.End(trace.WithTimestamp(ci.Start.Add(ci.Duration)))
}

// TracingEnabled reports whether the standard OpenTelemetry variables
// getenv reads ask for traces over OTLP: an endpoint is named
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT),
// OTEL_TRACES_EXPORTER is unset or "otlp", and OTEL_SDK_DISABLED is not
// "true". An exporter other than otlp, or a protocol other than
// http/protobuf, is an error that says what to set.
func TracingEnabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch e := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); e {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: junction exports traces over OTLP only (set it to otlp, or none)", e)
	}
	if getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return false, nil
	}
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" // the specific variable wins
	p := strings.TrimSpace(getenv(name))
	if p == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = strings.TrimSpace(getenv(name))
	}
	if p != "" && p != "http/protobuf" {
		return false, fmt.Errorf("%s=%q: junction exports OTLP over HTTP with protobuf only (set it to http/protobuf, and the endpoint to the collector's HTTP port, usually 4318)", name, p)
	}
	return true, nil
}

// OTLPTracer is a [Tracer] that exports its spans over OTLP/HTTP. Close
// it to send the spans not yet sent.
type OTLPTracer struct {
	*Tracer
	tp *sdktrace.TracerProvider
}

// NewOTLPTracer returns a tracer exporting over OTLP/HTTP with protobuf,
// as the standard OTEL_* variables getenv reads say (see otlpEnv for the
// exporter's; the SDK reads the batch processor's, OTEL_BSP_*, itself,
// and OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service),
// or nil, nil when they ask for no traces (see [TracingEnabled]). The
// service is "junction" at version unless OTEL_SERVICE_NAME says
// otherwise. Spans are sent in batches from a goroutine of the SDK's; a
// collector that is down costs dropped spans, reported to onError, not
// calls.
func NewOTLPTracer(ctx context.Context, getenv func(string) string, version string, onError func(error)) (*OTLPTracer, error) {
	on, err := TracingEnabled(getenv)
	if err != nil || !on {
		return nil, err
	}
	client, err := otlpEnv(getenv)
	if err != nil {
		return nil, err
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if onError != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(onError))
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "junction"), attribute.String("service.version", version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("traces: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &OTLPTracer{Tracer: NewTracer(tp), tp: tp}, nil
}

// Close sends the spans not yet sent, waiting up to five seconds for the
// collector, and stops the exporter. A nil *OTLPTracer is fine.
func (t *OTLPTracer) Close() error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.tp.Shutdown(ctx)
}
