package upstream

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream asks the host for input (sampling, elicitation, roots)
// through the hub, so what it may ask for is what the host can answer, not
// what junction's own client could: each request to an upstream at
// 2026-07-28 or later carries the host's capabilities in
// _meta["io.modelcontextprotocol/clientCapabilities"], taken from the
// host's request (a 2026-07-28 host sends them with every request) or, for
// an older host, from its initialize. A request with no host (a diagram
// step, say) carries junction's. Before 2026-07-28 capabilities are
// declared once per connection; a server that gives each host its own
// session (Config.PerHost) declares the host's there (see perhost.go).

// hostCapabilities returns the host's capabilities as JSON: sent, as the
// request's _meta had them, or else those of host's initialize; nil when
// there are neither.
func hostCapabilities(sent []byte, host junction.Host) []byte {
	if len(sent) > 0 {
		return sent
	}
	if host == nil {
		return nil
	}
	return initCapabilities(host.InitializeParams())
}

// initCapabilities returns the capabilities of p, a host's initialize,
// as JSON; nil when it has none.
func initCapabilities(p *mcp.InitializeParams) []byte {
	if p == nil || p.Capabilities == nil {
		return nil
	}
	b, err := json.Marshal(junction.ClientCapabilitiesJSON(p.Capabilities))
	if err != nil {
		return nil
	}
	return b
}

// initCaps is a host's initialize and its capabilities as JSON.
type initCaps struct {
	params *mcp.InitializeParams
	caps   []byte
}

// hostCapabilities is the function hostCapabilities for a raw call,
// which asks on every call, with p the host's initialize (nil: none) as
// the call read it (hostMeta): the JSON of the last host's capabilities
// is kept, for as long as its initialize is the same (go-sdk replaces,
// never modifies, a session's initialize params). The bytes returned
// must not be modified.
func (s *Server) hostCapabilities(sent []byte, p *mcp.InitializeParams) []byte {
	if len(sent) > 0 {
		return sent
	}
	if p == nil {
		return nil
	}
	if last := s.lastCaps.Load(); last != nil && last.params == p {
		return last.caps
	}
	b := initCapabilities(p)
	s.lastCaps.Store(&initCaps{params: p, caps: b})
	return b
}

// capsKey is the clientCapabilities member's key as it opens in a
// session's protocol _meta (session.meta), where it comes last (noteMeta).
var capsKey = []byte(`"` + mcp.MetaKeyClientCapabilities + `":`)

// appendProtocolMeta appends the session's protocol _meta members to b,
// with caps, if non-nil, in place of the capabilities member.
func (sess *session) appendProtocolMeta(b, caps []byte) []byte {
	if caps == nil {
		return append(b, sess.meta...)
	}
	b = append(b, sess.metaHead...)
	b = append(b, capsKey...)
	return append(b, caps...)
}

// protocolMetaHead returns meta, a session's protocol _meta members,
// without its capabilities member, ready for another one to follow (see
// appendProtocolMeta): found once per session, not once per call.
func protocolMetaHead(meta []byte) []byte {
	if i := bytes.Index(meta, capsKey); i >= 0 {
		return meta[:i]
	}
	if len(meta) > 0 {
		return append(meta[:len(meta):len(meta)], ',')
	}
	return nil
}

// hopMeta copies a host request's _meta for an upstream, without the
// keys that describe the host's own connection under protocol 2026-07-28
// (its protocol version and client info: go-sdk fills in junction's). To
// an upstream at up, when up carries the protocol fields in each request
// (2026-07-28 or later), it adds the host's capabilities: those the
// request names, or those of host's initialize (go-sdk keeps a
// capabilities member that is there).
func hopMeta(m mcp.Meta, host junction.Host, up junction.Revision) mcp.Meta {
	caps, sent := m[mcp.MetaKeyClientCapabilities]
	if !up.PerRequestMeta() {
		sent = false
	} else if !sent && host != nil {
		if b := hostCapabilities(nil, host); b != nil {
			caps, sent = json.RawMessage(b), true
		}
	}
	if len(m) == 0 && !sent {
		return nil
	}
	out := make(mcp.Meta, len(m)+1)
	for k, v := range m {
		switch k {
		case mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeySubscriptionID:
			continue
		}
		out[k] = v
	}
	if sent {
		out[mcp.MetaKeyClientCapabilities] = caps
	}
	return out
}

// traceMeta puts the trace context a call runs under (the hub's span: see
// junction.Options.Trace) in m, a request's _meta that hopMeta made, in
// place of the host's. Without one, m is returned as it is.
func traceMeta(ctx context.Context, m mcp.Meta) mcp.Meta {
	tc := junction.TraceContextOf(ctx)
	if tc.Parent == "" {
		return m
	}
	if m == nil {
		m = mcp.Meta{}
	}
	m[junction.MetaKeyTraceParent] = tc.Parent
	delete(m, junction.MetaKeyTraceState)
	if tc.State != "" {
		m[junction.MetaKeyTraceState] = tc.State
	}
	return m
}
