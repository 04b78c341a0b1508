package core

import (
	"context"
	"encoding/json"
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
		return nil, VersionOutput{Version: buildinfo.Version(), BuildTime: buildinfo.BuildTime()}, nil
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
