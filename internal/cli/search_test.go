package cli

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsSearchInProcess searches the index of the hub a config file
// describes, in list mode: the index is there whatever the mode.
func TestToolsSearchInProcess(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.yaml")
	os.WriteFile(cfg, []byte("packs: [core, diode]\nprofiles:\n  p: {servers: [core]}\n"), 0o600)
	out, errOut, code := run(t, nil, "tools", "search", "-config", cfg, "upload", "a", "tarball", "package")
	if code != 0 || !strings.Contains(out, "diode_deploy") || !strings.Contains(out, "matched") {
		t.Fatalf("tools search: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = run(t, nil, "tools", "search", "-config", cfg, "-json", "-server", "core", "-limit", "1", "version")
	var r junction.SearchResult
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.Tools) != 1 || r.Tools[0].Name != "junction_version" {
		t.Fatalf("tools search -json -server core: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-limit", "51", "x"}, "-limit 51: want 1 to 50"},
		{[]string{}, "needs a query"},
		{[]string{"-server", "nope", "x"}, `no server "nope"`},
	} {
		_, errOut, code := run(t, nil, append([]string{"tools", "search", "-config", cfg}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("tools search %v: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestToolsSearchURL calls a hub's search_tools over Streamable HTTP, and
// says what is missing when the hub is in list mode.
func TestToolsSearchURL(t *testing.T) {
	h := junction.New(nil)
	defer h.Close()
	p := junction.NewPack("things")
	p.AddTool(&mcp.Tool{Name: "echo", Description: "Echo a message back", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	if err := h.Add(t.Context(), "things", p, nil); err != nil {
		t.Fatal(err)
	}
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dataplane.New(v, nil).HTTPHandler(nil))
	defer srv.Close()

	_, errOut, code := run(t, nil, "tools", "search", "-url", srv.URL, "echo")
	if code == 0 || !strings.Contains(errOut, "has no search_tools tool") || !strings.Contains(errOut, "discovery mode is search") {
		t.Errorf("search of a hub in list mode: exit %d, stderr %q", code, errOut)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, nil, "tools", "search", "-url", srv.URL, "echo a message back")
	if code != 0 || !strings.Contains(out, "things__echo") || !strings.Contains(out, "Echo a message back") {
		t.Errorf("search over HTTP: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
