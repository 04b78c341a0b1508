package upstream

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A bridge carries a tool call between a host on protocol 2026-07-28 and an
// upstream on an older protocol, when the upstream asks for sampling or
// elicitation in the middle of it.
//
// Such an upstream sends a sampling/createMessage or elicitation/create
// request and waits for the answer; a 2026-07-28 host can only be asked by
// returning the question in a tool result (inputRequests) and receiving the
// answer on a new tools/call (inputResponses and the requestState we gave
// it). So the upstream call runs apart from the host's request: the first
// host request returns the question, the upstream call stays parked, and
// the host's retry, recognised by its requestState, delivers the answer
// and waits for the next question or the result.
//
// A raw call (a stdio upstream) becomes a bridge only when its upstream
// asks (rawFlight.openBridge): until then it is a raw call like any
// other, at the same cost. A typed call (other transports) is bridged
// from the start (bridgedCall).
type bridge struct {
	state  string        // the requestState given to the host last (a new one each round); guarded by Server.mu
	owner  string        // whom its states are bound to (see bridgeOwner)
	cancel func()        // cancels the upstream call
	done   chan struct{} // closed when the upstream call has ended

	// Guarded by Server.mu:
	waiter  *func(outcome)                   // the host request waiting for the next question or the outcome; nil if none
	ended   bool                             // the upstream call has ended (finish)
	queue   []*ask                           // questions no host request has been given yet
	final   *outcome                         // the outcome, when no host request was waiting for it
	pending map[string]*ask                  // questions given to the host and not answered yet
	expire  *time.Timer                      // set when the call ended with no host request waiting: forgets the outcome (forget)
	held    []mcp.ProgressNotificationParams // progress that came while no host request was open, for the next one; at most maxHeldProgress
}

// outcome is what a host request gets from a bridge: a question for the
// host (ask), or the upstream call's end: a typed result (a typed leg), a
// raw one (a raw leg), or an error.
type outcome struct {
	ask *ask
	res any // a typed leg's result: *mcp.CallToolResult, *mcp.GetPromptResult
	raw json.RawMessage
	err error
}

// An ask is one question of the upstream, waiting for the host's answer.
type ask struct {
	id    string
	state string // the requestState the host gets with it (see rekey)
	req   mcp.InputRequest
	reply chan mcp.InputResponse // capacity 1
}

// bridgeIdle bounds how long a parked upstream call waits for the host to
// come back with answers.
const bridgeIdle = 5 * time.Minute

// callRevision returns the revision the host's tools/call follows (see
// hostRevision).
func callRevision(ctx context.Context, req *mcp.CallToolRequest) junction.Revision {
	return hostRevision(req.Params.Meta, junction.HostSession(ctx))
}

// hostRevision returns the revision a host request with meta, on session
// (nil: none), follows: the one its _meta names, else its session's.
func hostRevision(meta mcp.Meta, session junction.Host) junction.Revision {
	if v, ok := meta[mcp.MetaKeyProtocolVersion].(string); ok {
		return junction.ParseRevision(v)
	}
	if session == nil {
		return junction.RevisionUnknown
	}
	p := session.InitializeParams()
	if p == nil {
		return junction.RevisionUnknown
	}
	return junction.ParseRevision(p.ProtocolVersion)
}

// newBridge returns a bridge whose upstream call cancel cancels, for
// owner (see bridgeOwner).
func newBridge(cancel func(), owner string) *bridge {
	b := &bridge{cancel: cancel, done: make(chan struct{}), pending: make(map[string]*ask), owner: owner}
	b.state = newBridgeState(owner)
	return b
}

// bridgeOwner names whom the request states of a call made under ctx
// for the host session host (nil: none, as for a 2026-07-28 host over
// HTTP) are bound to: that session and the authenticated user
// ([junction.User]). A retry from another session, or with another
// user's credential, does not verify.
func bridgeOwner(ctx context.Context, host junction.Host) string {
	var id string
	if host != nil {
		id = host.ID()
	}
	return id + "\x00" + junction.User(ctx)
}

