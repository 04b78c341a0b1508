package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/internal/embed/embedtest"
)

// TestDiscoverySearchMode serves the npm server-everything and
// server-filesystem in the "search" discovery mode, over stdio and HTTP,
// to hosts of both protocol eras: tools/list holds
// the meta-tools and the pinned tools only, search_tools finds
// everything__echo from what it does, call_tool and a direct call of the
// unlisted tool both work, a profile without server-everything never
// finds its tools, and each search is an audit line with its query.
func TestDiscoverySearchMode(t *testing.T) {
	node, everything := everythingCmd(t)
	_, mods := nodeTools(t)
	fsScript := filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-filesystem"), "dist", "index.js")
	root := t.TempDir()
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
  files:
    command: %q
    args: [%q, %q]
discovery:
  mode: search
  pinned: ["files__list_*"]
profiles:
  fsonly:
    servers: [files]
    discovery: {mode: search}
`, node, everything, node, fsScript, root))
	audit := filepath.Join(dir, "audit.jsonl")
	url := startServe(t, "-insecure-no-auth", "-config", cfg, "-audit", audit)

	sessions := map[string]func(t *testing.T) *mcp.ClientSession{
		"http-2026-07-28": func(t *testing.T) *mcp.ClientSession { return connectHTTPEra(t, url, "") },
		"http-2025-11-25": func(t *testing.T) *mcp.ClientSession { return connectHTTPEra(t, url, "2025-11-25") },
		"stdio-2026-07-28": func(t *testing.T) *mcp.ClientSession {
			return connectStdioOpts(t, newClient(nil), newOutput(), nil, "-config", cfg)
		},
		"stdio-2025-11-25": func(t *testing.T) *mcp.ClientSession {
			return connectStdioOpts(t, newClient(nil), newOutput(), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, "-config", cfg)
		},
	}
	for name, connect := range sessions {
		t.Run(name, func(t *testing.T) {
			cs := connect(t)
			t.Logf("protocol %s", cs.InitializeResult().ProtocolVersion)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			var hits []searchHit
			waitFor(t, "search_tools to find everything__echo", 60*time.Second, func() bool {
				hits = searchTools(t, ctx, cs, "echo a message back")
				return len(hits) > 0 && hits[0].Name == "everything__echo"
			})
			names := toolNames(t, cs)
			if len(names) < 4 || !hasName(names, "search_tools") || !hasName(names, "describe_tools") || !hasName(names, "call_tool") || !hasName(names, "files__list_directory") {
				t.Errorf("tools/list = %v, want the meta-tools and the pinned files__list_* tools", names)
			}
			for _, n := range names {
				if n != "search_tools" && n != "describe_tools" && n != "call_tool" && !strings.HasPrefix(n, "files__list_") {
					t.Errorf("tools/list lists %q, which is neither a meta-tool nor pinned", n)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "direct"}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "direct") {
				t.Errorf("direct call of the unlisted everything__echo = %+v, %v", res, err)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "through call_tool"}}})
			if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through call_tool") {
				t.Errorf("call_tool everything__echo = %+v, %v", res, err)
			}
			if again := toolNames(t, cs); strings.Join(again, ",") != strings.Join(names, ",") {
				t.Errorf("tools/list changed after searching and calling: %v, then %v", names, again)
			}
		})
	}

	t.Run("profile", func(t *testing.T) {
		cs := connectHTTPEra(t, url+"/p/fsonly", "")
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		waitFor(t, "the files tools in the profile", 60*time.Second, func() bool {
			return len(searchTools(t, ctx, cs, "list directory")) > 0
		})
		for _, q := range []string{"echo a message back", "echo message add numbers sum long running operation environment"} {
			for _, h := range searchTools(t, ctx, cs, q) {
				if !strings.HasPrefix(h.Name, "files__") {
					t.Errorf("profile fsonly found %q for %q", h.Name, q)
				}
			}
		}
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "everything__echo", "arguments": map[string]any{"message": "x"}}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || !strings.Contains(werr.Message, `unknown tool "everything__echo"`) {
			t.Errorf("call_tool of a tool outside the profile: %v", err)
		}
	})

	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var l struct {
			Tool, Source, Query string
			Matched             *int
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Tool == "search_tools" && l.Query == "echo a message back" && l.Matched != nil && *l.Matched > 0 && l.Source == "junction" {
			found = true
		}
	}
	if !found {
		t.Errorf("no audit line of search_tools with its query and matched count in:\n%s", b)
	}
}

type searchHit struct{ Name, Server, Description string }

func searchTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession, query string) []searchHit {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query, "limit": 50}})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %q = %+v, %v", query, res, err)
	}
	var out struct {
		Matched int
		Tools   []searchHit
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out.Matched < len(out.Tools) {
		t.Fatalf("search_tools structured content %s: %v", b, err)
	}
	return out.Tools
}

// connectHTTPEra is connectHTTP for a host of protocol version (""
// means go-sdk's latest).
func connectHTTPEra(t *testing.T, mcpURL, version string) *mcp.ClientSession {
	t.Helper()
	hc := httpClient("")
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: hc, MaxRetries: -1}, opts)
	if err != nil {
		hc.CloseIdleConnections()
		t.Fatalf("connecting over HTTP to %s: %v", mcpURL, err)
	}
	t.Cleanup(func() {
		cs.Close()
		hc.CloseIdleConnections()
	})
	return cs
}

// TestSemanticSearchThroughBinary: `junction tools search` with a config
// whose discovery has an embeddings endpoint finds the real
// server-everything's get-tiny-image for a query in none of its words
// ("a little photo"); with the endpoint failing, it still answers, by
// words.
func TestSemanticSearchThroughBinary(t *testing.T) {
	node, everything := everythingCmd(t)
	srv := embedtest.NewServer([][]string{{"photo", "image", "picture", "logo"}, {"little", "tiny", "small"}, {"add", "sum", "plus"}})
	defer srv.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
discovery:
  mode: search
  semantic:
    url: %q
    model: concepts
`, node, everything, srv.URL+"/v1"))
	out, stderr, code := runJunction(t, nil, "tools", "search", "-config", cfg, "-no-default-packs", "-o", "json", "a little photo")
	if code != 0 {
		t.Fatalf("tools search exited %d: %s", code, stderr)
	}
	var r struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("tools search -o json: %v: %s", err, out)
	}
	if len(r.Tools) == 0 || r.Tools[0].Name != "everything__get-tiny-image" {
		t.Errorf("tools search %q = %+v, want everything__get-tiny-image first\n%s", "a little photo", r.Tools, stderr)
	}
	if srv.Requests.Load() == 0 {
		t.Error("the embeddings endpoint got no request")
	}

	srv.Failing.Store(true)
	out, stderr, code = runJunction(t, nil, "tools", "search", "-config", cfg, "-no-default-packs", "echo a message back")
	if code != 0 || !strings.Contains(out, "everything__echo") {
		t.Errorf("tools search with the endpoint failing: exit %d, %s\n%s", code, out, stderr)
	}
}
