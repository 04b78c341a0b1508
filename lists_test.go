package junction_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// pageKeys returns the keys (names, URIs, URI templates) of a list result
// of ListPage and its next cursor.
func pageKeys(t *testing.T, res mcp.Result) ([]string, string) {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	type item struct{ Name, URI, URITemplate string }
	var r struct {
		Tools, Prompts, Resources, ResourceTemplates []item
		NextCursor                                   string
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range slices.Concat(r.Tools, r.Prompts, r.Resources, r.ResourceTemplates) {
		key := it.Name
		if it.URI != "" || it.URITemplate != "" {
			key = it.URI + it.URITemplate
		}
		keys = append(keys, key)
	}
	return keys, r.NextCursor
}

// listedPack is a pack of five tools, prompts, resources and resource
// templates, each added out of order.
func listedPack() *junction.Pack {
	p := junction.NewPack("p")
	for _, n := range []string{"e", "b", "d", "a", "c"} {
		p.AddTool(&mcp.Tool{Name: n, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		p.AddPrompt(&mcp.Prompt{Name: "pr-" + n},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		p.AddResource(&mcp.Resource{Name: n, URI: "file:///" + n},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
		p.AddResourceTemplate(&mcp.ResourceTemplate{Name: n, URITemplate: "tpl://" + n + "/{x}"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
	}
	return p
}

// TestListPageCursors: ListPage pages each list of the view in key order
// with go-sdk's cursors, both ways: a cursor go-sdk's own server made
// resumes where go-sdk's page ended, and go-sdk's server takes ours. A
// cursor that is not one is invalid params; another method is method
// not found.
func TestListPageCursors(t *testing.T) {
	h := junction.New(&junction.Options{PageSize: 2})
	t.Cleanup(func() { h.Close() })
	add(t, h, "p", listedPack(), junction.PrefixNever)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}

	// A plain go-sdk server with the same items and page size.
	sdk := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	p := listedPack()
	cat, err := p.Catalog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range cat.Tools {
		sdk.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	for _, pr := range cat.Prompts {
		sdk.AddPrompt(pr, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	}
	for _, r := range cat.Resources {
		sdk.AddResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
		})
	}
	for _, rt := range cat.ResourceTemplates {
		sdk.AddResourceTemplate(rt, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{}, nil
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

	for _, c := range []struct {
		method string
		want   []string
		// sdkPage lists a page from go-sdk's server: its keys and next cursor.
		sdkPage func(cursor string) ([]string, string, error)
	}{
		{"tools/list", []string{"a", "b", "c", "d", "e"}, func(cursor string) ([]string, string, error) {
			r, err := cs.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			keys, _ := pageKeys(t, r)
			return keys, r.NextCursor, nil
		}},
		{"prompts/list", []string{"pr-a", "pr-b", "pr-c", "pr-d", "pr-e"}, func(cursor string) ([]string, string, error) {
			r, err := cs.ListPrompts(t.Context(), &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			keys, _ := pageKeys(t, r)
			return keys, r.NextCursor, nil
		}},
		{"resources/list", []string{"file:///a", "file:///b", "file:///c", "file:///d", "file:///e"}, func(cursor string) ([]string, string, error) {
			r, err := cs.ListResources(t.Context(), &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			keys, _ := pageKeys(t, r)
			return keys, r.NextCursor, nil
		}},
		{"resources/templates/list", []string{"tpl://a/{x}", "tpl://b/{x}", "tpl://c/{x}", "tpl://d/{x}", "tpl://e/{x}"}, func(cursor string) ([]string, string, error) {
			r, err := cs.ListResourceTemplates(t.Context(), &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return nil, "", err
			}
			keys, _ := pageKeys(t, r)
			return keys, r.NextCursor, nil
		}},
	} {
		// The view's pages, first to last.
		var got []string
		more := 0
		for cursor := ""; ; more++ {
			res, err := v.ListPage(t.Context(), c.method, cursor)
			if err != nil {
				t.Fatalf("%s: ListPage(%q) = %v", c.method, cursor, err)
			}
			page, next := pageKeys(t, res)
			if len(page) > 2 {
				t.Errorf("%s: a page of %d, over PageSize 2", c.method, len(page))
			}
			got = append(got, page...)
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, c.want) || more != 2 {
			t.Errorf("%s: pages gave %q in %d more pages, want %q in 2", c.method, got, more, c.want)
		}

		// go-sdk's cursor to us, and ours to go-sdk's server.
		_, sdkNext, err := c.sdkPage("")
		if err != nil || sdkNext == "" {
			t.Fatalf("%s: go-sdk's first page: %v, cursor %q", c.method, err, sdkNext)
		}
		res, err := v.ListPage(t.Context(), c.method, sdkNext)
		if err != nil {
			t.Fatalf("%s: ListPage(go-sdk's cursor) = %v", c.method, err)
		}
		page, next := pageKeys(t, res)
		if !slices.Equal(page, c.want[2:4]) || next == "" {
			t.Errorf("%s: after go-sdk's cursor: %q, next %q; want %q and a cursor", c.method, page, next, c.want[2:4])
		}
		last, lastNext, err := c.sdkPage(next)
		if err != nil || !slices.Equal(last, c.want[4:]) || lastNext != "" {
			t.Errorf("%s: go-sdk's server after our cursor: %q, %q, %v; want %q, the last page", c.method, last, lastNext, err, c.want[4:])
		}

		for _, bad := range []string{"zzz", "!!", "AAAA"} {
			_, err := v.ListPage(t.Context(), c.method, bad)
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: ListPage(%q) = %v, want invalid params", c.method, bad, err)
			}
		}
	}
	_, err = v.ListPage(t.Context(), "roots/list", "")
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
		t.Errorf("ListPage(roots/list) = %v, want method not found", err)
	}
}

// TestListPageSearchMode: in search mode the one page of tools holds the
// meta-tools and the pinned tools, whatever the page size, and a host
// listing through go-sdk's server gets the same page.
func TestListPageSearchMode(t *testing.T) {
	_, v, _ := discoveryHub(t, &junction.Options{PageSize: 1}, junction.Selection{}, "fs__*")
	res, err := v.ListPage(t.Context(), "tools/list", "")
	if err != nil {
		t.Fatal(err)
	}
	page, next := pageKeys(t, res)
	want := []string{"search_tools", "describe_tools", "call_tool", "fs__read_file", "fs__write_file"}
	if !slices.Equal(page, want) || next != "" {
		t.Errorf("search mode's page: %q, next %q; want %q and no cursor", page, next, want)
	}
	if got := listNames(t, connect(t, v, nil)); !slices.Equal(got, want) {
		t.Errorf("through go-sdk's server: %q, want %q", got, want)
	}
}

// BenchmarkListPage: a tools/list page of 1,000 out of 3,000 tools (the
// first page, and one after a cursor), and the encoding of the first,
// which the plane writes.
func BenchmarkListPage(b *testing.B) {
	h := junction.New(nil)
	b.Cleanup(func() { h.Close() })
	p := junction.NewPack("p")
	for i := range 3000 {
		p.AddTool(&mcp.Tool{Name: fmt.Sprintf("tool_%04d", (i*7919)%3000), Description: "A tool of the benchmark.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	if err := h.Add(b.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		b.Fatal(err)
	}
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		b.Fatal(err)
	}
	first, err := v.ListPage(b.Context(), "tools/list", "")
	if err != nil {
		b.Fatal(err)
	}
	cursor := first.(*mcp.ListToolsResult).NextCursor
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			v.ListPage(b.Context(), "tools/list", "")
		}
	})
	b.Run("after-cursor", func(b *testing.B) {
		for b.Loop() {
			v.ListPage(b.Context(), "tools/list", cursor)
		}
	})
	b.Run("encode-first", func(b *testing.B) {
		for b.Loop() {
			json.Marshal(first)
		}
	})
}

// TestListPageFollowsChanges: the sorted lists ListPage keeps are made
// again after a change: a source added, a discovery mode set.
func TestListPageFollowsChanges(t *testing.T) {
	h := junction.New(nil)
	t.Cleanup(func() { h.Close() })
	add(t, h, "a", listedPack(), junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	list := func(method string) []string {
		t.Helper()
		res, err := v.ListPage(t.Context(), method, "")
		if err != nil {
			t.Fatal(err)
		}
		keys, _ := pageKeys(t, res)
		return keys
	}
	if got := list("tools/list"); len(got) != 5 {
		t.Fatalf("tools/list before: %q", got)
	}
	if got := list("prompts/list"); len(got) != 5 {
		t.Fatalf("prompts/list before: %q", got)
	}
	add(t, h, "b", listedPack(), junction.PrefixAlways)
	if got := list("tools/list"); len(got) != 10 || got[5] != "b__a" {
		t.Errorf("tools/list after a source was added: %q", got)
	}
	if got := list("prompts/list"); len(got) != 10 {
		t.Errorf("prompts/list after a source was added: %q", got)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	if got := list("tools/list"); len(got) != 3 || got[0] != "search_tools" {
		t.Errorf("tools/list in search mode: %q", got)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoveryList}); err != nil {
		t.Fatal(err)
	}
	if got := list("tools/list"); len(got) != 10 {
		t.Errorf("tools/list back in list mode: %q", got)
	}
}

// TestWatchLists: a view's watchers hear of each list that changes, once
// per change (a source added, discovery turned on), and of nothing when
// a refresh changes nothing or after they stop.
func TestWatchLists(t *testing.T) {
	ctx := context.Background()
	hub := junction.New(nil)
	defer hub.Close()
	first := junction.NewPack("first")
	first.AddTool(&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	if err := hub.Add(ctx, "first", first, nil); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	stop := v.WatchLists(func(method string) {
		mu.Lock()
		got = append(got, method)
		mu.Unlock()
	})
	// A change's watchers have run when the call that made it returns.
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		g := got
		got = nil
		slices.Sort(g)
		return g
	}

	p := junction.NewPack("second")
	p.AddTool(&mcp.Tool{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	p.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	p.AddResource(&mcp.Resource{URI: "file:///r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	if err := hub.Add(ctx, "second", p, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"notifications/prompts/list_changed", "notifications/resources/list_changed", "notifications/tools/list_changed"}
	if g := take(); !slices.Equal(g, want) {
		t.Errorf("a source added: %v; want %v", g, want)
	}
	if err := hub.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if g := take(); len(g) != 0 {
		t.Errorf("a refresh that changes nothing: %v; want nothing", g)
	}
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	if g := take(); !slices.Equal(g, []string{"notifications/tools/list_changed"}) {
		t.Errorf("search mode turned on: %v; want the tools' list", g)
	}
	stop()
	if err := hub.Remove("second"); err != nil {
		t.Fatal(err)
	}
	if g := take(); len(g) != 0 {
		t.Errorf("after stop: %v; want nothing", g)
	}
}
