package junction_test

import (
	"context"
	"fmt"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A hub with one pack of Go tools, served to a go-sdk client over
// in-memory transports.
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

	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := view.Server().Connect(ctx, serverT, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Wait()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, clientT, nil)
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
