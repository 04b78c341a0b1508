package junction_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// pageNames returns the names of a tools/list result of ToolsPage and
// its next cursor.
func pageNames(t *testing.T, res mcp.Result) ([]string, string) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Tools      []struct{ Name string }
		NextCursor string
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range r.Tools {
		names = append(names, tool.Name)
	}
	return names, r.NextCursor
}

// TestToolsPageCursors: ToolsPage pages the view's tools in name order
// with go-sdk's cursors, both ways: a cursor go-sdk's own server made
// resumes where go-sdk's page ended, and go-sdk's server takes ours. A
// cursor that is not one is invalid params.
func TestToolsPageCursors(t *testing.T) {
	h := junction.New(&junction.Options{PageSize: 2})
	t.Cleanup(func() { h.Close() })
	p := junction.NewPack("p")
	names := []string{"e", "b", "d", "a", "c"}
	for _, n := range names {
		p.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	add(t, h, "p", p, junction.PrefixNever)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}

	// The view's pages, first to last.
	var got []string
	var pages int
	for cursor := ""; ; pages++ {
		res, err := v.ToolsPage(t.Context(), cursor)
		if err != nil {
			t.Fatalf("ToolsPage(%q) = %v", cursor, err)
		}
		page, next := pageNames(t, res)
		if len(page) > 2 {
			t.Errorf("a page of %d tools, over PageSize 2", len(page))
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) || pages != 2 {
		t.Errorf("pages gave %q in %d more pages, want %q in 2", got, pages, want)
	}

	// A plain go-sdk server with the same tools and page size.
	sdk := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for _, n := range names {
		sdk.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := sdk.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	first, err := cs.ListTools(t.Context(), nil)
	if err != nil || first.NextCursor == "" {
		t.Fatalf("go-sdk's first page: %v, %v", first, err)
	}
	res, err := v.ToolsPage(t.Context(), first.NextCursor)
	if err != nil {
		t.Fatalf("ToolsPage(go-sdk's cursor) = %v", err)
	}
	page, next := pageNames(t, res)
	if !slices.Equal(page, []string{"c", "d"}) || next == "" {
		t.Errorf("after go-sdk's cursor: %q, next %q; want [c d] and a cursor", page, next)
	}
	last, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: next})
	if err != nil || len(last.Tools) != 1 || last.Tools[0].Name != "e" || last.NextCursor != "" {
		t.Errorf("go-sdk's server after our cursor: %v, %v; want [e], the last page", last, err)
	}

	for _, bad := range []string{"zzz", "!!", "AAAA"} {
		_, err := v.ToolsPage(t.Context(), bad)
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("ToolsPage(%q) = %v, want invalid params", bad, err)
		}
	}
}

// TestToolsPageSearchMode: in search mode the one page holds the
// meta-tools and the pinned tools, whatever the page size, and a host
// listing through go-sdk's server gets the same page.
func TestToolsPageSearchMode(t *testing.T) {
	_, v, _ := discoveryHub(t, &junction.Options{PageSize: 1}, junction.Selection{}, "fs__*")
	res, err := v.ToolsPage(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	page, next := pageNames(t, res)
	want := []string{"search_tools", "describe_tools", "call_tool", "fs__read_file", "fs__write_file"}
	if !slices.Equal(page, want) || next != "" {
		t.Errorf("search mode's page: %q, next %q; want %q and no cursor", page, next, want)
	}
	if got := listNames(t, connect(t, v, nil)); !slices.Equal(got, want) {
		t.Errorf("through go-sdk's server: %q, want %q", got, want)
	}
}
