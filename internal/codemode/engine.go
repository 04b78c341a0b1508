package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	junction "github.com/junction-mcp/junction"
)

// Engine is code mode's [junction.ScriptEngine]: it runs each script with
// [Run] within Limits.
type Engine struct {
	Limits Limits
	Logger *slog.Logger
}

var _ junction.ScriptEngine = (*Engine)(nil)

// RunScript implements [junction.ScriptEngine].
func (e *Engine) RunScript(ctx context.Context, run *junction.ScriptRun) (*junction.ScriptOutput, error) {
	funcs := make([]Func, len(run.Funcs))
	for i, f := range run.Funcs {
		funcs[i] = Func{Namespace: f.Namespace, Name: f.Name, Tool: f.Tool}
	}
	env := Env{
		Funcs:    funcs,
		Progress: run.Progress,
		Logger:   e.Logger,
		Call: func(ctx context.Context, tool string, args json.RawMessage) (CallResult, error) {
			res, err := run.Call(ctx, tool, args)
			if err != nil {
				return CallResult{}, callError{err}
			}
			return resultOf(res)
		},
	}
	r, err := Run(ctx, Script{Source: run.Source, TypeScript: run.TypeScript}, env, e.Limits)
	var out *junction.ScriptOutput
	if r != nil {
		out = &junction.ScriptOutput{Value: r.Value, Console: r.Console, Calls: r.Calls}
	}
	return out, err
}

// resultOf is a tool's result as a script sees it.
func resultOf(res *mcp.CallToolResult) (CallResult, error) {
	var cr CallResult
	if res == nil {
		return CallResult{Content: json.RawMessage("[]")}, nil
	}
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return cr, err
	}
	cr.Content = b
	if res.StructuredContent != nil && !res.IsError {
		if cr.Structured, err = json.Marshal(res.StructuredContent); err != nil {
			return cr, err
		}
	}
	if res.IsError {
		cr.IsError = true
		var texts []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
		cr.Message = strings.Join(texts, "\n")
	}
	return cr, nil
}

// callError is a protocol error of an inner call (an unknown tool,
// arguments the tool's schema refuses), with its JSON-RPC code.
type callError struct{ err error }

func (e callError) Error() string {
	var werr *jsonrpc.Error
	if errors.As(e.err, &werr) {
		return werr.Message
	}
	return e.err.Error()
}

func (e callError) Unwrap() error { return e.err }

// ErrorCode is the JSON-RPC code a script sees as err.code.
func (e callError) ErrorCode() int {
	var werr *jsonrpc.Error
	if errors.As(e.err, &werr) {
		return int(werr.Code)
	}
	return -32603
}
