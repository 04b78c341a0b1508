package junction

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A script pauses when one of its calls needs the host, for a host at
// protocol 2026-07-28: the call's result asks for input (an elicitation
// or a sampling, as the upstream bridge turns an older server's request
// into one). run_script then answers the host with those same input
// requests and a request state of its own; the script waits, blocked in
// that call. The host's retry of run_script with the answers and the
// state resumes it: the call is made again with the answers, and the
// script goes on. A host at an older revision answers such requests on
// its session, and no script pauses.

// scriptStatePrefix marks the request states of paused scripts.
const scriptStatePrefix = "junction-script-"

// maxPausedScripts bounds the scripts paused at once in a hub; the
// script limits (wall time) bound how long each waits.
const maxPausedScripts = 256

// A scriptRun is a script running for run_script: its outcome, the asks
// of its calls for the host, and who may resume it.
type scriptRun struct {
	owner  string // the user (or host session) that started it
	cancel context.CancelFunc
	asks   chan scriptAsk  // a call that needs the host's answers
	done   chan scriptDone // the script's end; buffered
	// progress is where the script's progress goes: the request waiting
	// for it now, if that request asked for progress; nil while none does.
	progress atomic.Pointer[progressTarget]
}

// reportTo makes the request of ctx, req, the one that gets run's
// progress, if it asked for progress and can be told (through its
// session, or its host link when it has none: NotifyProgress), and
// returns the func that stops that; a request that did not ask leaves
// the target as it is.
func (run *scriptRun) reportTo(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	token := req.Params.Meta["progressToken"]
	if token == nil || HostSession(ctx) == nil && HostLinkOf(ctx) == nil {
		return func() {}
	}
	run.progress.Store(&progressTarget{ctx: ctx, session: HostSession(ctx), token: token})
	return func() { run.progress.Store(nil) }
}

// progressTarget is a request that wants a script's progress.
type progressTarget struct {
	ctx     context.Context
	session Host
	token   any
}

// scriptAsk is one call's request for input, and where its answers go.
type scriptAsk struct {
	requests mcp.InputRequestMap
	answers  chan mcp.InputResponseMap
}

type scriptDone struct {
	out *ScriptOutput
	err error
}

// pausedScripts are the scripts waiting for a host's answers, by state.
type pausedScripts struct {
	mu sync.Mutex
	m  map[string]*pausedScript
}

type pausedScript struct {
	run *scriptRun
	ask scriptAsk
}

// scriptOwner is who may resume a script started in ctx: the
// authenticated user, else the host session.
func scriptOwner(ctx context.Context) string {
	if u := User(ctx); u != "" {
		return "user:" + u
	}
	if ss := HostSession(ctx); ss != nil {
		return "session:" + ss.ID()
	}
	return ""
}

// pause records run as waiting on ask and returns its request state.
func (p *pausedScripts) pause(run *scriptRun, ask scriptAsk) (string, error) {
	b := make([]byte, 16)
	rand.Read(b)
	state := scriptStatePrefix + hex.EncodeToString(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= maxPausedScripts {
		return "", fmt.Errorf("too many scripts are waiting for their hosts' answers (%d); try again later", maxPausedScripts)
	}
	if p.m == nil {
		p.m = make(map[string]*pausedScript)
	}
	p.m[state] = &pausedScript{run: run, ask: ask}
	return state, nil
}

// resume takes the script paused under state, if owner started it.
func (p *pausedScripts) resume(state, owner string) (*pausedScript, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ps := p.m[state]
	if ps == nil || ps.run.owner != owner {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "requestState is not that of a script waiting for this caller's answers (it ended, ran out of time, or was started by another)"}
	}
	delete(p.m, state)
	return ps, nil
}

// forget drops the pause of run, once it ended.
func (p *pausedScripts) forget(run *scriptRun) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for state, ps := range p.m {
		if ps.run == run {
			delete(p.m, state)
		}
	}
}

// askHost is what a script's call does with a result that asks for
// input: it hands the requests to run_script (and so to the host) and
// waits for the answers; nil answers mean the script is ending.
func (run *scriptRun) askHost(ctx context.Context, requests mcp.InputRequestMap) mcp.InputResponseMap {
	ask := scriptAsk{requests: requests, answers: make(chan mcp.InputResponseMap, 1)}
	select {
	case run.asks <- ask:
	case <-ctx.Done():
		return nil
	}
	select {
	case a := <-ask.answers:
		return a
	case <-ctx.Done():
		return nil
	}
}

// await waits for the script to end or to ask the host, for the request
// of ctx: it returns run_script's result, paused (an input-required
// result) or final. A cancelled request cancels the script. For a host
// that takes tasks, a script still running after scriptTaskAfter
// becomes one: the host gets the task at once, and what await returns
// becomes its outcome.
func (v *View) await(ctx context.Context, run *scriptRun) (*mcp.CallToolResult, *ScriptOutput, error) {
	var becomeTask <-chan time.Time
	if CanStartTask(ctx) {
		tm := time.NewTimer(scriptTaskAfter)
		defer tm.Stop()
		becomeTask = tm.C
	}
	for {
		select {
		case <-becomeTask:
			StartTask(ctx)
			becomeTask = nil
		case d := <-run.done:
			v.hub.paused.forget(run)
			return nil, d.out, d.err
		case ask := <-run.asks:
			state, err := v.hub.paused.pause(run, ask)
			if err != nil {
				ask.answers <- nil
				run.cancel()
				d := <-run.done
				return nil, d.out, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{}, InputRequests: ask.requests, RequestState: state}, nil, nil
		case <-ctx.Done():
			run.cancel()
			<-run.done
			v.hub.paused.forget(run)
			return nil, nil, ctx.Err()
		}
	}
}

// isScriptState reports whether a retried run_script carries the state
// of a paused script.
func isScriptState(state string) bool { return strings.HasPrefix(state, scriptStatePrefix) }

// pauseWait bounds how long a script waits, paused, for its host.
const pauseWait = 10 * time.Minute
