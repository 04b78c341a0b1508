package junction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Error codes in the tool-error body a hub returns for failures that are
// not the tool's own (see [ToolError]).
const (
	CodeSourceUnavailable = "SOURCE_UNAVAILABLE" // the source is down or reconnecting
	CodeTimeout           = "TIMEOUT"            // the call ran past its timeout
	CodeCancelled         = "CANCELLED"          // the host cancelled the call
	CodeInternal          = "INTERNAL"           // the source panicked or broke its contract
	CodeSourceError       = "SOURCE_ERROR"       // any other failure to call
)

// A ToolError is a failure to run a tool that the host should see as a
// tool result with isError set, carrying the JSON text
//
//	{"ok":false,"tool":"<name>","error":{"code":"<code>","message":"<message>"}}
//
// (the tachyon error format). Sources may return a *ToolError to choose the
// code; the hub fills in Tool.
type ToolError struct {
	Tool    string
	Code    string
	Message string
	Err     error // the cause, for errors.Is; not shown to the host
}

func (e *ToolError) Error() string {
	if e.Tool != "" {
		return fmt.Sprintf("tool %s: %s: %s", e.Tool, e.Code, e.Message)
	}
	return e.Code + ": " + e.Message
}

func (e *ToolError) Unwrap() error { return e.Err }

// Result renders e as the tool-error result a host receives.
func (e *ToolError) Result() *mcp.CallToolResult {
	body := struct {
		OK    bool   `json:"ok"`
		Tool  string `json:"tool"`
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{Tool: e.Tool}
	body.Error.Code, body.Error.Message = e.Code, e.Message
	b, _ := json.Marshal(body) // cannot fail: only strings and a bool
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// asToolError classifies err, returned by a source for tool, into a
// *ToolError.
func asToolError(tool string, err error) *ToolError {
	var te *ToolError
	if errors.As(err, &te) {
		c := *te
		c.Tool = tool
		return &c
	}
	code := CodeSourceError
	switch {
	case errors.Is(err, ErrSourceDown):
		code = CodeSourceUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		code = CodeTimeout
	case errors.Is(err, context.Canceled):
		code = CodeCancelled
	}
	return &ToolError{Tool: tool, Code: code, Message: err.Error(), Err: err}
}
