package wire

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
)

// Meta is what a request's _meta says, as the hub reads it: the data
// plane, to know which path takes the request and what the host asked
// for, and an upstream, to build the _meta it forwards. [ReadMeta] reads
// every member in one walk. Values are the members as sent (slices of
// the request; nil when absent), except the version, which is decoded.
type Meta struct {
	// Version is the protocol version the request names (2026-07-28's
	// io.modelcontextprotocol/protocolVersion), decoded; "" if none. Rev
	// is the revision it names (junction.ParseRevision), RevisionUnknown
	// if none. A version that is not a JSON string names none: go-sdk's
	// server reads such a request as one of the session's revision.
	Version string
	Rev     junction.Revision

	ProgressToken []byte // progressToken
	LogLevel      []byte // io.modelcontextprotocol/logLevel
	Caps          []byte // io.modelcontextprotocol/clientCapabilities
	Info          []byte // io.modelcontextprotocol/clientInfo
	Subscription  []byte // io.modelcontextprotocol/subscriptionId
	TraceParent   []byte // the W3C trace context's traceparent
	TraceState    []byte // and its tracestate
}

// ReadMeta reads meta, a request's _meta object as sent (nil: none), and
// calls other, if not nil, with each member Meta does not name, in
// order. It does not check that meta is well-formed JSON; the walk stops
// where it is not.
func ReadMeta(meta []byte, other func(key, val []byte)) Meta {
	var m Meta
	if len(meta) == 0 {
		return m
	}
	rawjson.Object(meta, func(key, val []byte) {
		switch string(key) {
		case "progressToken":
			m.ProgressToken = val
		case mcp.MetaKeyProtocolVersion:
			if p, ok := rawjson.PlainString(val); ok {
				// A revision's own version string is not copied.
				if m.Rev = junction.ParseRevision(string(p)); m.Rev.Known() && m.Rev.String() == string(p) {
					m.Version = m.Rev.String()
				} else {
					m.Version = string(p)
				}
				return
			}
			if v, ok := rawjson.String(val); ok {
				m.Version, m.Rev = v, junction.ParseRevision(v)
			}
		case mcp.MetaKeyLogLevel:
			m.LogLevel = val
		case mcp.MetaKeyClientCapabilities:
			m.Caps = val
		case mcp.MetaKeyClientInfo:
			m.Info = val
		case mcp.MetaKeySubscriptionID:
			m.Subscription = val
		case junction.MetaKeyTraceParent:
			m.TraceParent = val
		case junction.MetaKeyTraceState:
			m.TraceState = val
		default:
			if other != nil {
				other(key, val)
			}
		}
	})
	return m
}

// Moved returns m, read from the _meta from, with its members' values
// taken from to instead: a copy of from, byte for byte. A reader that
// keeps m then keeps to, not from (and not the message from is part of).
// Each value runs on to the end of to, as one ReadMeta returns runs on to
// the end of the _meta it read, so what Moved returns moves again.
func (m Meta) Moved(from, to []byte) Meta {
	move := func(v []byte) []byte {
		if v == nil {
			return nil
		}
		at := cap(from) - cap(v) // v is from[at : at+len(v)]
		return to[at : at+len(v)]
	}
	m.ProgressToken, m.LogLevel, m.Caps, m.Info = move(m.ProgressToken), move(m.LogLevel), move(m.Caps), move(m.Info)
	m.Subscription, m.TraceParent, m.TraceState = move(m.Subscription), move(m.TraceParent), move(m.TraceState)
	return m
}
