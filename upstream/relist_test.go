package upstream

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// After an upstream announces that one list changed, only that list is
// asked for again; the others are kept. A host waiting for the change
// waits for one round trip, not one per list.
func TestRelistOnlyWhatChanged(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	srv := mcp.NewServer(&mcp.Implementation{Name: "lists", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&mcp.Tool{Name: "a", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddResource(&mcp.Resource{Name: "r", URI: "x://r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	var mu sync.Mutex
	var methods []string
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			mu.Lock()
			methods = append(methods, method)
			mu.Unlock()
			return next(ctx, method, req)
		}
	})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hub", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	s := &Server{logger: slog.New(slog.DiscardHandler)}
	cat, tools, err := s.list(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	s.catalog, s.tools = cat, tools
	asked := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, m := range methods {
			if m != "initialize" && m != "notifications/initialized" && m != "server/discover" {
				out = append(out, m)
			}
		}
		methods = nil
		return out
	}
	if got := asked(); len(got) != 4 {
		t.Fatalf("the first listing asked %v, want the four lists", got)
	}

	srv.AddTool(&mcp.Tool{Name: "b", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	cat2, _, err := s.relistChanged(ctx, cs, listTools)
	if err != nil {
		t.Fatal(err)
	}
	if got := asked(); !slices.Equal(got, []string{"tools/list"}) {
		t.Errorf("after a tools change it asked %v, want tools/list only", got)
	}
	if len(cat2.Tools) != 2 || len(cat2.Prompts) != 1 || len(cat2.Resources) != 1 {
		t.Errorf("catalog after the tools change: %d tools, %d prompts, %d resources; want 2, 1, 1", len(cat2.Tools), len(cat2.Prompts), len(cat2.Resources))
	}
	if _, _, err := s.relistChanged(ctx, cs, listPrompts|listResources); err != nil {
		t.Fatal(err)
	}
	if got := asked(); !slices.Equal(got, []string{"resources/list", "resources/templates/list", "prompts/list"}) {
		t.Errorf("after a prompts and resources change it asked %v", got)
	}
}