// rekey gives b a new request state for the question a, which is being
// handed to the host: each round of a bridged call has its own, and only
// the latest one resumes it. s.mu is held.
func (b *bridge) rekey(s *Server, a *ask) {
	if s.bridges[b.state] == b {
		delete(s.bridges, b.state)
	}
	b.state = newBridgeState(b.owner)
	if !b.ended {
		s.bridges[b.state] = b
	}
	a.state = b.state
}

// install makes c the bridged call of b, findable by its request state.
// s.mu is held.
func (b *bridge) install(s *Server, c *call) {
	c.bridge = b
	s.bridges[b.state] = b
}

// give hands o (a question or the upstream call's end) to the host
// request waiting, or keeps it for the next one. s.mu is held; the
// returned func delivers it, and must be called without s.mu.
func (b *bridge) give(s *Server, o outcome) func() {
	w := b.waiter
	if w == nil {
		if o.ask != nil {
			b.queue = append(b.queue, o.ask)
		} else {
			b.final = &o
		}
		return func() {}
	}
	b.waiter = nil
	if o.ask != nil {
		b.pending[o.ask.id] = o.ask
		b.rekey(s, o.ask)
	}
	return func() { (*w)(o) }
}

// finish ends the bridge with the upstream call's outcome. When no host
// request is waiting for it (the host has a question and has not come
// back yet), the outcome waits for the host's retry under the state the
// host holds, as long as a question would wait for its answer: the retry
// gets the call's outcome, and the call does not run again.
func (b *bridge) finish(s *Server, o outcome) {
	s.mu.Lock()
	b.ended = true
	deliver := b.give(s, o)
	if b.final != nil && s.bridges[b.state] == b {
		b.expire = time.AfterFunc(bridgeIdle, func() { b.forget(s) })
	} else {
		delete(s.bridges, b.state)
	}
	s.mu.Unlock()
	deliver()
	close(b.done)
	s.noteIdle()
}

// forget drops a finished bridge's outcome that no retry came for.
func (b *bridge) forget(s *Server) {
	s.mu.Lock()
	if s.bridges[b.state] == b {
		delete(s.bridges, b.state)
	}
	b.final = nil
	s.mu.Unlock()
	s.noteIdle()
}

// bridgeFor returns the bridge a retry's request state names, if it is
// still there.
func (s *Server) bridgeFor(state string) *bridge {
	if state == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bridges[state]
}

// bridgedCall runs a typed call from a 2026-07-28 host to a legacy
// upstream (see bridge), or resumes one when the host comes back with
// answers. Calls to stdio upstreams take the raw path instead (bridgeable,
// resumeRaw).
func (s *Server) bridgedCall(ctx context.Context, sess *session, req *mcp.CallToolRequest, params *mcp.CallToolParams, timeout time.Duration) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	br := bridged{host: junction.HostSession(ctx), caps: metaCaps(req.Params.Meta), token: req.Params.GetProgressToken(),
		state: req.Params.RequestState, answers: req.Params.InputResponses, what: "tool " + strconv.Quote(name)}
	o := s.bridge(ctx, sess, br, timeout, func(upCtx context.Context, c *call) (any, error) {
		params.SetProgressToken(c.token())
		res, err := sess.cs.CallTool(upCtx, params)
		if err == nil {
			s.drainProgress(c)
		}
		return res, err
	})
	if o.ask != nil {
		return question(o.ask), nil
	}
	res, _ := o.res.(*mcp.CallToolResult)
	return res, o.err
}

// bridgedPrompt is bridgedCall for prompts/get: a legacy upstream may ask
// for input while it builds a prompt, too.
func (s *Server) bridgedPrompt(ctx context.Context, sess *session, req *mcp.GetPromptRequest, timeout time.Duration) (*mcp.GetPromptResult, error) {
	params := *req.Params
	params.Meta = hopMeta(req.Params.Meta, junction.HostSession(ctx), sess.rev())
	params.InputResponses, params.RequestState = nil, ""
	br := bridged{host: junction.HostSession(ctx), caps: metaCaps(req.Params.Meta), token: req.Params.GetProgressToken(),
		state: req.Params.RequestState, answers: req.Params.InputResponses, what: "prompt " + strconv.Quote(req.Params.Name)}
	o := s.bridge(ctx, sess, br, timeout, func(upCtx context.Context, c *call) (any, error) {
		params.SetProgressToken(c.token())
		return sess.cs.GetPrompt(upCtx, &params)
	})
	if o.ask != nil {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{}, InputRequests: mcp.InputRequestMap{o.ask.id: o.ask.req}, RequestState: o.ask.state}, nil
	}
	res, _ := o.res.(*mcp.GetPromptResult)
	return res, o.err
}

