package plugin_test

import (
	"context"

	"github.com/junction-mcp/junction/toolbox/plugin"
	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
)

// The whole main function of a plugin with one typed tool.
func Example() {
	p := plugin.New(plugin.Info{Name: "greeter", Version: "1.0.0"})
	type in struct {
		Name string `json:"name" jsonschema:"who to greet"`
	}
	plugin.AddTool(p, &toolboxv1.Tool{Name: "greet", Description: "Say hello."},
		func(ctx context.Context, call *plugin.Call, in in) (*toolboxv1.CallToolResult, error) {
			return plugin.TextResult("hello, " + in.Name), nil
		})
	plugin.Main(p) // prints the handshake, serves until SIGTERM, exits
}
