package telemetry

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpClient sends spans to an OTLP/HTTP collector as protobuf: the
// otlptrace.Client that go.opentelemetry.io/otel/exporters/otlp/otlptrace
// uploads through (it turns the SDK's spans into OTLP messages; this
// only posts them). It stands in for otlptracehttp, whose configuration
// package links gRPC into every binary that uses it: about 3.5 MB and
// 1,400 allocations of package init before main, in every process,
// traced or not (docs/observability.md).
type otlpClient struct {
	url     string
	headers http.Header
	timeout time.Duration
	gzip    bool
	client  *http.Client
}

// otlpEnv reads the client's settings from the standard variables, the
// traces-specific one first: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the
// URL as it is) or OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces added),
// _HEADERS, _TIMEOUT (milliseconds, default 10000), _COMPRESSION (gzip
// or none) and _CERTIFICATE (a PEM file of the collector's CA).
func otlpEnv(getenv func(string) string) (*otlpClient, error) {
	get := func(suffix string) (string, string) {
		if v := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_" + suffix)); v != "" {
			return "OTEL_EXPORTER_OTLP_TRACES_" + suffix, v
		}
		return "OTEL_EXPORTER_OTLP_" + suffix, strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + suffix))
	}
	c := &otlpClient{headers: http.Header{}, timeout: 10 * time.Second}
	name, endpoint := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if endpoint == "" {
		name, endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		endpoint = strings.TrimSuffix(endpoint, "/") + "/v1/traces"
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want the collector's http:// or https:// URL, such as http://127.0.0.1:4318", name, getenv(name))
	}
	c.url = u.String()
	if name, h := get("HEADERS"); h != "" {
		for _, kv := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			v, verr := url.QueryUnescape(strings.TrimSpace(v))
			if !ok || k == "" || verr != nil {
				return nil, fmt.Errorf("%s: %q is not key=value (values URL-encoded, pairs separated by commas)", name, kv)
			}
			c.headers.Add(k, v)
		}
	}
	if name, t := get("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%s=%q: want a number of milliseconds above 0", name, t)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch name, v := get("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("%s=%q: want gzip or none", name, v)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if name, file := get("CERTIFICATE"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", name, file)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c.client = &http.Client{Transport: transport}
	return c, nil
}

// Start implements otlptrace.Client.
func (c *otlpClient) Start(context.Context) error { return nil }

// Stop implements otlptrace.Client.
func (c *otlpClient) Stop(context.Context) error {
	c.client.CloseIdleConnections()
	return nil
}

// UploadTraces implements otlptrace.Client: one POST of an
// ExportTraceServiceRequest.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := exportRequest(spans)
	if err != nil {
		return err
	}
	if c.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, vs := range c.headers {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("traces: sending to %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("traces: %s answered %s: %q", c.url, resp.Status, msg)
	}
	return nil
}

// exportRequest encodes an opentelemetry.proto.collector.trace.v1
// ExportTraceServiceRequest: its only field, resource_spans = 1, once
// per element. (The generated message's package links gRPC.)
func exportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}
