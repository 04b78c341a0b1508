package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	long := strings.Repeat("x", 50)
	tools := []Tool{
		{Server: "Git (geropl)", Name: "git_status"},
		{Server: "Git (geropl)", Name: "git_log"},
		{Server: "Git [geropl]", Name: "git_status"},             // sanitises like the first server
		{Server: "Bazi MCP (八字 MCP) by Cantian AI", Name: "get"}, // non-ASCII dropped
		{Server: "八字", Name: "get"},                              // nothing left
		{Server: "Context7 MCP - Up-to-date Code Docs For Any Prompt", Name: "resolve-library-id"},
		{Server: "Long", Name: long + "_a"},
		{Server: "Long server name", Name: long},
	}
	names, keys, err := Names(tools)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Git_geropl__git_status",
		"Git_geropl__git_log",
		"Git_geropl_2__git_status",
		"Bazi_MCP_MCP_by_Cantian_AI__get",
		"s__get",
		"Context7_MCP_Up_to_date_Code_Doc__resolve-library-id",
		"Long__" + long + "_a",
		"Long_server__" + long,
	}
	for i, n := range names {
		if n != want[i] {
			t.Errorf("name %d = %q, want %q", i, n, want[i])
		}
		if !validName(n) || len(n) > MaxNameLen {
			t.Errorf("%q is not a valid name of at most %d bytes", n, MaxNameLen)
		}
		if keys[n] != tools[i].Key() {
			t.Errorf("keys[%q] = %q, want %q", n, keys[n], tools[i].Key())
		}
	}
	if len(keys) != len(tools) {
		t.Errorf("%d keys for %d tools", len(keys), len(tools))
	}
	servers, err := Servers(tools)
	if err != nil {
		t.Fatal(err)
	}
	for i, tool := range tools {
		if p := servers[tool.Server] + "__" + tool.Name; p != want[i] {
			t.Errorf("Servers()[%q] + tool = %q, want %q", tool.Server, p, want[i])
		}
	}

	if _, _, err := Names([]Tool{{Server: "a", Name: "x"}, {Server: "a", Name: "x"}}); err == nil {
		t.Error("a key given twice: no error")
	}
	if _, _, err := Names([]Tool{{Server: "a", Name: "has space"}}); err == nil {
		t.Error("an invalid tool name: no error")
	}
	if _, err := Servers([]Tool{{Server: "a", Name: "has space"}}); err == nil {
		t.Error("Servers, an invalid tool name: no error")
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "catalog.json")
	os.WriteFile(path, []byte(`[{"server": "S", "name": "t", "description": "d", "inputSchema": {"type": "object"}}]`), 0o600)
	tools, err := Load(path)
	if err != nil || len(tools) != 1 || tools[0].Key() != "S/t" || string(tools[0].InputSchema) != `{"type": "object"}` {
		t.Fatalf("Load = %+v, %v", tools, err)
	}
	os.WriteFile(path, []byte(`{`), 0o600)
	if _, err := Load(path); err == nil {
		t.Error("Load of bad JSON: no error")
	}
}
