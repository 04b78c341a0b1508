package junction

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCheckTool: the tool definitions a view refuses are those go-sdk's
// server refuses to add (each case is offered to one too), with the
// reason; the others pass.
func TestCheckTool(t *testing.T) {
	raw := func(s string) any { return json.RawMessage(s) }
	for _, c := range []struct {
		name   string
		in     any
		out    any
		reason string // "" when the tool is fine
	}{
		{"plain", raw(`{"type":"object"}`), nil, ""},
		{"typed schema", &jsonschema.Schema{Type: "object"}, &jsonschema.Schema{Type: "object"}, ""},
		{"no input schema", nil, nil, "missing input schema"},
		{"nil typed schema", (*jsonschema.Schema)(nil), nil, "input schema is nil"},
		{"typed schema not an object", &jsonschema.Schema{Type: "string"}, nil, `must have type "object"`},
		{"raw schema not an object", raw(`{"type":"array"}`), nil, `must have type "object" (got array)`},
		{"raw schema without a type", raw(`{"properties":{}}`), nil, `(got <nil>)`},
		{"input schema not JSON", raw(`{`), nil, "can't marshal input schema"},
		{"output schema not JSON", raw(`{"type":"object"}`), raw(`[`), "can't marshal output schema"},
		{"nil typed output schema", raw(`{"type":"object"}`), (*jsonschema.Schema)(nil), "output schema is nil"},
		{"header on a string", raw(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`), nil, ""},
		{"nested headers", raw(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"B"}}},"c":{"type":"boolean","x-mcp-header":"C"}}}`), nil, ""},
		{"header on an object", raw(`{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"O"}}}`), nil, `property "o": x-mcp-header can only be applied to primitive types`},
		{"empty header", raw(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":""}}}`), nil, `property "r": x-mcp-header must be a non-empty string`},
		{"header not a string", raw(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":7}}}`), nil, "must be a non-empty string"},
		{"header with a space", raw(`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Re gion"}}}`), nil, `contains invalid character ' '`},
		{"header twice", raw(`{"type":"object","properties":{"a":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}},"b":{"type":"string","x-mcp-header":"region"}}}`), nil, "duplicate x-mcp-header value"},
		{"a type that is not a string binds nothing", raw(`{"type":"object","properties":{"r":{"type":["string","null"],"x-mcp-header":"R R"}}}`), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool := &mcp.Tool{Name: "t", InputSchema: c.in, OutputSchema: c.out}
			err := checkTool(tool)
			if sdkErr := sdkAddTool(tool); (sdkErr != nil) != (err != nil) {
				t.Errorf("checkTool = %v, but go-sdk's server's AddTool: %v", err, sdkErr)
			}
			switch {
			case c.reason == "" && err != nil:
				t.Errorf("checkTool = %v, want nil", err)
			case c.reason != "" && (err == nil || !strings.Contains(err.Error(), c.reason)):
				t.Errorf("checkTool = %v, want an error saying %q", err, c.reason)
			}
		})
	}
}

// sdkAddTool adds t to a go-sdk server, and returns what it panicked
// with, if it did.
func sdkAddTool(t *mcp.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil).AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	return nil
}
