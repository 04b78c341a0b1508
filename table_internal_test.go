package junction

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBuildTableReusesUnchangedEntries: a rebuild from a catalog read
// again (new pointers, same content) keeps every entry, so views neither
// re-register anything nor tell hosts a list changed; an entry whose
// content changed is new, and only that one.
func TestBuildTableReusesUnchangedEntries(t *testing.T) {
	catalog := func(resourceTitle string) *Catalog {
		c := &Catalog{
			Tools:             []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}},
			Prompts:           []*mcp.Prompt{{Name: "p"}},
			Resources:         []*mcp.Resource{{URI: "test://r", Name: "r", Title: resourceTitle}},
			ResourceTemplates: []*mcp.ResourceTemplate{{URITemplate: "test://r/{x}", Name: "rt"}},
		}
		// Through JSON, as a source would read it again: no pointer is
		// shared with an earlier catalog.
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var fresh Catalog
		if err := json.Unmarshal(b, &fresh); err != nil {
			t.Fatal(err)
		}
		return &fresh
	}
	src := []*sourceState{{name: "s"}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	first, _ := buildTable(src, []*Catalog{catalog("one")}, &table{}, logger)
	again, _ := buildTable(src, []*Catalog{catalog("one")}, first, logger)
	if again.tools[0] != first.tools[0] || again.prompts[0] != first.prompts[0] ||
		again.resources[0] != first.resources[0] || again.templates[0] != first.templates[0] {
		t.Errorf("a rebuild from the same catalog made new entries: tool %v, prompt %v, resource %v, template %v (true: reused)",
			again.tools[0] == first.tools[0], again.prompts[0] == first.prompts[0],
			again.resources[0] == first.resources[0], again.templates[0] == first.templates[0])
	}
	changed, _ := buildTable(src, []*Catalog{catalog("two")}, again, logger)
	if changed.resources[0] == again.resources[0] || changed.resources[0].resource.Title != "two" {
		t.Error("a changed resource kept its old entry")
	}
	if changed.tools[0] != again.tools[0] || changed.prompts[0] != again.prompts[0] || changed.templates[0] != again.templates[0] {
		t.Error("a change of one resource made new entries for what did not change")
	}
}
