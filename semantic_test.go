package junction_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	junction "github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/embed/embedtest"
)

// concepts are the meanings the test endpoint tells apart.
var concepts = [][]string{
	{"photo", "picture", "image", "snapshot"},
	{"spin", "rotate", "turn"},
	{"mail", "email", "message", "letter"},
	{"send", "post", "deliver"},
}

// TestSemanticSearch: with an embeddings endpoint configured, a query
// that shares no word with a tool but means what it does finds it; when
// the endpoint fails, search goes on by words alone, and the failure is
// counted.
func TestSemanticSearch(t *testing.T) {
	srv := embedtest.NewServer(concepts)
	defer srv.Close()
	h := junction.New(&junction.Options{Semantic: &junction.SemanticSearch{URL: srv.URL + "/v1", Model: "concepts"}})
	t.Cleanup(func() { h.Close() })
	p := junction.NewPack("media")
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	for name, desc := range map[string]string{
		"rotate_picture": "Rotate a picture by some degrees",
		"send_email":     "Send an email message to someone",
		"list_files":     "List the files of a folder",
	} {
		p.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	}
	add(t, h, "media", p, junction.PrefixAlways)
	v, err := h.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := h.WaitSemantic(ctx); err != nil {
		st, _ := h.SemanticStats()
		t.Fatalf("tools not embedded: %v (%+v)", err, st)
	}

	r, err := v.SearchTools(t.Context(), "spin a snapshot", junction.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if names := hitNames(*r); len(names) == 0 || names[0] != "media__rotate_picture" || r.Matched < 1 {
		t.Errorf("search by meaning = %v (matched %d), want media__rotate_picture first", names, r.Matched)
	}

	srv.Failing.Store(true)
	r, err = v.SearchTools(t.Context(), "send an email", junction.SearchOptions{})
	if err != nil {
		t.Fatalf("search with the endpoint down: %v", err)
	}
	if names := hitNames(*r); len(names) == 0 || names[0] != "media__send_email" {
		t.Errorf("search by words with the endpoint down = %v, want media__send_email first", names)
	}
	if st, _ := h.SemanticStats(); st.Fallbacks == 0 || st.Failures == 0 {
		t.Errorf("stats after a failed search = %+v, want a failure and a fallback counted", st)
	}
}
