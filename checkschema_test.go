package junction

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// checkToolSchema takes a shortcut for *jsonschema.Schema; it must agree
// with the marshalling path it skips.
func TestCheckToolSchemaTyped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		schema  *jsonschema.Schema
		wantErr string // "" for no error
	}{
		{"object", &jsonschema.Schema{Type: "object"}, ""},
		{"object with properties", &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"a": {Type: "string"}}}, ""},
		{"array", &jsonschema.Schema{Type: "array"}, `want "object"`},
		{"no type", &jsonschema.Schema{}, "not a JSON object"}, // marshals as true
		{"types list", &jsonschema.Schema{Types: []string{"object"}}, `want "object"`},
		{"nil schema", nil, `want "object"`},
	} {
		err := checkToolSchema(&mcp.Tool{Name: "t", InputSchema: tc.schema})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: checkToolSchema = %v, want nil", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: checkToolSchema = %v, want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}
