package upstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Requests an upstream before 2026-07-28 sends to its client (sampling,
// elicitation, roots) go to the host whose call caused them (see
// routeRequest), and only if that host declared the capability: the
// upstream saw junction's capabilities in initialize (unless the server
// gives each host its own session, see perhost.go), which may promise
// more than this host can give. A host that did not declare it is not
// asked; the upstream gets error -32021 naming the capability, as a
// 2026-07-28 server would answer a client that lacks it.

// capability names, as in ClientCapabilities' JSON.
const (
	capSampling    = "sampling"
	capElicitation = "elicitation"
	capRoots       = "roots"
)

// setCaps records the capabilities a call's host sent with it (protocol
// 2026-07-28: in _meta), for hostDeclares.
func (s *Server) setCaps(c *call, caps []byte) {
	if caps == nil {
		return
	}
	s.mu.Lock()
	c.caps = caps
	s.mu.Unlock()
}

// metaCaps returns the capabilities member of a host request's _meta as
// JSON, or nil.
func metaCaps(m mcp.Meta) []byte {
	v, ok := m[mcp.MetaKeyClientCapabilities]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// hostDeclares reports whether c's host declared the capability: in the
// capabilities its request carried, or else in its session's initialize.
// A call with neither (a host whose capabilities junction cannot know) is
// taken to have it, and the host itself answers.
func (s *Server) hostDeclares(c *call, capability string) bool {
	s.mu.Lock()
	caps, host := c.caps, c.host
	s.mu.Unlock()
	if caps != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(caps, &m) != nil {
			return false
		}
		v, ok := m[capability]
		return ok && string(v) != "null"
	}
	if host == nil {
		return true
	}
	p := host.InitializeParams()
	if p == nil || p.Capabilities == nil {
		return false
	}
	switch capability {
	case capSampling:
		return p.Capabilities.Sampling != nil
	case capElicitation:
		return p.Capabilities.Elicitation != nil
	case capRoots:
		return p.Capabilities.RootsV2 != nil
	}
	return false
}

// undeclared is the error an upstream gets for a request the host it is
// meant for cannot answer: a MissingRequiredClientCapabilityError, whose
// data names the capability (requiredCapabilities), as a 2026-07-28
// server's does, so that a server that passes the error on to the host
// passes on what the host lacks.
func undeclared(method, capability string) error {
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{capability: map[string]any{}}})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("%s: the host this request is for did not declare the %s capability", method, capability), Data: data}
}

// routeAsk finds the host call a request of the upstream's belongs to
// (routeRequest) and checks that its host declared capability.
func (s *Server) routeAsk(ctx context.Context, method, capability string) (*call, error) {
	c, err := s.routeRequest(ctx, method)
	if err != nil {
		return nil, err
	}
	if !s.hostDeclares(c, capability) {
		s.logger.Debug("refused an upstream request the host cannot answer", "method", method, "capability", capability)
		return nil, undeclared(method, capability)
	}
	return c, nil
}

// forwardRoots is client middleware that answers the upstream's
// roots/list with the roots of the host whose call is in flight: asked on
// its session, or, for a 2026-07-28 host, through the call's bridge. When
// no single host call is in flight and the hub has no sole host (see
// sole.go), the answer is no roots.
func (s *Server) forwardRoots(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		c, err := s.routeRequest(ctx, method)
		if err != nil {
			// No host to ask: junction has no roots of its own.
			return &mcp.ListRootsResult{Roots: []*mcp.Root{}}, nil
		}
		if !s.hostDeclares(c, capRoots) {
			return nil, undeclared(method, capRoots)
		}
		params, _ := req.GetParams().(*mcp.ListRootsParams)
		if params == nil {
			params = &mcp.ListRootsParams{}
		}
		if b := s.bridgeOf(c); b != nil {
			r, err := s.askHost(ctx, c, b, params)
			if err != nil {
				return nil, err
			}
			if r, ok := r.(*mcp.ListRootsResult); ok {
				return r, nil
			}
			return nil, fmt.Errorf("roots/list: %w (%T)", errBadAnswer, r)
		}
		hctx, cancel := s.hostContext(ctx, c)
		defer cancel()
		defer c.hold()()
		return c.host.ListRoots(hctx, params)
	}
}
