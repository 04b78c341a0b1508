// Package core is junction's smallest pack: junction_version, the version
// and build time of the running binary. It is on by default, so a hub with
// nothing configured still has one tool to list and call.
package core

import (
	"context"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the pack's source name.
const Name = "core"

// VersionOutput is the structured result of junction_version.
type VersionOutput struct {
	Version   string `json:"version" jsonschema:"the junction binary's version"`
	BuildTime string `json:"build_time,omitempty" jsonschema:"when the binary was built, RFC 3339"`
}

// New returns the core pack.
func New() *junction.Pack {
	p := junction.NewPack(Name)
	junction.AddTool(p, &mcp.Tool{
		Name:        "junction_version",
		Title:       "junction version",
		Description: "Return the junction binary's version and build time.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, VersionOutput, error) {
		return nil, VersionOutput{Version: buildinfo.Version(), BuildTime: buildinfo.BuildTime()}, nil
	})
	return p
}
