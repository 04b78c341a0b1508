package core

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// typed is junction_version as junction.AddTool would build it: the
// reference the raw tool must match.
func typed() *junction.Pack {
	p := junction.NewPack(Name)
	t := versionTool()
	t.InputSchema, t.OutputSchema = nil, nil
	junction.AddTool(p, t, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, VersionOutput, error) {
		return nil, output(), nil
	})
	return p
}

// asJSON turns v into generic JSON, so that a *jsonschema.Schema and a
// json.RawMessage of the same schema compare equal.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSchemasMatchTyped(t *testing.T) {
	ctx := context.Background()
	raw, err := New().Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := typed().Catalog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(asJSON(t, ref.Tools), asJSON(t, raw.Tools)); diff != "" {
		t.Errorf("tools differ from the typed tool's (-typed +raw):\n%s", diff)
	}
}

func TestCallMatchesTyped(t *testing.T) {
	ctx := context.Background()
	raw, ref := New(), typed()
	for _, args := range []string{"", "null", "{}", `{"x":1}`, "[1]", `"s"`, "3"} {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "junction_version"}}
		if args != "" {
			req.Params.Arguments = json.RawMessage(args)
		}
		got, gotErr := raw.CallTool(ctx, req)
		want, wantErr := ref.CallTool(ctx, req)
		if (gotErr != nil) != (wantErr != nil) {
			t.Errorf("arguments %q: error %v, typed tool's %v", args, gotErr, wantErr)
			continue
		}
		if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
			t.Errorf("arguments %q: result differs from the typed tool's (-typed +raw):\n%s", args, diff)
		}
	}
}

// TestVersionHasBuildTime: the description promises the build time, so
// the result always has one, "unknown" when the binary does not know it
// (as in a test binary, which has no VCS stamp).
func TestVersionHasBuildTime(t *testing.T) {
	res, err := New().CallTool(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "junction_version"}})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]string
	if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &out); err != nil {
		t.Fatalf("structured content %v: %v", res.StructuredContent, err)
	}
	want := buildinfo.BuildTime()
	if want == "" {
		want = UnknownBuildTime
	}
	if got, ok := out["build_time"]; !ok || got != want {
		t.Errorf("build_time = %q (present %v), want %q; result %v", got, ok, want, out)
	}
	var schema struct{ Required []string }
	if err := json.Unmarshal(versionTool().OutputSchema.(json.RawMessage), &schema); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(schema.Required, "build_time") {
		t.Errorf("output schema requires %v, want build_time among them", schema.Required)
	}
}
