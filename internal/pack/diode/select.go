package diode

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/junction-mcp/junction/internal/commalist"
)

// Tool names, in the original's registration order.
const (
	ToolGetVersion    = "diode_get_version"
	ToolGetClientInfo = "diode_get_client_info"
	ToolQueryAddress  = "diode_query_address"
	ToolFilePush      = "diode_file_push"
	ToolFilePull      = "diode_file_pull"
	ToolDeploy        = "diode_deploy"
)

// ToolNames lists every tool of the pack, in registration order.
var ToolNames = []string{ToolGetVersion, ToolGetClientInfo, ToolQueryAddress, ToolFilePush, ToolFilePull, ToolDeploy}

// Presets are the original's named tool sets; "full" is an alias of "all".
var Presets = map[string][]string{
	"minimal": {ToolGetVersion, ToolGetClientInfo},
	"chain":   {ToolGetVersion, ToolGetClientInfo, ToolQueryAddress},
	"files":   {ToolGetVersion, ToolGetClientInfo, ToolFilePush, ToolFilePull},
	"deploy":  {ToolGetVersion, ToolGetClientInfo, ToolDeploy, ToolFilePull},
	"all":     ToolNames,
	"full":    ToolNames,
}

// EnvTools is the environment variable that adds tools to the selection.
const EnvTools = "DIODE_MCP_TOOLS"

// ToolFilter is what `diode mcp` reads to choose its tools.
type ToolFilter struct {
	Preset string   // -mcp-preset
	Env    string   // DIODE_MCP_TOOLS
	CSV    string   // -mcp-tools
	Tools  []string // repeated -mcp-tool
}

// Select applies the original's union rule: with no filter at all it
// returns nil (every tool); otherwise the union of the preset, the env
// list, the csv list and the repeated names, in that order, without
// duplicates. Preset names are trimmed and case-insensitive; tool names
// are exact. Errors carry the original's texts.
func Select(f ToolFilter) ([]string, error) {
	preset := strings.ToLower(strings.TrimSpace(f.Preset))
	env := strings.TrimSpace(f.Env)
	csv := strings.TrimSpace(f.CSV)
	if preset == "" && env == "" && csv == "" && len(f.Tools) == 0 {
		return nil, nil
	}
	var out []string
	add := func(origin, name string) error {
		if !slices.Contains(ToolNames, name) {
			known := slices.Sorted(slices.Values(ToolNames))
			return fmt.Errorf("%sunknown MCP tool %q (known: %s)", origin, name, strings.Join(known, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
		return nil
	}
	if preset != "" {
		names, ok := Presets[preset]
		if !ok {
			return nil, fmt.Errorf("unknown -mcp-preset %q (use minimal, chain, files, deploy, all)", preset)
		}
		for _, n := range names {
			if err := add("", n); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range commalist.Split(env) {
		if err := add(EnvTools+": ", n); err != nil {
			return nil, err
		}
	}
	for _, n := range commalist.Split(csv) {
		if err := add("-mcp-tools: ", n); err != nil {
			return nil, err
		}
	}
	for _, n := range f.Tools {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if err := add("-mcp-tool: ", n); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, ErrEmptySelection
	}
	return out, nil
}

// ErrEmptySelection is returned by [Select] when filters were given but
// name no tool.
var ErrEmptySelection = errors.New("MCP tool selection is empty (check -mcp-preset, -mcp-tools, -mcp-tool, DIODE_MCP_TOOLS)")
