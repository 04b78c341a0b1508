package junction_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// discoveryHub returns a hub with two sources whose tools a search can
// tell apart, and its view in search mode narrowed by sel.
func discoveryHub(t *testing.T, opts *junction.Options, sel junction.Selection, pinned ...string) (*junction.Hub, *junction.View, *junction.Pack) {
	t.Helper()
	h := junction.New(opts)
	t.Cleanup(func() { h.Close() })
	gh := junction.NewPack("github")
	for _, tool := range []struct{ name, desc string }{
		{"create_issue", "Create a new issue in a GitHub repository"},
		{"list_pull_requests", "List the pull requests of a repository"},
		{"merge_pull_request", "Merge a pull request"},
	} {
		gh.AddTool(&mcp.Tool{Name: tool.name, Description: tool.desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"repo":{"type":"string"}}}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "github/" + req.Params.Name}}}, nil
			})
	}
	fs := junction.NewPack("fs")
	for _, tool := range []struct{ name, desc string }{
		{"read_file", "Read the contents of a file"},
		{"write_file", "Write text to a file, replacing it"},
	} {
		fs.AddTool(&mcp.Tool{Name: tool.name, Description: tool.desc, InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fs/" + req.Params.Name + ":" + string(req.Params.Arguments)}}}, nil
			})
	}
	add(t, h, "github", gh, junction.PrefixAlways)
	add(t, h, "fs", fs, junction.PrefixAlways)
	v, err := h.NewView("", sel)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch, Pinned: pinned}); err != nil {
		t.Fatal(err)
	}
	return h, v, gh
}

func search(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, junction.SearchResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: args})
	if err != nil {
		t.Fatalf("search_tools %v: %v", args, err)
	}
	var out junction.SearchResult
	if !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	return res, out
}

func hitNames(r junction.SearchResult) []string {
	var names []string
	for _, h := range r.Tools {
		names = append(names, h.Name)
	}
	return names
}

