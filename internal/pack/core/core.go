// Package core is junction's smallest pack: junction_version, the version
// and build time of the running binary. It is on by default, so a hub with
// nothing configured still has one tool to list and call.
//
// The tool is added with a raw handler and fixed JSON schemas rather than
// with [junction.AddTool]: inferring, resolving and re-encoding a
// *jsonschema.Schema costs the first time about half a millisecond, paid
// by every "junction serve" before it can answer initialize
// (docs/performance.md). The schemas and the behaviour are the ones
// junction.AddTool would give (core_test.go checks both).
package core

import (
	"context"
	"encoding/json"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the pack's source name.
const Name = "core"

// VersionOutput is the structured result of junction_version.
type VersionOutput struct {
	Version   string `json:"version" jsonschema:"the junction binary's version"`
	BuildTime string `json:"build_time" jsonschema:"when the binary was built, RFC 3339 (the time of the commit it was built from, for a build without a stamped time), or unknown"`
}

// UnknownBuildTime is the build_time of a binary that knows neither when
// it was built nor the time of its commit (go build outside a checkout,
// or with -buildvcs=false).
const UnknownBuildTime = "unknown"

// The schemas junction.AddTool infers for an any input and a VersionOutput
// output.
const (
	inputSchema  = `{"type":"object"}`
	outputSchema = `{"type":"object","properties":{"version":{"type":"string","description":"the junction binary's version"},"build_time":{"type":"string","description":"when the binary was built, RFC 3339 (the time of the commit it was built from, for a build without a stamped time), or unknown"}},"required":["version","build_time"],"additionalProperties":false}`
)

// output is what junction_version returns.
func output() VersionOutput {
	bt := buildinfo.BuildTime()
	if bt == "" {
		bt = UnknownBuildTime
	}
	return VersionOutput{Version: buildinfo.Version(), BuildTime: bt}
}

// versionTool describes junction_version; New copies it.
func versionTool() *mcp.Tool {
	return &mcp.Tool{
		Name:         "junction_version",
		Title:        "junction version",
		Description:  "Return the junction binary's version and build time.",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
	}
}

// New returns the core pack.
func New() *junction.Pack {
	p := junction.NewPack(Name)
	p.AddTool(versionTool(), version)
	return p
}

// version answers junction_version as a typed tool would: arguments, if
// any, must be a JSON object (they are otherwise ignored); the output is
// both structured content and its JSON text.
func version(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		var args map[string]any
		if err := json.Unmarshal(raw, &args); err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{
				&mcp.TextContent{Text: `validating "arguments": ` + err.Error()},
			}}, nil
		}
	}
	b, err := json.Marshal(output())
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}, nil
}
