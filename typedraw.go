package junction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// typedRaw makes a raw call ([View.BeginRaw]) of a source that does not
// forward bytes (a pack, a plugin, an HTTP upstream) through its
// CallTool: the params are decoded into the request CallTool takes, with
// the host session ctx names, and the result encoded (MarshalResult). It
// answers as go-sdk's server does when it calls the same CallTool: a
// result that asks the host something goes to a host from 2026-07-28 on
// as it is, and the questions to an older host (answerAsking).
type typedRaw struct{ c *Call }

func (t typedRaw) CallToolRaw(ctx context.Context, name string, params json.RawMessage) (json.RawMessage, error) {
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call params: " + err.Error()}
	}
	p.Name = name
	ss := HostSession(ctx)
	extra := t.c.extra
	ctx = t.c.sourceContext(ctx)
	res, err := answerAsking(ctx, ss, func(answers mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
		if answers != nil {
			p.InputResponses, p.RequestState = answers, state
		}
		return t.c.src.CallTool(ctx, &mcp.CallToolRequest{Session: sdkSession(ss), Params: &p, Extra: extra})
	}, toolAsks)
	if err != nil || res == nil {
		return nil, err
	}
	return MarshalResult(res, ss)
}

// asksInResults reports whether the host of session ss (nil: a request
// that stands alone, of 2026-07-28 or later) reads questions in results
// rather than as requests: as go-sdk's server decides, by the revision
// the session was initialized with, the newest when it was not.
func asksInResults(ss Host) bool {
	if ss == nil || ss.InitializeParams() == nil {
		return true
	}
	return ParseRevision(ss.InitializeParams().ProtocolVersion).AsksInResults()
}

// askHost puts the questions of an input-required result to the host of
// session ss, at once, and returns its answers by the questions' keys.
func askHost(ctx context.Context, ss Host, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	if ss == nil {
		return nil, errors.New("the tool asks the host something, and the call has no host session to ask")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		answers  = make(mcp.InputResponseMap, len(asks))
		firstErr error
	)
	for key, ask := range asks {
		wg.Go(func() {
			var answer mcp.InputResponse
			var err error
			switch q := ask.(type) {
			case *mcp.ElicitParams:
				answer, err = ss.Elicit(ctx, q)
			case *mcp.CreateMessageParams:
				answer, err = ss.CreateMessageWithTools(ctx, withTools(q))
			case *mcp.CreateMessageWithToolsParams:
				answer, err = ss.CreateMessageWithTools(ctx, q)
			case *mcp.ListRootsParams:
				answer, err = ss.ListRoots(ctx, q)
			default:
				err = fmt.Errorf("unknown kind of question %T", ask)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("fulfilling input request %q: %w", key, err)
					cancel()
				}
				return
			}
			answers[key] = answer
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return answers, nil
}

// withTools returns sampling params in the form go-sdk's session sends
// for either kind (one content block per message becomes a list).
func withTools(p *mcp.CreateMessageParams) *mcp.CreateMessageWithToolsParams {
	msgs := make([]*mcp.SamplingMessageV2, 0, len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, &mcp.SamplingMessageV2{Content: []mcp.Content{m.Content}, Role: m.Role})
	}
	return &mcp.CreateMessageWithToolsParams{
		Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens, Messages: msgs,
		Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
		SystemPrompt: p.SystemPrompt, Temperature: p.Temperature,
	}
}
