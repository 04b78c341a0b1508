package junction_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// TestRequestsKeepToTheView: through the view's go-sdk server,
// prompts/get, resources/read and completion/complete answer only for
// the sources the view's selection keeps; a prompt, resource or
// completion of another source is unknown, as if it did not exist.
func TestRequestsKeepToTheView(t *testing.T) {
	h := junction.New(nil)
	t.Cleanup(func() { h.Close() })
	for _, name := range []string{"in", "out"} {
		p := junction.NewPack(name)
		p.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "from " + name}}}}, nil
		})
		p.AddResource(&mcp.Resource{Name: "r", URI: "mem://" + name}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "from " + name}}}, nil
		})
		p.SetCompletionHandler(func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"from " + name}}}, nil
		})
		add(t, h, name, p, junction.PrefixAlways)
	}
	v, err := h.NewView("in only", junction.Selection{Sources: []string{"in"}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, v, nil)
	ctx := t.Context()

	if res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "in__greet"}); err != nil || res.Messages[0].Content.(*mcp.TextContent).Text != "from in" {
		t.Errorf("prompts/get in__greet = %v, %v", res, err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "out__greet"}); err == nil || !strings.Contains(err.Error(), "unknown prompt") {
		t.Errorf("prompts/get out__greet: %v, want unknown prompt", err)
	}
	if res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://in"}); err != nil || res.Contents[0].Text != "from in" || res.Contents[0].URI != "mem://in" {
		t.Errorf("resources/read mem://in = %v, %v", res, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mem://out"}); err == nil {
		t.Error("resources/read mem://out was answered, want resource not found")
	}
	for ref, want := range map[*mcp.CompleteReference]int{
		{Type: "ref/prompt", Name: "in__greet"}:  1,
		{Type: "ref/prompt", Name: "out__greet"}: 0,
		{Type: "ref/resource", URI: "mem://out"}: 0,
	} {
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}})
		if err != nil || len(res.Completion.Values) != want {
			t.Errorf("completion/complete %+v = %+v, %v; want %d values", ref, res, err, want)
		}
	}
}