// bridged is what a typed bridged request needs of the host's request.
type bridged struct {
	host    junction.Host        // nil without a session
	caps    []byte               // the capabilities the request declared
	token   any                  // the host's progress token
	state   string               // a retry's requestState
	answers mcp.InputResponseMap // a retry's inputResponses
	what    string               // "tool \"name\"", for errors
}

// bridge runs a typed request from a 2026-07-28 host to a legacy upstream
// (run makes it, with the call registered for it), or resumes the one the
// retry's state names, and returns the outcome for the host: a question,
// or the upstream's answer.
func (s *Server) bridge(ctx context.Context, sess *session, br bridged, timeout time.Duration, run func(context.Context, *call) (any, error)) outcome {
	if br.state != "" {
		if err := checkBridgeState(br.state, bridgeOwner(ctx, br.host)); err != nil {
			return outcome{err: err}
		}
		if b := s.bridgeFor(br.state); b != nil {
			return s.resumeBridge(ctx, b, br.answers, br.host, br.token, br.what)
		}
	}

	// The upstream request outlives this host request: it ends with its
	// own answer, its no-progress timeout, Close, or the host going away.
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c, upCtx, end, err := s.begin(callCtx, sess, br.host, timeout, br.what)
	if err != nil {
		cancel()
		return outcome{err: err}
	}
	s.setCaps(c, br.caps)
	b := newBridge(cancel, bridgeOwner(ctx, br.host))
	s.mu.Lock()
	if s.sess != sess {
		// The session closed since begin; nothing was sent.
		s.mu.Unlock()
		end()
		cancel()
		return outcome{err: fmt.Errorf("upstream %q: %s: %w: %w", s.name, br.what, junction.ErrSourceDown, errSessionGone)}
	}
	b.install(s, c)
	// Added under s.mu while sess is current: the supervisor, which is
	// serving it, has not returned, so Close's Wait waits for this too.
	s.wg.Add(1)
	s.mu.Unlock()
	s.logger.Debug("bridging a legacy upstream request for a 2026-07-28 host", "request", br.what)
	s.setHost(c, ctx, br.host, br.token)
	go func() {
		defer s.wg.Done()
		defer cancel()
		res, err := run(upCtx, c)
		if err != nil {
			err = s.callError(ctx, upCtx, sess, br.what, timeout, err)
		}
		end()
		b.finish(s, outcome{res: res, err: err})
	}()
	return s.awaitBridge(ctx, b, br.what)
}

// bridgeable reports whether a raw call from a host with hm to a server on
// sess becomes a bridge if the server asks for input: the host reads
// questions inside results (2026-07-28 or later), the server asks with
// requests of its own (before it).
func bridgeable(hm hostMeta, sess *session) bool {
	return hm.rev.AsksInResults() && !sess.rev().AsksInResults()
}

// openBridge turns the raw call f into a bridge, when its upstream asks
// for input (at most once; nil if the call is over): the host request
// that made it gets the question, and the upstream call goes on without
// it, until a retry of the host's takes it up (resumeRaw). A call whose
// answer has begun to go to the host (CanStream) does not become one.
func (f *rawFlight) openBridge() *bridge {
	s := f.s
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.b != nil || f.finished || f.streams || f.c == nil {
		return f.b
	}
	b := newBridge(func() { f.CancelRaw(context.Canceled) }, bridgeOwner(f.ctx, junction.HostSession(f.ctx)))
	if f.stop != nil {
		f.stop() // the host's request no longer ends the call
		f.stop = nil
	}
	f.ctx = context.WithoutCancel(f.ctx)
	host := f.done
	first := func(o outcome) {
		res, err := s.rawOutcome(b, o, f.name)
		host.RawDone(res, 0, err)
	}
	b.waiter = &first
	f.done = junction.RawDoneFunc(func(res json.RawMessage, _ junction.ResultFacts, err error) { b.finish(s, outcome{raw: res, err: err}) })
	f.b = b
	s.mu.Lock()
	b.install(s, f.c)
	s.mu.Unlock()
	s.logger.Debug("bridging a legacy upstream call for a 2026-07-28 host", junction.LogKeyTool, f.name)
	return b
}

