package toolbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/protobuf/proto"

	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
)

func TestToolFromProto(t *testing.T) {
	t.Parallel()
	yes := true
	got, err := toolFromProto(&toolboxv1.Tool{
		Name: "t", Title: "T", Description: "d",
		InputSchemaJson:  `{ "type": "object", "properties": {"n": {"type": "integer", "minimum": 1}} }`,
		OutputSchemaJson: `{"type":"object"}`,
		Annotations:      &toolboxv1.ToolAnnotations{ReadOnlyHint: &yes, DestructiveHint: &yes},
		MetaJson:         `{"k":"v"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(got)
	want := `{"_meta":{"k":"v"},"annotations":{"destructiveHint":true,"idempotentHint":false,"readOnlyHint":true},"description":"d",` +
		`"inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":1}}},"name":"t","outputSchema":{"type":"object"},"title":"T"}`
	if diff := cmp.Diff(want, string(b)); diff != "" {
		t.Errorf("toolFromProto (-want +got):\n%s", diff)
	}

	none, err := toolFromProto(&toolboxv1.Tool{Name: "bare"})
	if err != nil || string(none.InputSchema.(json.RawMessage)) != `{"type":"object"}` {
		t.Errorf("tool without a schema: %v, %v; want {\"type\":\"object\"}", none, err)
	}

	for _, bad := range []*toolboxv1.Tool{
		{Name: ""},
		{Name: "x", InputSchemaJson: `[]`},
		{Name: "x", InputSchemaJson: `{"type":"string"}`},
		{Name: "x", InputSchemaJson: `{"type":"object"`},
		{Name: "x", OutputSchemaJson: `{}`},
		{Name: "x", MetaJson: `1`},
	} {
		if _, err := toolFromProto(bad); err == nil {
			t.Errorf("toolFromProto(%v) succeeded, want an error", bad)
		}
	}
}

func TestCallResultErrors(t *testing.T) {
	t.Parallel()
	res, err := callResultFromProto("t", &toolboxv1.CallToolResult{Error: &toolboxv1.Error{
		Code: toolboxv1.ErrorCode_ERROR_CODE_INVALID_ARGUMENT, Message: "bad n", Retryable: true,
		FieldViolations: []*toolboxv1.FieldViolation{{Field: "n", Description: "too small"}},
		DetailsJson:     `{"min":1}`,
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"ok":false,"tool":"t","error":{"code":"INVALID_ARGUMENT","message":"bad n","retryable":true,"field_violations":[{"field":"n","description":"too small"}],"details":{"min":1}}}`
	if !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != want {
		t.Errorf("structured error result = %+v, want isError with %s", res, want)
	}
	for _, bad := range []*toolboxv1.CallToolResult{
		nil,
		{StructuredContentJson: `{`},
		{Content: []*toolboxv1.Content{{}}},
		{Content: []*toolboxv1.Content{{Kind: &toolboxv1.Content_Image{Image: &toolboxv1.ImageContent{}}}}},
		{Error: &toolboxv1.Error{DetailsJson: "nope"}},
	} {
		if _, err := callResultFromProto("t", bad); err == nil {
			t.Errorf("callResultFromProto(%v) succeeded, want an error", bad)
		}
	}
	if got := ErrorCodeName(toolboxv1.ErrorCode(999)); got != "TOOL_ERROR" {
		t.Errorf("ErrorCodeName(999) = %q", got)
	}
}

// FuzzCallResult feeds arbitrary protobuf bytes to the result transcoder:
// whatever a plugin sends, the hub gets an MCP result that marshals, or an
// error, never a panic.
func FuzzCallResult(f *testing.F) {
	size := int64(3)
	seed := &toolboxv1.CallToolResult{
		Content: []*toolboxv1.Content{
			{Kind: &toolboxv1.Content_Text{Text: &toolboxv1.TextContent{Text: "hi"}}, MetaJson: `{"a":1}`},
			{Kind: &toolboxv1.Content_Image{Image: &toolboxv1.ImageContent{Data: []byte{1}, MimeType: "image/png"}}, Annotations: &toolboxv1.Annotations{Audience: []toolboxv1.Role{1, 2}}},
			{Kind: &toolboxv1.Content_ResourceLink{ResourceLink: &toolboxv1.ResourceLink{Uri: "a://b", Size: &size}}},
			{Kind: &toolboxv1.Content_Resource{Resource: &toolboxv1.EmbeddedResource{Resource: &toolboxv1.ResourceContents{Uri: "a://c", Body: &toolboxv1.ResourceContents_Text{Text: "x"}}}}},
		},
		StructuredContentJson: `{"n":1}`,
		Error:                 &toolboxv1.Error{Code: 2, Message: "m", DetailsJson: `[1]`},
	}
	b, _ := proto.Marshal(seed)
	f.Add(b)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var r toolboxv1.CallToolResult
		if err := proto.Unmarshal(data, &r); err != nil {
			return
		}
		res, err := callResultFromProto("t", &r)
		if err != nil {
			return
		}
		if _, err := json.Marshal(res); err != nil {
			t.Fatalf("transcoded result does not marshal: %v", err)
		}
	})
}

// FuzzToolSchema checks that any schema text either becomes a tool whose
// input schema is a JSON object with "type":"object" (what go-sdk's
// AddTool requires; a violation would panic the hub's view) or is
// rejected.
func FuzzToolSchema(f *testing.F) {
	f.Add(`{"type":"object"}`, `{"type":"object","properties":{"x":{}}}`)
	f.Add(`{"type":["object"]}`, ``)
	f.Add(`{"type":"object","type":"string"}`, `null`)
	f.Add(` {"type" : "object"} `, `{"type":"object"}`)
	f.Fuzz(func(t *testing.T, in, out string) {
		tool, err := toolFromProto(&toolboxv1.Tool{Name: "f", InputSchemaJson: in, OutputSchemaJson: out})
		if err != nil {
			return
		}
		raw := tool.InputSchema.(json.RawMessage)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil || m["type"] != "object" {
			t.Fatalf("input schema %q accepted as %s, which is not an object schema", in, raw)
		}
		if !strings.HasPrefix(string(raw), "{") {
			t.Fatalf("input schema %s does not start with {", raw)
		}
		server := mcp.NewServer(&mcp.Implementation{Name: "f"}, nil)
		server.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
	})
}
