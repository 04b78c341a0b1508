package upstream

import (
	"context"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The sole host (junction.HostWatcher).
//
// A server before protocol 2026-07-28 asks roots/list, or for sampling
// or elicitation, on its connection when it likes, and sends log messages
// that name no request: junction routes them to the host whose call is in
// flight (routeRequest, logHosts). Outside any call there is no such
// host, but when the hub has only one host session that could be meant
// (over stdio there is never more than one), it is that one: the hub
// tells the server which with SetSoleHost, and requests and log messages
// that no call claims go to it. A server usually asks for roots as soon
// as it is initialized, before the host has connected to the hub, and
// gets none: when a sole host that has roots arrives, or a host's roots
// change, the server is told its client's roots changed
// (notifications/roots/list_changed), and asks again.

// SetSoleHost implements junction.HostWatcher.
func (s *Server) SetSoleHost(ss junction.Host) {
	s.mu.Lock()
	changed := s.sole != ss
	s.sole = ss
	s.mu.Unlock()
	if changed && ss != nil && declaresRoots(ss) {
		s.rootsChanged()
	}
}

// declaresRoots reports whether host session ss declared the roots
// capability in its initialize.
func declaresRoots(ss junction.Host) bool {
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.RootsV2 != nil
}

// HostRootsChanged implements junction.HostWatcher.
func (s *Server) HostRootsChanged(junction.Host) { s.rootsChanged() }

// soleCall returns a call standing for the sole host, for a request of
// the server's that no call in flight claims; nil if there is no sole
// host.
func (s *Server) soleCall() *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sole == nil {
		return nil
	}
	return &call{host: s.sole, hostCtx: context.Background(), srv: s}
}

// rootsChanged tells a server before 2026-07-28 that its client's roots
// changed, in the background (go-sdk waits for the write). A 2026-07-28
// server asks for roots inside its results, per call: it is not told.
func (s *Server) rootsChanged() {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || sess.rev().AsksInResults() {
		return
	}
	s.wg.Go(func() {
		// go-sdk sends notifications/roots/list_changed when the client's
		// roots change; junction answers roots/list itself (forwardRoots)
		// and never serves the client's own list, so adding the same
		// placeholder root again is how to have go-sdk send the
		// notification.
		s.client.AddRoots(rootsPlaceholder)
	})
}

// rootsPlaceholder is the one root of the go-sdk client's own list (see
// rootsChanged); no server is ever given it.
var rootsPlaceholder = &mcp.Root{URI: "junction:roots-changed", Name: "never served"}
