package diagram

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How a run asks its host (person_job: sampling; user_response:
// elicitation) depends on the host's protocol revision:
//
//   - Before 2026-07-28 the pack sends the request to the host over its
//     session while the tool call is in progress.
//   - From 2026-07-28 a server may not send requests of its own (SEP-2322):
//     the tool call answers with the input it needs (inputRequests) and an
//     opaque requestState, and the host calls again with the answers. The
//     run goes on in the background between the calls ("parked"), waiting
//     for the answer, within its own timeout.

// inputKey is the key of a run's one input request in a round.
const inputKey = "diagram_input"

// callHost is the host of a call before 2026-07-28: requests go over the
// session, checked against the capabilities the call carries.
type callHost struct {
	ss   junction.Host
	caps *mcp.ClientCapabilities
}

func (h callHost) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if h.caps == nil || h.caps.Sampling == nil {
		return nil, ErrNoSampling
	}
	return h.ss.CreateMessage(ctx, p)
}

func (h callHost) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if h.caps == nil || h.caps.Elicitation == nil {
		return nil, ErrNoElicitation
	}
	return h.ss.Elicit(ctx, p)
}

// question is one input a parked run waits for.
type question struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

// roundsHost is the host of a run from 2026-07-28: each request becomes
// a question the tool call hands to the host as an input request.
type roundsHost struct {
	caps *mcp.ClientCapabilities
	asks chan *question
}

func (h *roundsHost) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	q := &question{req: req, answer: make(chan mcp.InputResponse, 1)}
	select {
	case h.asks <- q:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case a := <-q.answer:
		if a == nil {
			return nil, errors.New("the host sent no answer")
		}
		return a, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

func (h *roundsHost) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if h.caps == nil || h.caps.Sampling == nil {
		return nil, ErrNoSampling
	}
	a, err := h.ask(ctx, p)
	if err != nil {
		return nil, err
	}
	switch r := a.(type) {
	case *mcp.CreateMessageResult:
		return r, nil
	case *mcp.CreateMessageWithToolsResult:
		if len(r.Content) == 0 {
			return nil, errors.New("the host's model sent no content")
		}
		return &mcp.CreateMessageResult{Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
	}
	return nil, fmt.Errorf("the host answered a sampling request with %T", a)
}

func (h *roundsHost) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if h.caps == nil || h.caps.Elicitation == nil {
		return nil, ErrNoElicitation
	}
	a, err := h.ask(ctx, p)
	if err != nil {
		return nil, err
	}
	if r, ok := a.(*mcp.ElicitResult); ok && r != nil {
		return r, nil
	}
	return nil, fmt.Errorf("the host answered an elicitation request with %T", a)
}

// parkedRun is a run between two calls of its host.
type parkedRun struct {
	id      string
	host    *roundsHost
	done    chan struct{}
	pending *question // the question the host was given; nil while running
}

// rounds holds the parked runs by request state.
type rounds struct {
	mu     sync.Mutex
	parked map[string]*parkedRun
}

// runForCall runs req for the tool call creq, with the host behind creq.
// It returns the finished run, or, from 2026-07-28, the input-required
// result to answer the call with while the run waits for its host.
func (p *Pack) runForCall(ctx context.Context, creq *mcp.CallToolRequest, req RunRequest) (*Run, *mcp.CallToolResult, error) {
	req.Caller = callerFor(ctx)
	if creq == nil {
		return p.runNow(ctx, req)
	}
	if junction.RequestVersion(ctx, creq) < junction.StatelessProtocolVersion {
		// Before 2026-07-28 the host is asked through its session, if
		// the call has one.
		if host := junction.HostSession(ctx); host != nil {
			req.Host = callHost{ss: host, caps: junction.RequestCapabilities(ctx, creq)}
		}
		return p.runNow(ctx, req)
	}
	if state := creq.Params.RequestState; state != "" {
		p.rounds.mu.Lock()
		pr := p.rounds.parked[state]
		delete(p.rounds.parked, state)
		p.rounds.mu.Unlock()
		if pr == nil || pr.pending == nil {
			return nil, nil, fmt.Errorf("unknown or expired requestState: the run it belonged to has ended; start the diagram again")
		}
		pr.pending.answer <- creq.Params.InputResponses[inputKey]
		pr.pending = nil
		return p.await(ctx, pr)
	}
	host := &roundsHost{caps: junction.RequestCapabilities(ctx, creq), asks: make(chan *question)}
	req.Host = host
	r, err := p.Start(req)
	if err != nil {
		return r, nil, err
	}
	pr := &parkedRun{id: r.SessionID, host: host, done: make(chan struct{})}
	go func() {
		p.Wait(context.Background(), pr.id)
		close(pr.done)
	}()
	return p.await(ctx, pr)
}

func (p *Pack) runNow(ctx context.Context, req RunRequest) (*Run, *mcp.CallToolResult, error) {
	r, err := p.Run(ctx, req)
	return r, nil, err
}

// await waits until pr's run ends (its record is returned) or asks its
// host something (the input-required result is returned, and the run is
// parked under a new request state). A call cancelled while the run is
// going on cancels the run.
func (p *Pack) await(ctx context.Context, pr *parkedRun) (*Run, *mcp.CallToolResult, error) {
	select {
	case <-pr.done:
		r, err := p.Result(context.WithoutCancel(ctx), pr.id)
		return r, nil, err
	case q := <-pr.host.asks:
		pr.pending = q
		state := "dgm_" + randomHex(16)
		p.rounds.mu.Lock()
		if p.rounds.parked == nil {
			p.rounds.parked = map[string]*parkedRun{}
		}
		p.rounds.parked[state] = pr
		p.rounds.mu.Unlock()
		// Forget the state when the run ends without being asked again
		// (its timeout, cancel_run, shutdown).
		go func() {
			<-pr.done
			p.rounds.mu.Lock()
			delete(p.rounds.parked, state)
			p.rounds.mu.Unlock()
		}()
		return nil, &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{inputKey: q.req}, RequestState: state}, nil
	case <-ctx.Done():
		p.mu.Lock()
		a := p.active[pr.id]
		p.mu.Unlock()
		if a != nil {
			a.cancel(errCallerCancelled)
			<-pr.done
		}
		r, err := p.Result(context.WithoutCancel(ctx), pr.id)
		return r, nil, err
	}
}

var errCallerCancelled = errors.New("the caller cancelled the request")