// resumeRaw is the retry of a raw call that asked for input, from a host
// at 2026-07-28 or later to a server before it: the answers go to the
// parked upstream call (see bridge), and the retry gets its next question
// or its result. A retry whose call is gone starts it again without the
// answers, as the typed path does.
func (s *Server) resumeRaw(ctx context.Context, sess *session, name string, params json.RawMessage, hm hostMeta, timeout time.Duration) (json.RawMessage, error) {
	var p struct {
		InputResponses mcp.InputResponseMap `json:"inputResponses"`
		RequestState   string               `json:"requestState"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	if p.RequestState != "" {
		if err := checkBridgeState(p.RequestState, bridgeOwner(ctx, junction.HostSession(ctx))); err != nil {
			return nil, err
		}
		if b := s.bridgeFor(p.RequestState); b != nil {
			return s.rawOutcome(b, s.resumeBridge(ctx, b, p.InputResponses, junction.HostSession(ctx), hm.token, toolWhat(name)), name)
		}
	}
	hm.retry = false
	return s.callRaw(ctx, sess, name, withoutMembers(params, "inputResponses", "requestState"), hm, timeout)
}

// question is the input-required result that puts a to the host.
func question(a *ask) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{a.id: a.req}, RequestState: a.state}
}

// rawOutcome is a bridge's outcome as CallToolRaw returns it: a question
// is written as go-sdk's server writes one to a 2026-07-28 host.
func (s *Server) rawOutcome(b *bridge, o outcome, name string) (json.RawMessage, error) {
	if o.ask == nil {
		return o.raw, o.err
	}
	q := question(o.ask)
	enc, err := json.Marshal(struct {
		Content       []mcp.Content       `json:"content"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState"`
		ResultType    string              `json:"resultType"`
	}{[]mcp.Content{}, q.InputRequests, q.RequestState, "input_required"})
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %s: encode the question: %w", s.name, toolWhat(name), err)
	}
	return enc, nil
}

// withoutMembers returns the JSON object obj without the members named.
func withoutMembers(obj json.RawMessage, names ...string) json.RawMessage {
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	rawjson.ObjectSpans(obj, func(key []byte, start, end int) {
		if slices.Contains(names, string(key)) {
			return
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `":`...)
		out = append(out, obj[start:end]...)
	})
	return append(out, '}')
}

// A bridge's request state is "junction-bridge-" and 64 hex digits: 16
// random bytes, then the first 16 bytes of their HMAC-SHA256 with its
// owner (the host session and the user it was given to, bridgeOwner),
// under a key of this process. A retry whose state does not verify
// (altered, made up, or given to another host session or another user)
// is refused; one that verifies but names no
// bridge (its call ended, or it is from an earlier round) starts the
// call again.
const bridgePrefix = "junction-bridge-"

// bridgeKey signs request states; it lives as long as the process.
var bridgeKey = func() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}()

func newBridgeState(owner string) string {
	var b [32]byte
	rand.Read(b[:16])
	copy(b[16:], stateMAC(b[:16], owner))
	return bridgePrefix + hex.EncodeToString(b[:])
}

func stateMAC(nonce []byte, owner string) []byte {
	m := hmac.New(sha256.New, bridgeKey)
	m.Write(nonce)
	m.Write([]byte(owner))
	return m.Sum(nil)[:16]
}

// checkBridgeState reports an error if state is not a request state this
// process gave to owner (see bridgeOwner).
func checkBridgeState(state, owner string) error {
	raw, err := hex.DecodeString(strings.TrimPrefix(state, bridgePrefix))
	if !strings.HasPrefix(state, bridgePrefix) || err != nil || len(raw) != 32 || !hmac.Equal(raw[16:], stateMAC(raw[:16], owner)) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "requestState: not a state this server gave to this client (altered, made up, or from another session or user); call the tool again without inputResponses and requestState"}
	}
	return nil
}

