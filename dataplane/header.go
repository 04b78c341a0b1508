package dataplane

import (
	"net/http"

	"github.com/junction-mcp/junction"
)

// The HTTP headers the front reads and writes, in canonical form (as
// net/http stores a request's headers, and as http.Header.Set stores
// them). They are read with header and written with setHeader, by the key
// as it is stored: http.Header's Get and Set canonicalize their key on
// every call, which costs more than the lookup itself, and a POST asks for
// a dozen.
const (
	hdrAccept          = "Accept"
	hdrAllow           = "Allow"
	hdrCacheControl    = "Cache-Control"
	hdrConnection      = "Connection"
	hdrContentLength   = "Content-Length"
	hdrContentType     = "Content-Type"
	hdrLastEventID     = "Last-Event-Id"
	hdrMethod          = "Mcp-Method"
	hdrName            = "Mcp-Name"
	hdrProtocolVersion = "Mcp-Protocol-Version"
	hdrResumableStream = junction.ResumableStreamHeader
	hdrSessionID       = "Mcp-Session-Id"
)

// header returns the first value of h's header key, which is in canonical
// form (one of the hdr constants), or "": h.Get(key).
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// setHeader sets h's header key, which is in canonical form (one of the
// hdr constants), to value alone: h.Set(key, value). The values the front
// sets most are not copied into a slice of their own for each response:
// every header set to one shares its slice. That is safe because a
// header's values are only read once set (net/http writes them; Set and
// Add give the header a new slice), and the front never changes one in
// place.
func setHeader(h http.Header, key, value string) {
	switch value {
	case "application/json":
		h[key] = jsonValues
	case "text/event-stream":
		h[key] = sseValues
	case "no-cache, no-transform":
		h[key] = noCacheValues
	default:
		h[key] = []string{value}
	}
}

var (
	jsonValues    = []string{"application/json"}
	sseValues     = []string{"text/event-stream"}
	noCacheValues = []string{"no-cache, no-transform"}
)