func TestSearchModeListsMetaAndPinnedOnly(t *testing.T) {
	_, v, _ := discoveryHub(t, nil, junction.Selection{}, "fs__read_*")
	want := []string{"search_tools", "describe_tools", "call_tool", "fs__read_file"}
	cs1 := connect(t, v, nil)
	if diff := cmp.Diff(want, listNames(t, cs1)); diff != "" {
		t.Fatalf("tools/list (-want +got):\n%s", diff)
	}
	// Searching and calling change nothing in anyone's list.
	search(t, cs1, map[string]any{"query": "merge a pull request"})
	callText(t, cs1, "github__create_issue", map[string]any{"repo": "x"})
	if diff := cmp.Diff(want, listNames(t, cs1)); diff != "" {
		t.Errorf("tools/list after a search (-want +got):\n%s", diff)
	}
	cs2 := connect(t, v, nil)
	if diff := cmp.Diff(want, listNames(t, cs2)); diff != "" {
		t.Errorf("tools/list of a second connection (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, v.ListedToolNames()); diff != "" {
		t.Errorf("ListedToolNames (-want +got):\n%s", diff)
	}
	if got := len(v.ToolNames()); got != 5 {
		t.Errorf("ToolNames has %d tools, want the 5 callable ones", got)
	}

	// Back to list mode: every tool, no meta-tool.
	if err := v.SetDiscovery(junction.Discovery{}); err != nil {
		t.Fatal(err)
	}
	all := []string{"fs__read_file", "fs__write_file", "github__create_issue", "github__list_pull_requests", "github__merge_pull_request"}
	if diff := cmp.Diff(all, listNames(t, cs2)); diff != "" {
		t.Errorf("tools/list in list mode (-want +got):\n%s", diff)
	}
}

func TestSearchModeCallsUnlistedToolsDirectly(t *testing.T) {
	_, v, _ := discoveryHub(t, nil, junction.Selection{})
	cs := connect(t, v, nil)
	text, isErr := callText(t, cs, "fs__write_file", map[string]any{"path": "a"})
	if isErr || text != `fs/write_file:{"path":"a"}` {
		t.Errorf("direct call of an unlisted tool = %q (isError %v)", text, isErr)
	}
	// call_tool gives the same result.
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "fs__write_file", "arguments": map[string]any{"path": "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != text || res.IsError {
		t.Errorf("call_tool = %q (isError %v), want %q as a direct call gives", got, res.IsError, text)
	}
}

func TestSearchToolFindsAndStaysInsideTheView(t *testing.T) {
	h, v, _ := discoveryHub(t, nil, junction.Selection{})
	cs := connect(t, v, nil)
	res, out := search(t, cs, map[string]any{"query": "merge a pull request", "limit": 2})
	if res.IsError || len(out.Tools) == 0 || out.Tools[0].Name != "github__merge_pull_request" || out.Tools[0].Server != "github" {
		t.Fatalf("search = %+v (isError %v), want github__merge_pull_request first", out, res.IsError)
	}
	if len(out.Tools) > 2 || out.Matched < len(out.Tools) {
		t.Errorf("limit 2 returned %d tools, matched %d", len(out.Tools), out.Matched)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "tools matched") || !strings.Contains(text, "github__merge_pull_request — Merge a pull request") {
		t.Errorf("search text = %q", text)
	}
	_, out = search(t, cs, map[string]any{"query": "file", "server": "fs"})
	for _, h := range out.Tools {
		if h.Server != "fs" {
			t.Errorf("server filter fs returned %+v", h)
		}
	}

	// A profile of fs alone, and one that denies a github tool.
	fsOnly, err := h.NewView("fs-only", junction.Selection{Sources: []string{"fs"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fsOnly.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	_, out = search(t, connect(t, fsOnly, nil), map[string]any{"query": "pull request issue repository file", "limit": 50})
	for _, name := range hitNames(out) {
		if !strings.HasPrefix(name, "fs__") {
			t.Errorf("fs-only profile found %q", name)
		}
	}
	if out.Matched != len(out.Tools) || out.Matched > 2 {
		t.Errorf("fs-only matched %d (tools %v): tools outside the view were counted", out.Matched, hitNames(out))
	}
	denied, err := h.NewView("denied", junction.Selection{Deny: []string{"github__merge_pull_request"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := denied.SearchTools(t.Context(), "merge a pull request", junction.SearchOptions{}); err != nil || len(r.Tools) > 0 && r.Tools[0].Name == "github__merge_pull_request" {
		t.Errorf("search of a view that denies the tool = %+v, %v", r, err)
	} else {
		for _, hit := range r.Tools {
			if hit.Name == "github__merge_pull_request" {
				t.Errorf("denied tool found: %+v", r)
			}
		}
	}
	if _, err := fsOnly.SearchTools(t.Context(), "x", junction.SearchOptions{Server: "github"}); err == nil || !strings.Contains(err.Error(), `no server "github" among the servers of these tools (fs)`) {
		t.Errorf("server outside the view: err = %v", err)
	}
}

func TestSearchToolErrors(t *testing.T) {
	_, v, _ := discoveryHub(t, nil, junction.Selection{})
	cs := connect(t, v, nil)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": "  "}, "query must not be empty"},
		{map[string]any{}, "query is required"},
		{map[string]any{"query": strings.Repeat("a", 4097)}, "over the limit of 4096"},
		{map[string]any{"query": "file", "limit": 0}, "limit must be between 1 and 50"},
		{map[string]any{"query": "file", "limit": 51}, "limit must be between 1 and 50"},
		{map[string]any{"query": "file", "server": "nope"}, `no server "nope"`},
		{map[string]any{"query": "file", "extra": 1}, "invalid arguments"},
	} {
		res, _ := search(t, cs, tc.args)
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, tc.want) {
			t.Errorf("search_tools %v = %+v, want a tool error saying %q", tc.args, res.Content, tc.want)
		}
	}
}

func TestDescribeTools(t *testing.T) {
	h, _, _ := discoveryHub(t, nil, junction.Selection{})
	v, err := h.NewView("fs-only", junction.Selection{Sources: []string{"fs"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "describe_tools", Arguments: map[string]any{"names": []string{"fs__read_file", "nope", "github__create_issue"}}})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		Errors []struct{ Name, Error string } `json:"errors"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	if res.IsError || len(out.Tools) != 1 || out.Tools[0].Name != "fs__read_file" || out.Tools[0].Description != "Read the contents of a file" || !strings.Contains(string(out.Tools[0].InputSchema), `"path"`) {
		t.Errorf("describe_tools tools = %+v (isError %v)", out.Tools, res.IsError)
	}
	// A name outside the view reads as one that does not exist, in the
	// words a direct call gets.
	_, direct := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "github__create_issue"})
	var werr *jsonrpc.Error
	if !errors.As(direct, &werr) {
		t.Fatalf("direct call outside the view: %v", direct)
	}
	want := []struct{ Name, Error string }{{"nope", `unknown tool "nope"`}, {"github__create_issue", werr.Message}}
	if diff := cmp.Diff(want, out.Errors); diff != "" {
		t.Errorf("describe_tools errors (-want +got):\n%s", diff)
	}
	for _, args := range []map[string]any{{"names": []string{}}, {"names": make([]string, 21)}} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "describe_tools", Arguments: args})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "1 to 20") {
			t.Errorf("describe_tools %d names = %+v, %v", len(args["names"].([]string)), res, err)
		}
	}

	// call_tool of a name outside the view: the error a direct call gets.
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "github__create_issue"}})
	var cerr *jsonrpc.Error
	if !errors.As(err, &cerr) || cerr.Message != werr.Message || cerr.Code != werr.Code {
		t.Errorf("call_tool outside the view: %v, want %v", err, werr)
	}
}

func TestSearchModeCatalogChange(t *testing.T) {
	_, v, gh := discoveryHub(t, nil, junction.Selection{})
	changed := make(chan struct{}, 10)
	cs := connect(t, v, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	desc := func() string {
		for tool, err := range cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name == "search_tools" {
				return tool.Description
			}
		}
		t.Fatal("no search_tools listed")
		return ""
	}
	before := desc()
	if !strings.Contains(before, "Searches the 5 tools of 2 servers") || !strings.Contains(before, "github: 3 tools such as create_issue") ||
		!strings.Contains(before, "before concluding that a tool does not exist") || !strings.Contains(before, "call_tool") {
		t.Errorf("search_tools description = %q", before)
	}
	gh.AddTool(&mcp.Tool{Name: "close_issue", Description: "Close an issue", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "closed"}}}, nil
		})
	deadline := time.After(5 * time.Second)
	for !strings.Contains(desc(), "Searches the 6 tools") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("search_tools description not updated: %q", desc())
		}
	}
	if diff := cmp.Diff([]string{"search_tools", "describe_tools", "call_tool"}, listNames(t, cs)); diff != "" {
		t.Errorf("tools/list after a change (-want +got):\n%s", diff)
	}
	_, out := search(t, cs, map[string]any{"query": "close an issue"})
	if len(out.Tools) == 0 || out.Tools[0].Name != "github__close_issue" {
		t.Errorf("new tool not found: %+v", out)
	}
}

func TestSearchModeNameClash(t *testing.T) {
	h := newHub(t)
	add(t, h, "p", newPack("p", "search_tools", "other"), junction.PrefixNever)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	err = v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch})
	var clash *junction.ClashError
	if !errors.As(err, &clash) || !strings.Contains(err.Error(), `meta-tool "search_tools" clashes with the tool "search_tools" of source "p"`) {
		t.Fatalf("SetDiscovery = %v, want a clash naming both", err)
	}
	if diff := cmp.Diff([]string{"other", "search_tools"}, listNames(t, connect(t, v, nil))); diff != "" {
		t.Errorf("a refused SetDiscovery changed the list (-want +got):\n%s", diff)
	}
	// Another name for the meta-tool works.
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch, Names: junction.MetaToolNames{Search: "find_tools"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"find_tools", "describe_tools", "call_tool"}, listNames(t, connect(t, v, nil))); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	for _, bad := range []junction.Discovery{
		{Pinned: []string{"a["}},
		{Names: junction.MetaToolNames{Search: "x", Call: "x"}},
		{Names: junction.MetaToolNames{Describe: "has space"}},
	} {
		if err := v.SetDiscovery(bad); err == nil {
			t.Errorf("SetDiscovery(%+v) = nil, want an error", bad)
		}
	}
}

func TestSearchModeObservedCalls(t *testing.T) {
	var mu sync.Mutex
	var seen []junction.CallInfo
	opts := &junction.Options{Observe: func(ci junction.CallInfo) {
		mu.Lock()
		seen = append(seen, ci)
		mu.Unlock()
	}}
	_, v, _ := discoveryHub(t, opts, junction.Selection{})
	cs := connect(t, v, nil)
	_, out := search(t, cs, map[string]any{"query": "read a file"})
	cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "fs__read_file", "arguments": map[string]any{"path": "x"}}})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("observed %d calls, want 2: %+v", len(seen), seen)
	}
	if s := seen[0]; s.Tool != "search_tools" || s.Source != junction.MetaSource || s.Query != "read a file" || s.Matched != out.Matched || s.Outcome != "ok" {
		t.Errorf("search observed as %+v", s)
	}
	if c := seen[1]; c.Tool != "fs__read_file" || c.Source != "fs" || string(c.Arguments()) != `{"path":"x"}` || c.Query != "" {
		t.Errorf("call_tool observed as %+v (arguments %s), want the named tool's call", c, c.Arguments())
	}
}

func TestCallToolForwardsProgress(t *testing.T) {
	h := newHub(t)
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			junction.NotifyProgress(ctx, junction.HostSession(ctx), &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	add(t, h, "p", p, junction.PrefixNever)
	v, _ := h.NewView("", junction.Selection{})
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	progress := make(chan string, 1)
	cs := connect(t, v, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progress <- req.Params.Message
	}})
	params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "slow"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "done" {
		t.Fatalf("call_tool slow = %+v, %v", res, err)
	}
	select {
	case msg := <-progress:
		if msg != "half" {
			t.Errorf("progress message %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress notification through call_tool")
	}
}

// instructed is a pack whose catalog says what the server is for.
type instructed struct {
	*junction.Pack
	title, instructions string
}

func (s instructed) Catalog(ctx context.Context) (*junction.Catalog, error) {
	c, err := s.Pack.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	cc := *c
	cc.Title, cc.Instructions = s.title, s.instructions
	return &cc, nil
}

// TestSearchFindsByServerText: a query in the words of a server's title
// or instructions (and in none of its tools') finds that server's tools.
func TestSearchFindsByServerText(t *testing.T) {
	h, v, _ := discoveryHub(t, nil, junction.Selection{})
	p := junction.NewPack("acme")
	p.AddTool(&mcp.Tool{Name: "lookup", Description: "Look up a record by its key", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	add(t, h, "acme", instructed{Pack: p, title: "Zanzibar Ledger", instructions: "Bookkeeping for the warehouse: invoices and shipments."}, junction.PrefixAlways)
	for _, q := range []string{"zanzibar ledger record", "warehouse invoices"} {
		r, err := v.SearchTools(t.Context(), q, junction.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if names := hitNames(*r); len(names) == 0 || names[0] != "acme__lookup" {
			t.Errorf("search %q = %v, want acme__lookup first", q, names)
		}
	}
}
