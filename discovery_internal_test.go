package junction

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestIndexFollowsSourcesOneByOne checks that a change of one source's
// tools re-indexes that source only, and that a removed source leaves the
// index.
func TestIndexFollowsSourcesOneByOne(t *testing.T) {
	h := New(nil)
	defer h.Close()
	var mu sync.Mutex
	var reindexed []string
	indexed := make(chan string, 16) // each source indexed, as it is
	h.onReindex = func(s string) {
		mu.Lock()
		reindexed = append(reindexed, s)
		mu.Unlock()
		indexed <- s
	}
	tool := func(p *Pack, name, desc string) {
		p.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	a, b := NewPack("a"), NewPack("b")
	tool(a, "alpha", "Send an email message")
	tool(b, "beta", "Resize a picture")
	ctx := context.Background()
	if err := h.Add(ctx, "a", a, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Add(ctx, "b", b, nil); err != nil {
		t.Fatal(err)
	}
	v, err := h.NewView("", Selection{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(reindexed, []string{"a", "b"}) {
		t.Errorf("indexed %v at start, want [a b]", reindexed)
	}
	reindexed = nil
	mu.Unlock()

	for range 2 {
		<-indexed // a and b, at start
	}
	tool(b, "gamma", "Rotate a picture by some degrees")
	select {
	case <-indexed: // the hub rebuilds in the background
	case <-time.After(5 * time.Second):
		t.Fatal("no source re-indexed within 5s after b changed")
	}
	r, err := v.SearchTools(t.Context(), "rotate picture degrees", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tools) == 0 || r.Tools[0].Name != "b__gamma" {
		t.Fatalf("b__gamma not found first after b changed: %+v", r)
	}
	mu.Lock()
	if !slices.Equal(reindexed, []string{"b"}) {
		t.Errorf("re-indexed %v after b changed, want [b] only", reindexed)
	}
	reindexed = nil
	mu.Unlock()

	if err := h.Remove("a"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(reindexed, []string{"a"}) {
		t.Errorf("re-indexed %v after a went away, want [a]", reindexed)
	}
	mu.Unlock()
	if r, _ := v.SearchTools(t.Context(), "send an email message", SearchOptions{}); r.Matched != 0 {
		t.Errorf("a's tool still found after Remove: %+v", r)
	}
}
