package junction_test

import (
	"context"
	"fmt"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A hub with one pack of Go tools, served by the data plane to a go-sdk
// client in process.
func Example() {
	ctx := context.Background()
	hub := junction.New(&junction.Options{Name: "example"})
	defer hub.Close()

	tools := junction.NewPack("tools")
	type greetIn struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	junction.AddTool(tools, &mcp.Tool{Name: "greet", Description: "Say hello."},
		func(_ context.Context, _ *mcp.CallToolRequest, in greetIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name}}}, nil, nil
		})
	if err := hub.Add(ctx, "tools", tools, nil); err != nil {
		panic(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		panic(err)
	}

	// The data plane serves the view to hosts; in process here, over
	// stdio (ServeStdio) or HTTP (HTTPHandler) in a server.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	// The default prefix mode names the tool "<source>__<tool>".
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tools__greet", Arguments: map[string]any{"name": "ada"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output: hello ada
}

// Apply swaps sources in one step: here a tool moves from one source to
// another, and no moment passes in which the hub has neither or both.
func ExampleHub_Apply() {
	ctx := context.Background()
	hub := junction.New(nil)
	defer hub.Close()
	pack := func(name string) *junction.Pack {
		p := junction.NewPack(name)
		p.AddTool(&mcp.Tool{Name: "lookup", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "from " + name}}}, nil
			})
		return p
	}
	unprefixed := &junction.SourceOptions{Prefix: junction.PrefixNever}
	if err := hub.Add(ctx, "old", pack("old"), unprefixed); err != nil {
		panic(err)
	}
	err := hub.Apply(ctx, junction.Changes{
		Put:    []junction.Put{{Name: "new", Source: pack("new"), Options: unprefixed}},
		Remove: []string{"old"},
	})
	if err != nil {
		panic(err)
	}
	res, err := hub.Call(ctx, "lookup", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(hub.SourceNames(), res.Content[0].(*mcp.TextContent).Text)
	// Output: [new] from new
}
