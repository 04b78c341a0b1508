// Command catalogserver is a fixture MCP server that lists every tool of
// the tool-search benchmark's catalog (docs/performance.md, "Tool
// search"), so that a hub can index and serve the catalog as it would
// real upstreams.
//
//	catalogserver -catalog catalog.json [-names names.json]
//	catalogserver -catalog catalog.json -http 127.0.0.1:0
//
// Over stdio (the default) it is one server of all the tools, each under
// the name package bench/catalog gives it, <server>__<tool>
// (Git_geropl__git_status for "Git (geropl)/git_status"), with the
// catalog's description and input schema.
//
// With -http it is one Streamable HTTP endpoint per catalog server, on a
// loopback address, at /s/<server>: <server> is the same server part
// (catalog.Servers, Git_geropl), the endpoint's serverInfo has it as its
// name and the catalog's server name as its title ("Git (geropl)"), and
// it serves that server's tools under their own names (git_status). A hub
// with one upstream per endpoint, each named by its server part, serves
// the tools under the same names as the stdio server. Once it listens it
// prints one line on stdout, "listening http://127.0.0.1:PORT", and it
// serves until SIGINT, SIGTERM or the end of its stdin (so give it an open
// stdin: /dev/null ends it at once).
//
// -names writes the map from the <server>__<tool> names back to catalog
// keys (a JSON object) before serving. Calling a tool returns a tool
// error: the fixture is for listing and searching, not for calls.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

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
	addr := fs.String("http", "", "serve one Streamable HTTP endpoint per catalog server, /s/<server>, on this loopback `address` (127.0.0.1:0 picks a port)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" || fs.NArg() > 0 {
		return errors.New("usage: catalogserver -catalog catalog.json [-names names.json] [-http 127.0.0.1:0]")
	}
	tools, err := catalog.Load(*path)
	if err != nil {
		return err
	}
	_, keys, err := catalog.Names(tools)
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
	if *addr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serveHTTP(ctx, tools, *addr, os.Stdout, os.Stdin)
	}
	s, _, err := newServer(tools)
	if err != nil {
		return err
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
		addTool(s, t, names[i])
	}
	return s, keys, nil
}

// newHandler returns a handler of one Streamable HTTP endpoint per
// catalog server, /s/<server part>, each a server of that server's tools
// under their own names.
func newHandler(tools []catalog.Tool) (http.Handler, error) {
	if _, _, err := catalog.Names(tools); err != nil { // no key twice
		return nil, err
	}
	parts, err := catalog.Servers(tools)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	servers := map[string]*mcp.Server{}
	for _, t := range tools {
		s, ok := servers[t.Server]
		if !ok {
			s = mcp.NewServer(&mcp.Implementation{Name: parts[t.Server], Title: t.Server, Version: "1"}, nil)
			servers[t.Server] = s
			mux.Handle("/s/"+parts[t.Server], mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		}
		addTool(s, t, t.Name)
	}
	return mux, nil
}

// addTool adds t to s under name; calling it returns a tool error.
func addTool(s *mcp.Server, t catalog.Tool, name string) {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	key := t.Key()
	s.AddTool(&mcp.Tool{Name: name, Description: t.Description, InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "catalogserver: " + key + " is a fixture and cannot be called"}}}, nil
		})
}

// serveHTTP serves [newHandler]'s endpoints on addr, which must be a
// loopback address, and writes "listening http://HOST:PORT" to stdout once
// it listens. It serves until ctx is done or stdin reaches its end.
func serveHTTP(ctx context.Context, tools []catalog.Tool, addr string, stdout io.Writer, stdin io.Reader) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-http %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-http %q: not a loopback address such as 127.0.0.1:0", addr)
	}
	h, err := newHandler(tools)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if _, err := fmt.Fprintf(stdout, "listening http://%s\n", ln.Addr()); err != nil {
		srv.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, stdin)
		cancel()
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Streams a client left open would hold Shutdown up: close them after
	// a moment.
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	return nil
}
