package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/junction-mcp/junction/upstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This example uses the registry on its own, without a hub: add a server,
// wait for it, list its tools under bridged names, call one, and look at
// the server's state.
func ExampleRegistry() {
	// Some MCP server to talk to: here a go-sdk server on a local port.
	// A stdio server would be upstream.Config{Command: "npx", Args: ...}.
	weather := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1.0"}, nil)
	type args struct {
		City string `json:"city"`
	}
	mcp.AddTool(weather, &mcp.Tool{Name: "forecast", Description: "Forecast for a city"},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + in.City}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return weather }, nil))
	defer ts.Close()

	reg := upstream.NewRegistry(nil)
	defer reg.Close() // stops every server; leaves no goroutine or process
	if _, err := reg.Add("weather", upstream.Config{URL: ts.URL, CallTimeout: 30 * time.Second}); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := reg.WaitReady(ctx); err != nil { // optional: Add never blocks
		log.Fatal(err)
	}

	for _, t := range reg.Tools() {
		fmt.Println(t.Name)
	}
	res, err := reg.CallTool(ctx, "weather__forecast", json.RawMessage(`{"city":"Oslo"}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	for _, s := range reg.Snapshots() {
		fmt.Println(s.Name, s.State, s.Tools)
	}
	// Output:
	// weather__forecast
	// sunny in Oslo
	// weather connected [forecast]
}
