package junction

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientCapabilitiesJSON returns c as the protocol writes a client's
// capabilities, for encoding/json: roots from RootsV2, and left out when
// unset. go-sdk's ClientCapabilities type always writes its Roots value,
// so capabilities it encodes say that every host has roots (and a
// session made again from them, or an upstream told of them, would ask
// a host that has none).
func ClientCapabilitiesJSON(c *mcp.ClientCapabilities) any {
	return struct {
		*mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"`
	}{c, c.RootsV2}
}

// MarshalInitializeParams encodes p, what a host sent in initialize, as
// the host sent it: its capabilities as [ClientCapabilitiesJSON] writes
// them.
func MarshalInitializeParams(p *mcp.InitializeParams) ([]byte, error) {
	type params mcp.InitializeParams // its fields, with their tags
	var caps any
	if p.Capabilities != nil {
		caps = ClientCapabilitiesJSON(p.Capabilities)
	}
	return json.Marshal(struct {
		*params
		Capabilities any `json:"capabilities"`
	}{(*params)(p), caps})
}
