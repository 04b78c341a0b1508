package upstream

import (
	"net/http"
	"net/url"

	"github.com/junction-mcp/junction/internal/redact"
)

// The URL of an HTTP or SSE upstream may carry a secret in its query
// (?api_key=...). go-sdk puts the URL it was given in its errors (through
// net/http's *url.Error, "Post \"URL\": ..."), and those errors reach the
// log, /status, the status page and "junction status". So go-sdk is given
// the shown URL, with the query values replaced (redact.Query), and
// queryTransport, the outermost RoundTripper of the server's client, puts
// the real query back on each request for that URL: the upstream gets
// the real URL, and no text go-sdk makes can hold the secret. The
// password is left to net/http, which needs it for Basic auth and hides
// it in its errors.

// shownEndpoint returns the endpoint to give go-sdk for raw: raw with its
// query values redacted. A URL without a query, or that does not parse
// (Config.Validate refuses it), is returned as it is.
func shownEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	u.RawQuery = redact.Query(u.RawQuery)
	return u.String()
}

// queryTransport sends a request for the shown endpoint (see
// shownEndpoint) with the real query of the configured URL.
type queryTransport struct {
	base  http.RoundTripper
	real  *url.URL // the configured URL
	shown string   // real's query, redacted
}

// withRealQuery wraps base so that requests for the shown form of raw go
// out with raw's query; without a query to hide it returns base.
func withRealQuery(base http.RoundTripper, raw string) http.RoundTripper {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return base
	}
	shown := redact.Query(u.RawQuery)
	if shown == u.RawQuery {
		return base
	}
	return &queryTransport{base: base, real: u, shown: shown}
}

func (t *queryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL
	if u.RawQuery != t.shown || u.Host != t.real.Host || u.EscapedPath() != t.real.EscapedPath() {
		return t.base.RoundTrip(req) // another URL: the SSE message endpoint, a redirect
	}
	req = req.Clone(req.Context())
	req.URL.RawQuery = t.real.RawQuery
	return t.base.RoundTrip(req)
}
