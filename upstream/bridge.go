package upstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
type bridge struct {
	state   string          // the requestState given to the host
	outcome chan outcome    // the upstream call's end; capacity 1
	asks    chan *ask       // questions from the upstream, for the host
	cancel  func()          // cancels the upstream call
	done    chan struct{}   // closed when the upstream call has ended
	pending map[string]*ask // questions the host has not answered; guarded by Server.mu
}

// outcome is the end of a bridged upstream call: a typed result (the
// typed upstream leg, or a question for the host), or the raw result of a
// raw leg, or an error.
type outcome struct {
	res *mcp.CallToolResult
	raw json.RawMessage
	err error
}

// An ask is one question of the upstream, waiting for the host's answer.
type ask struct {
	id    string
	req   mcp.InputRequest
	reply chan mcp.InputResponse // capacity 1
}

// bridgeIdle bounds how long a parked upstream call waits for the host to
// come back with answers.
const bridgeIdle = 5 * time.Minute

// hostIsModern reports whether the host request follows protocol
// 2026-07-28 or later, whose servers may not send requests to the client.
func hostIsModern(req *mcp.CallToolRequest) bool {
	if v, ok := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok {
		return v >= junction.StatelessProtocolVersion
	}
	if req.Session == nil {
		return false
	}
	p := req.Session.InitializeParams()
	return p != nil && p.ProtocolVersion >= junction.StatelessProtocolVersion
}

// newBridge returns a bridge for an upstream call about to start, and the
// call's context: it outlives the host's request, and ends with the
// call's own result, its no-progress timeout, Close, or the host going
// away (awaitBridge).
func newBridge(ctx context.Context) (*bridge, context.Context) {
	callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &bridge{
		state:   newBridgeState(),
		outcome: make(chan outcome, 1),
		asks:    make(chan *ask),
		cancel:  cancel,
		done:    make(chan struct{}),
		pending: make(map[string]*ask),
	}, callCtx
}

// install makes c the bridged call of b, findable by its request state.
// s.mu is held.
func (b *bridge) install(s *Server, c *call) {
	c.bridge = b
	s.bridges[b.state] = b
}

// end hands on the upstream call's outcome and forgets the bridge.
func (b *bridge) end(s *Server, o outcome) {
	b.outcome <- o
	s.mu.Lock()
	delete(s.bridges, b.state)
	s.mu.Unlock()
	b.cancel()
	close(b.done)
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

// bridgedCall runs a call from a 2026-07-28 host to a legacy upstream (see
// bridge) on the typed path, or resumes one when the host comes back with
// answers. Calls to stdio upstreams take the raw path instead (bridgeRaw).
func (s *Server) bridgedCall(ctx context.Context, sess *session, req *mcp.CallToolRequest, params *mcp.CallToolParams, timeout time.Duration) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	what := "tool " + strconv.Quote(name)
	if b := s.bridgeFor(req.Params.RequestState); b != nil {
		o := s.resumeBridge(ctx, b, req.Params.InputResponses, req.Session, req.Params.GetProgressToken(), what)
		return o.res, o.err
	}

	b, callCtx := newBridge(ctx)
	c, upCtx, end, err := s.begin(callCtx, sess, req.Session, timeout, what)
	if err != nil {
		b.cancel()
		return nil, err
	}
	s.mu.Lock()
	if s.sess != sess {
		// The session closed since begin; nothing was sent.
		s.mu.Unlock()
		end()
		b.cancel()
		return nil, fmt.Errorf("upstream %q: %s: %w: %w", s.name, what, junction.ErrSourceDown, errSessionGone)
	}
	b.install(s, c)
	// Added under s.mu while sess is current: the supervisor, which is
	// serving it, has not returned, so Close's Wait waits for this too.
	s.wg.Add(1)
	s.mu.Unlock()
	s.logger.Debug("bridging a legacy upstream call for a 2026-07-28 host", junction.LogKeyTool, name)
	s.setHost(c, ctx, req.Session, req.Params.GetProgressToken())
	params.SetProgressToken(c.token)
	go func() {
		defer s.wg.Done()
		res, err := sess.cs.CallTool(upCtx, params)
		if err == nil {
			s.drainProgress(c)
		} else {
			err = s.callError(ctx, upCtx, sess, what, timeout, err)
		}
		end()
		b.end(s, outcome{res: res, err: err})
	}()
	o := s.awaitBridge(ctx, b, what)
	return o.res, o.err
}