// setHost points the call's notifications at the host request now
// active: its context (which may carry its host link), session (nil: a
// request without one) and progress token. The progress that came while
// no host request was open goes to it first.
func (s *Server) setHost(c *call, ctx context.Context, host junction.Host, token any) {
	c.notify.Lock()
	defer c.notify.Unlock()
	s.mu.Lock()
	c.host, c.hostCtx, c.hostToken = host, ctx, token
	b := c.bridge
	s.mu.Unlock()
	if b != nil {
		s.sendHeld(b, ctx, host, token)
	}
}

// sendHeld sends the progress b held while no host request was open to
// the host request ctx on host, under the host's token (none: it is
// dropped), as forwardProgress does.
func (s *Server) sendHeld(b *bridge, ctx context.Context, host junction.Host, token any) {
	s.mu.Lock()
	held := b.held
	b.held = nil
	s.mu.Unlock()
	if token == nil {
		return
	}
	for _, p := range held {
		s.forwardProgress(host, ctx, token, p)
	}
}

// resumeBridge delivers the host's answers to the parked upstream call and
// waits for its next question or its result.
func (s *Server) resumeBridge(ctx context.Context, b *bridge, answers mcp.InputResponseMap, host junction.Host, token any, what string) outcome {
	s.mu.Lock()
	var c *call
	for _, x := range s.calls.all() {
		if x.bridge == b {
			c = x
		}
	}
	for id, r := range answers {
		if a := b.pending[id]; a != nil {
			s.logger.Debug("host answered the upstream's question", "ask", id)
			delete(b.pending, id)
			a.reply <- r
		}
	}
	s.mu.Unlock()
	if c != nil {
		s.setHost(c, ctx, host, token)
	} else {
		// The call has ended; what it reported before it did is due.
		s.sendHeld(b, ctx, host, token)
	}
	return s.awaitBridge(ctx, b, what)
}

// awaitBridge waits for the upstream call's next question (returned to the
// host as an input-required result) or its outcome. A host request that
// goes away ends the upstream call.
func (s *Server) awaitBridge(ctx context.Context, b *bridge, what string) outcome {
	ch := make(chan outcome, 1)
	w := func(o outcome) { ch <- o }
	s.mu.Lock()
	switch {
	case b.final != nil:
		// The call is over: its outcome, not what it asked meanwhile.
		o := *b.final
		b.final = nil
		if b.expire != nil {
			b.expire.Stop()
		}
		if s.bridges[b.state] == b {
			delete(s.bridges, b.state)
		}
		s.mu.Unlock()
		s.noteIdle()
		return o
	case len(b.queue) > 0:
		a := b.queue[0]
		b.queue = b.queue[1:]
		b.pending[a.id] = a
		b.rekey(s, a)
		s.mu.Unlock()
		return outcome{ask: a}
	}
	b.waiter = &w
	s.mu.Unlock()
	select {
	case o := <-ch:
		return o
	case <-b.done:
		select {
		case o := <-ch: // the outcome came with the end
			return o
		default:
			return outcome{err: fmt.Errorf("upstream %q: %s: %w: the call being resumed is gone", s.name, what, junction.ErrSourceDown)}
		}
	case <-ctx.Done():
		s.mu.Lock()
		if b.waiter == &w {
			b.waiter = nil
		}
		s.mu.Unlock()
		b.cancel()
		return outcome{err: fmt.Errorf("upstream %q: %s: %w", s.name, what, ctx.Err())}
	}
}

// bridgeOf returns c's bridge: the one it has, or, for a raw call that
// may become one, a new one (rawFlight.openBridge); nil if c is no
// bridged call.
func (s *Server) bridgeOf(c *call) *bridge {
	s.mu.Lock()
	b, f := c.bridge, c.lazy
	s.mu.Unlock()
	if b != nil || f == nil {
		return b
	}
	return f.openBridge()
}

// askHost hands an upstream's question to the host through the bridge b
// and waits for the answer.
func (s *Server) askHost(ctx context.Context, c *call, b *bridge, req mcp.InputRequest) (mcp.InputResponse, error) {
	// Until the host comes back, nobody listens for progress and the
	// upstream is not the one being slow; a host that never comes back
	// ends the call.
	defer c.hold()()
	idle := time.AfterFunc(bridgeIdle, b.cancel)
	defer idle.Stop()
	s.mu.Lock()
	s.nextToken++
	a := &ask{id: "junction-ask-" + strconv.FormatUint(s.nextToken, 10), req: req, reply: make(chan mcp.InputResponse, 1)}
	deliver := b.give(s, outcome{ask: a})
	s.mu.Unlock()
	deliver()
	select {
	case r := <-a.reply:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.done:
		return nil, errBridgeEnded
	}
}

