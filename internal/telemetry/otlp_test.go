package telemetry

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

func TestOTLPEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT=\"127.0.0.1:4318\": want the collector's http:// or https:// URL"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, "OTEL_EXPORTER_OTLP_HEADERS: \"novalue\" is not key=value"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"}, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT=\"10s\": want a number of milliseconds"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "want gzip or none"},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://x", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/no/such/ca.pem"}, "OTEL_EXPORTER_OTLP_CERTIFICATE: open /no/such/ca.pem"},
	} {
		_, err := otlpEnv(func(k string) string { return tc.env[k] })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("otlpEnv(%v) = %v, want an error containing %q", tc.env, err, tc.want)
		}
	}
}

// TestOTLPUpload: spans go as one protobuf ExportTraceServiceRequest to
// ENDPOINT/v1/traces, with the configured headers, gzipped if asked; a
// collector's error status is an error naming it.
func TestOTLPUpload(t *testing.T) {
	var got struct {
		path, auth, encoding string
		req                  collectortrace.ExportTraceServiceRequest
	}
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail {
			http.Error(w, "quota exceeded", http.StatusTooManyRequests)
			return
		}
		got.path, got.auth, got.encoding = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Encoding")
		var body io.Reader = r.Body
		if got.encoding == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Errorf("gzip body: %v", err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		if err := proto.Unmarshal(b, &got.req); err != nil {
			t.Errorf("body: %v", err)
		}
	}))
	defer srv.Close()
	c, err := otlpEnv(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20s3cret",
			"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(t.Context())
	spans := []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a", TraceId: make([]byte, 16), SpanId: make([]byte, 8)}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "b"}}}}},
	}
	if err := c.UploadTraces(t.Context(), spans); err != nil {
		t.Fatal(err)
	}
	if got.path != "/v1/traces" || got.auth != "Bearer s3cret" || got.encoding != "gzip" {
		t.Errorf("request to %q with Authorization %q, Content-Encoding %q; want /v1/traces, the header, gzip", got.path, got.auth, got.encoding)
	}
	if len(got.req.ResourceSpans) != 2 || got.req.ResourceSpans[1].ScopeSpans[0].Spans[0].Name != "b" {
		t.Errorf("received %v, want both resource spans", &got.req)
	}
	fail = true
	if err := c.UploadTraces(t.Context(), spans); err == nil || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Errorf("UploadTraces to a collector answering 429 = %v, want an error with the status and its text", err)
	}
}