// bridgeRaw is bridgedCall on the raw path: the upstream leg is a raw
// call (so a call whose upstream asks nothing costs what any raw call
// costs), and a question for the host comes back as an encoded
// input-required result.
func (s *Server) bridgeRaw(ctx context.Context, sess *session, name string, params json.RawMessage, hm hostMeta, timeout time.Duration) (json.RawMessage, error) {
	what := toolWhat(name)
	if hm.retry {
		var p struct {
			InputResponses mcp.InputResponseMap `json:"inputResponses"`
			RequestState   string               `json:"requestState"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()}
		}
		if b := s.bridgeFor(p.RequestState); b != nil {
			return s.rawOutcome(s.resumeBridge(ctx, b, p.InputResponses, junction.HostSession(ctx), hm.token, what), name)
		}
		// Answers to a call that is gone: the call starts again without
		// them, as the typed path does.
		params = withoutMembers(params, "inputResponses", "requestState")
	}
	b, callCtx := newBridge(ctx)
	f := &rawFlight{s: s, ctx: callCtx, name: name, params: params, hm: hm, timeout: timeout, bridge: b,
		done: func(res json.RawMessage, err error) { b.end(s, outcome{raw: res, err: err}) }}
	f.start(sess)
	f.mu.Lock()
	c := f.c
	f.mu.Unlock()
	if c != nil {
		s.setHost(c, ctx, junction.HostSession(ctx), hm.token)
	}
	o := s.awaitBridge(ctx, b, what)
	if errors.Is(o.err, errSessionGone) {
		return nil, o.err // nothing was sent; CallToolRaw waits for the next session
	}
	return s.rawOutcome(o, name)
}

// rawOutcome is a bridged call's outcome as CallToolRaw returns it. A
// typed result is a question for the host (awaitBridge): it is written as
// go-sdk's server writes one to a 2026-07-28 host.
func (s *Server) rawOutcome(o outcome, name string) (json.RawMessage, error) {
	if o.err != nil || o.res == nil {
		return o.raw, o.err
	}
	b, err := json.Marshal(struct {
		Content       []mcp.Content       `json:"content"`
		InputRequests mcp.InputRequestMap `json:"inputRequests"`
		RequestState  string              `json:"requestState"`
		ResultType    string              `json:"resultType"`
	}{[]mcp.Content{}, o.res.InputRequests, o.res.RequestState, "input_required"})
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %s: encode the result: %w", s.name, toolWhat(name), err)
	}
	return b, nil
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

func newBridgeState() string {
	var b [16]byte
	rand.Read(b[:])
	return "junction-bridge-" + hex.EncodeToString(b[:])
}

// setHost points the call's notifications at the host request now
// active: its context, session and progress token.
func (s *Server) setHost(c *call, ctx context.Context, host *mcp.ServerSession, token any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.host, c.hostCtx, c.hostToken = host, ctx, nil
	if token != nil && host != nil {
		c.hostToken = token
	}
}

// resumeBridge delivers the host's answers to the parked upstream call and
// waits for its next question or its result.
func (s *Server) resumeBridge(ctx context.Context, b *bridge, answers mcp.InputResponseMap, host *mcp.ServerSession, token any, what string) outcome {
	s.mu.Lock()
	var c *call
	for _, x := range s.calls {
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
	if c == nil {
		// The upstream call has ended; its outcome is on its way, unless
		// another retry took it.
		select {
		case o := <-b.outcome:
			return o
		case <-b.done:
			select {
			case o := <-b.outcome:
				return o
			default:
				return outcome{err: fmt.Errorf("upstream %q: %s: %w: the call being resumed is gone", s.name, what, junction.ErrSourceDown)}
			}
		case <-ctx.Done():
			return outcome{err: fmt.Errorf("upstream %q: %s: %w", s.name, what, ctx.Err())}
		}
	}
	s.setHost(c, ctx, host, token)
	return s.awaitBridge(ctx, b, what)
}

// awaitBridge waits for the upstream call's next question (returned to the
// host as an input-required result) or its outcome.
func (s *Server) awaitBridge(ctx context.Context, b *bridge, what string) outcome {
	select {
	case o := <-b.outcome:
		return o
	case a := <-b.asks:
		s.mu.Lock()
		b.pending[a.id] = a
		s.mu.Unlock()
		return outcome{res: &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{a.id: a.req},
			RequestState:  b.state,
		}}
	case <-ctx.Done():
		b.cancel()
		return outcome{err: fmt.Errorf("upstream %q: %s: %w", s.name, what, ctx.Err())}
	}
}

// bridgeOf returns c's bridge, if it is a bridged call.
func (s *Server) bridgeOf(c *call) *bridge {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.bridge
}

// askHost hands an upstream's question to the host through the bridge and
// waits for the answer.
func (s *Server) askHost(ctx context.Context, c *call, req mcp.InputRequest) (mcp.InputResponse, error) {
	s.mu.Lock()
	s.nextToken++
	a := &ask{id: "junction-ask-" + strconv.FormatUint(s.nextToken, 10), req: req, reply: make(chan mcp.InputResponse, 1)}
	s.mu.Unlock()
	// Until the host comes back, nobody listens for progress and the
	// upstream is not the one being slow; a host that never comes back
	// ends the call.
	defer c.hold()()
	idle := time.AfterFunc(bridgeIdle, c.bridge.cancel)
	defer idle.Stop()
	select {
	case c.bridge.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.bridge.done:
		return nil, errBridgeEnded
	}
	select {
	case r := <-a.reply:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.bridge.done:
		return nil, errBridgeEnded
	}
}

var (
	errBadAnswer   = errors.New("host answered with the wrong kind of result")
	errBridgeEnded = errors.New("the tool call ended before the host answered")
)

// sampleViaBridge asks the host for a sampling result through the bridge.
func (s *Server) sampleViaBridge(ctx context.Context, c *call, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	r, err := s.askHost(ctx, c, p)
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
func (s *Server) elicitViaBridge(ctx context.Context, c *call, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	r, err := s.askHost(ctx, c, p)
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
	if !sess.modern() || !bytes.Contains(res, []byte(`"input_required"`)) {
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
func (s *Server) fulfilOnHost(ctx context.Context, host *mcp.ServerSession, params, res json.RawMessage) (json.RawMessage, error) {
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