var (
	errBadAnswer   = errors.New("host answered with the wrong kind of result")
	errBridgeEnded = errors.New("the tool call ended before the host answered")
)

// sampleViaBridge asks the host for a sampling result through the bridge.
func (s *Server) sampleViaBridge(ctx context.Context, c *call, b *bridge, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	r, err := s.askHost(ctx, c, b, p)
	if err != nil {
		return nil, err
	}
	switch r := r.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		out := &mcp.CreateMessageResult{Meta: r.Meta, Model: r.Model, Role: r.Role, StopReason: r.StopReason}
		if len(r.Content) > 0 {
			out.Content = r.Content[0]
		}
		return out, nil
	}
	return nil, fmt.Errorf("sampling/createMessage: %w (%T)", errBadAnswer, r)
}

// elicitViaBridge asks the host for an elicitation result through the
// bridge.
func (s *Server) elicitViaBridge(ctx context.Context, c *call, b *bridge, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	r, err := s.askHost(ctx, c, b, p)
	if err != nil {
		return nil, err
	}
	if r, ok := r.(*mcp.ElicitResult); ok {
		return r, nil
	}
	return nil, fmt.Errorf("elicitation/create: %w (%T)", errBadAnswer, r)
}

// The other way round: an upstream at 2026-07-28 or later asks for input
// by answering a tools/call with an input-required result (inputRequests
// and a requestState), and a host before 2026-07-28 cannot read that.
// For such a host the hub asks the host itself, with the requests the old
// protocol has for it (elicitation/create, sampling/createMessage,
// roots/list) on its session, and calls the tool again with the answers
// (inputResponses) and the upstream's requestState, until the upstream
// answers for good. go-sdk's server does the same for the typed path.

// maxInputRounds bounds the retries of one call that keeps asking.
const maxInputRounds = 10

// inputRequired reports whether the raw result res, from a server on
// sess, asks for input (which only a server at 2026-07-28 or later does).
func inputRequired(sess *session, res json.RawMessage) bool {
	if !sess.rev().AsksInResults() || !rawjson.Contains(res, []byte(`"input_required"`)) {
		return false
	}
	var v struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(res, &v) == nil && v.ResultType == "input_required"
}

// fulfilOnHost fulfils the input requests of the input-required result res on
// the host session host, and returns the params of the retry: params
// with the answers and res's requestState.
func (s *Server) fulfilOnHost(ctx context.Context, host junction.Host, params, res json.RawMessage) (json.RawMessage, error) {
	if host == nil {
		return nil, errors.New("the upstream asked for input, and this host has no session to ask on (a stateless request before 2026-07-28)")
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, fmt.Errorf("the upstream's input-required result: %w", err)
	}
	if len(r.InputRequests) == 0 {
		return nil, errors.New("the upstream is busy (an input-required result with no requests); retry later")
	}
	responses := make(mcp.InputResponseMap, len(r.InputRequests))
	for id, ir := range r.InputRequests {
		var resp mcp.InputResponse
		var err error
		switch p := ir.(type) {
		case *mcp.ElicitParams:
			resp, err = host.Elicit(ctx, p)
		case *mcp.CreateMessageParams:
			resp, err = host.CreateMessage(ctx, p)
		case *mcp.CreateMessageWithToolsParams:
			resp, err = host.CreateMessageWithTools(ctx, p)
		case *mcp.ListRootsParams:
			resp, err = host.ListRoots(ctx, p)
		default:
			err = fmt.Errorf("input request of an unknown kind %T", ir)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", id, err)
		}
		responses[id] = resp
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, err
	}
	ans, err := json.Marshal(responses)
	if err != nil {
		return nil, err
	}
	state, err := json.Marshal(r.RequestState)
	if err != nil {
		return nil, err
	}
	m["inputResponses"], m["requestState"] = ans, state
	return json.Marshal(m)
}
