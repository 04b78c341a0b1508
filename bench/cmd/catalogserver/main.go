// Command catalogserver is a fixture MCP server, over stdio, that lists
// every tool of the tool-search benchmark's catalog (docs/performance.md,
// "Tool search"), so that a hub can index and serve the catalog as it
// would a real upstream.
//
//	catalogserver -catalog catalog.json [-names names.json]
//
// Each tool is served under the name package bench/catalog gives it,
// <server>__<tool> (Git_geropl__git_status for "Git (geropl)/git_status"),
// with the catalog's description and input schema. -names writes the map
// from these names back to catalog keys (a JSON object) before serving.
// Calling a tool returns a tool error: the fixture is for listing and
// searching, not for calls.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/bench/catalog"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "catalogserver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("catalogserver", flag.ContinueOnError)
	path := fs.String("catalog", "", "the catalog `file` (JSON list of {server, name, description, inputSchema})")
	namesOut := fs.String("names", "", "write the map from served names to catalog keys to `file` (JSON)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" || fs.NArg() > 0 {
		return errors.New("usage: catalogserver -catalog catalog.json [-names names.json]")
	}
	tools, err := catalog.Load(*path)
	if err != nil {
		return err
	}
	s, keys, err := newServer(tools)
	if err != nil {
		return err
	}
	if *namesOut != "" {
		b, err := json.MarshalIndent(keys, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*namesOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return s.Run(context.Background(), &mcp.StdioTransport{})
}

// newServer returns a server of the catalog's tools and the map from
// their served names to catalog keys.
func newServer(tools []catalog.Tool) (*mcp.Server, map[string]string, error) {
	names, keys, err := catalog.Names(tools)
	if err != nil {
		return nil, nil, err
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "catalog", Version: "1"}, nil)
	for i, t := range tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		key := t.Key()
		s.AddTool(&mcp.Tool{Name: names[i], Description: t.Description, InputSchema: schema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "catalogserver: " + key + " is a fixture and cannot be called"}}}, nil
			})
	}
	return s, keys, nil
}
