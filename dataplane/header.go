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
// hdr constants), to value alone: h.Set(key, value).
func setHeader(h http.Header, key, value string) {
	h[key] = []string{value}
}
