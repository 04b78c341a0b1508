package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers that ask the old way.
//
// A server whose SDK speaks 2026-07-28 may still be written for the
// requests of the revisions before it: a go-sdk handler that calls
// CreateMessage, Elicit or ListRoots. Its SDK refuses those on a session
// at 2026-07-28, the hub's shared one by default, and the call fails;
// connected directly, a host before 2026-07-28 would have had a session
// at its own revision, where they work. junction learns it from that
// refusal: the call's error names it (oldAskRefusal). From then on every
// host before 2026-07-28 with a session gets a session of its own with
// that server, at its revision, as sessions: per_host gives them (see
// perhost.go), and the call that failed runs again there, once. A host
// at 2026-07-28 could not be asked that way directly either: its calls
// stay on the shared session.

// oldAskRefusal is the words of go-sdk's refusal of a server-initiated
// request on a 2026-07-28 session.
const oldAskRefusal = "cannot be sent while serving a request on protocol version"

// maxRefusalResult bounds the results searched for oldAskRefusal: a tool
// error holding it is a few hundred bytes.
const maxRefusalResult = 4 << 10

// mayLearnOldAsks reports whether a call of a host before 2026-07-28
// with a session (host; hostRev is the call's revision, as route takes
// it) on sess, s's shared session (nil: none yet), might teach
// learnOldAsks anything: only a 2026-07-28 session refuses old-style
// requests, and only until it has been learnt; a call made again (ctx
// says) teaches nothing more. It is cheap, for the call path: the
// context is searched last, only for a call that may teach something.
func (s *Server) mayLearnOldAsks(ctx context.Context, host junction.Host, hostRev junction.Revision, sess *session) bool {
	if host == nil || hostRev.AsksInResults() || sess == nil || !sess.rev().AsksInResults() {
		return false
	}
	return !s.oldAsks.Load() && !s.cfg.load().PerHost && ctx.Value(rerunKey{}) == nil
}

// perHost reports whether hosts get sessions of their own with s: it is
// configured (Config.PerHost), or s asks the old way (see above).
func (s *Server) perHost(cfg *Config) bool {
	return cfg.PerHost || s.oldAsks.Load()
}

// learnOldAsks, given a call that failed with its server's SDK's refusal
// of an old-style request (refused(res, err), which the caller checks
// first, so that every other call reads no context; res is a raw error
// result, rawErrorResult's, or a typed one's text, typedResultText's),
// reports whether the call was one of an older host with a session (ctx
// names it; hostRev is the call's revision, as route takes it), not made
// again already, on s's shared 2026-07-28 session, and if so records
// that s asks the old way: the call is to be made again, and is routed
// to the host's own session then. A host at 2026-07-28 (its requests
// name it; it has no initialize) teaches nothing: it could not be asked
// that way directly either, and route keeps its calls on the shared
// session.
func (s *Server) learnOldAsks(ctx context.Context, hostRev junction.Revision, res []byte, err error) bool {
	if junction.HostSession(ctx) == nil || hostRev.AsksInResults() || s.cfg.load().PerHost || ctx.Value(rerunKey{}) != nil {
		return false
	}
	s.mu.Lock()
	sess := s.sess
	s.mu.Unlock()
	if sess == nil || !sess.rev().AsksInResults() {
		return false
	}
	if !s.oldAsks.Swap(true) {
		s.logger.Warn("the server sends sampling, elicitation or roots requests of the kind before protocol 2026-07-28, which its SDK refuses on the hub's 2026-07-28 session: "+
			"hosts before 2026-07-28 now get a session of their own with it, at their revision (as sessions: per_host gives), and the call runs again there; "+
			"set sessions: per_host to have that from the start", "error", firstLine(err, res))
	}
	return true
}

// refused reports whether a call's outcome is its server's SDK's refusal
// of an old-style request: err, or res (a short error result,
// rawErrorResult's, or a typed one's text; a long result is not
// searched), names it.
func refused(res []byte, err error) bool {
	return err != nil && strings.Contains(err.Error(), oldAskRefusal) ||
		len(res) >= len(oldAskRefusal) && len(res) <= maxRefusalResult && bytes.Contains(res, []byte(oldAskRefusal))
}

// rerunKey marks the context of a call made again by learnOldAsks: it is
// not made a third time.
type rerunKey struct{}

// rerun returns ctx for the call made again.
func rerun(ctx context.Context) context.Context { return context.WithValue(ctx, rerunKey{}, true) }

// firstLine is what a failed call said: err, or the result's text.
func firstLine(err error, res []byte) string {
	if err != nil {
		return err.Error()
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(res, &r) == nil && len(r.Content) > 0 {
		return r.Content[0].Text
	}
	return string(res)
}

// rawErrorResult is res, a raw result, for learnOldAsks if it may be a
// tool error that holds the refusal: longer than the refusal's words,
// not too long to search, and an error as far as facts say, or with an
// isError member (a cheaper search than for the words) where they say
// nothing; else nil: a call that succeeded was not refused.
func rawErrorResult(res []byte, facts junction.ResultFacts) []byte {
	switch {
	case len(res) < len(oldAskRefusal) || len(res) > maxRefusalResult:
		return nil
	case facts&junction.ResultRead != 0:
		if !facts.Has(junction.ResultIsError) {
			return nil
		}
	case !rawjson.Contains(res, []byte(`"isError"`)):
		return nil
	}
	return res
}

// typedResultText is res's error text, for learnOldAsks: the text of an
// isError result.
func typedResultText(res *mcp.CallToolResult) []byte {
	if res == nil || !res.IsError {
		return nil
	}
	var b []byte
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b = append(b, t.Text...)
		}
	}
	return b
}

// retryingStart is StartToolRaw's done for a call that may have to run
// again on the host's own session (see learnOldAsks): its cancel reaches
// whichever attempt is running.
type retryingStart struct {
	s      *Server
	ctx    context.Context
	name   string
	params json.RawMessage
	done   junction.RawDone
	rev    junction.Revision // the call's host revision (hostMeta.rev); rev, mu and retried share two words

	mu      sync.Mutex
	retried bool
	cancel  junction.RawCancel
	ended   error // the cancellation's cause, once cancelled
}

// RawDone implements junction.RawDone: it ends the call, or runs it
// again on the host's own session.
func (r *retryingStart) RawDone(res json.RawMessage, facts junction.ResultFacts, err error) {
	errRes := rawErrorResult(res, facts)
	if !refused(errRes, err) { // nearly every call: nothing to learn, nothing to hold
		r.done.RawDone(res, facts, err)
		return
	}
	r.mu.Lock()
	again := !r.retried && r.ended == nil && r.s.learnOldAsks(r.ctx, r.rev, errRes, err)
	r.retried = r.retried || again
	r.mu.Unlock()
	if !again {
		r.done.RawDone(res, facts, err)
		return
	}
	c := r.s.StartToolRaw(rerun(r.ctx), r.name, r.params, r.done)
	r.mu.Lock()
	r.cancel = c
	cause := r.ended
	r.mu.Unlock()
	if cause != nil {
		c.CancelRaw(cause)
	}
}

// CancelRaw implements junction.RawCancel: it cancels the attempt that
// is running, and any that would follow.
func (r *retryingStart) CancelRaw(cause error) {
	r.mu.Lock()
	if r.ended == nil {
		r.ended = cause
		if r.ended == nil {
			r.ended = errors.New("cancelled")
		}
	}
	c := r.cancel
	r.mu.Unlock()
	if c != nil {
		c.CancelRaw(cause)
	}
}
