package diode

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSelect(t *testing.T) {
	tests := []struct {
		name    string
		f       ToolFilter
		want    []string
		wantErr string
	}{
		{"no filter: every tool", ToolFilter{}, nil, ""},
		{"whitespace env counts as unset", ToolFilter{Env: "  "}, nil, ""},
		{"minimal", ToolFilter{Preset: "minimal"}, []string{ToolGetVersion, ToolGetClientInfo}, ""},
		{"chain", ToolFilter{Preset: "chain"}, []string{ToolGetVersion, ToolGetClientInfo, ToolQueryAddress}, ""},
		{"files", ToolFilter{Preset: "files"}, []string{ToolGetVersion, ToolGetClientInfo, ToolFilePush, ToolFilePull}, ""},
		{"deploy includes pull", ToolFilter{Preset: "deploy"}, []string{ToolGetVersion, ToolGetClientInfo, ToolDeploy, ToolFilePull}, ""},
		{"all", ToolFilter{Preset: "all"}, ToolNames, ""},
		{"full is all", ToolFilter{Preset: "full"}, ToolNames, ""},
		{"preset trimmed and case-insensitive", ToolFilter{Preset: " Minimal "}, []string{ToolGetVersion, ToolGetClientInfo}, ""},
		{"union in order preset, env, csv, flags", ToolFilter{Preset: "minimal", Env: "diode_deploy", CSV: " diode_file_pull ,", Tools: []string{"diode_query_address", " ", "diode_deploy"}},
			[]string{ToolGetVersion, ToolGetClientInfo, ToolDeploy, ToolFilePull, ToolQueryAddress}, ""},
		{"env alone", ToolFilter{Env: "diode_deploy,diode_get_version"}, []string{ToolDeploy, ToolGetVersion}, ""},
		{"repeated flag alone", ToolFilter{Tools: []string{"diode_deploy"}}, []string{ToolDeploy}, ""},
		{"unknown preset", ToolFilter{Preset: "Everything"}, nil, `unknown -mcp-preset "everything" (use minimal, chain, files, deploy, all)`},
		{"unknown env tool", ToolFilter{Env: "diode_nope"}, nil, `DIODE_MCP_TOOLS: unknown MCP tool "diode_nope" (known: diode_deploy, diode_file_pull, diode_file_push, diode_get_client_info, diode_get_version, diode_query_address)`},
		{"unknown csv tool", ToolFilter{CSV: "diode_get_version,x"}, nil, `-mcp-tools: unknown MCP tool "x" (known: diode_deploy, diode_file_pull, diode_file_push, diode_get_client_info, diode_get_version, diode_query_address)`},
		{"unknown repeated tool", ToolFilter{Tools: []string{"Diode_deploy"}}, nil, `-mcp-tool: unknown MCP tool "Diode_deploy" (known: diode_deploy, diode_file_pull, diode_file_push, diode_get_client_info, diode_get_version, diode_query_address)`},
		{"empty selection", ToolFilter{CSV: " , "}, nil, "MCP tool selection is empty (check -mcp-preset, -mcp-tools, -mcp-tool, DIODE_MCP_TOOLS)"},
		{"empty repeated flags", ToolFilter{Tools: []string{" "}}, nil, "MCP tool selection is empty (check -mcp-preset, -mcp-tools, -mcp-tool, DIODE_MCP_TOOLS)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(tt.f)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Fatalf("Select(%+v) error = %q, want %q", tt.f, gotErr, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Select(%+v) (-want +got):\n%s", tt.f, diff)
			}
		})
	}
}
