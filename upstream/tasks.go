package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// The tasks extension (io.modelcontextprotocol/tasks) through the hub.
// A stdio server at 2026-07-28 or later that offers the extension runs
// the tasks itself: the hub passes it the calls of hosts that declare
// the extension as they came (their capabilities go with them, see
// hostCapabilities), gives a task it creates an id of the hub's
// (junction.View.CallToolTask), and sends tasks/get, tasks/update and
// tasks/cancel for it here, on the same stdio connection as raw calls,
// with the server's own task id. A server that does not offer the
// extension gets plain calls: a tool of it that declares task support
// (junction.TaskSupportKey in its _meta, as a junction upstream's pack
// tools do) runs as a task of the hub, which makes the call in the
// background.

var _ junction.TaskSource = (*Server)(nil)

// taskRequestTimeout bounds one tasks/* request to a server.
const taskRequestTimeout = 30 * time.Second

// OffersTasks implements [junction.TaskSource]: the server is connected
// over stdio at 2026-07-28 or later and its capabilities name the tasks
// extension. (Other transports take no raw requests, so the hub could not
// forward tasks/* to them.)
func (s *Server) OffersTasks() bool {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || sess.stdio() == nil || !sess.rev().Tasks() {
		return false
	}
	res := sess.cs.InitializeResult()
	if res == nil || res.Capabilities == nil {
		return false
	}
	_, ok := res.Capabilities.Extensions[junction.TasksExtension]
	return ok
}

// TaskRequest implements [junction.TaskSource]: it sends method with
// params on the server's current stdio connection, with the protocol
// fields of a 2026-07-28 request that declares the tasks extension, and
// waits for the answer (at most taskRequestTimeout, or ctx). A task
// created on an earlier connection (the server restarted) is unknown to
// the new one, which says so.
func (s *Server) TaskRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || sess.stdio() == nil {
		return nil, fmt.Errorf("upstream %q: %s: not connected: %w", s.name, method, junction.ErrSourceDown)
	}
	reply := make(taskReply, 1)
	rc := sess.stdio().newRawCall(reply)
	rc.SendRequest(ctx, method, taskMeta(sess), params) // a failure to write is the reply
	timer := time.NewTimer(taskRequestTimeout)
	defer timer.Stop()
	select {
	case r := <-reply:
		switch {
		case r.Err != nil:
			return nil, r.Err
		case r.Fail != nil:
			return nil, fmt.Errorf("upstream %q: %s: %w: %w", s.name, method, junction.ErrSourceDown, r.Fail)
		}
		return r.Result, nil
	case <-ctx.Done():
		rc.Forget()
		return nil, ctx.Err()
	case <-timer.C:
		rc.Forget()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("upstream %q: %s: no answer within %v", s.name, method, taskRequestTimeout)}
	}
}

// taskReply receives a tasks/* request's reply (capacity 1: one reply).
type taskReply chan rawReply

func (r taskReply) ReceiveRaw(reply rawReply) { r <- reply }

// taskMeta is the _meta members of a tasks/* request to sess: its
// protocol version, and client capabilities that declare the extension
// (the hub's requests for a task stand for the host that declared it).
func taskMeta(sess *session) []byte {
	version := junction.Revision20260728.String()
	if res := sess.cs.InitializeResult(); res != nil && res.ProtocolVersion != "" {
		version = res.ProtocolVersion
	}
	v, _ := json.Marshal(version) // a string: cannot fail
	return []byte(`"` + mcp.MetaKeyProtocolVersion + `":` + string(v) +
		`,"` + mcp.MetaKeyClientCapabilities + `":{"extensions":{"` + junction.TasksExtension + `":{}}}`)
}
