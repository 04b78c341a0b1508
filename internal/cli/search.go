package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const toolsSearchAbout = `
Search the tools of a hub in plain words, best first, as a host does in
the "search" discovery mode (docs/discovery.md): name, server and the
first line of each tool's description (-o json: {matched, tools}).
Against -url or a command, the server's search_tools tool is called (a
junction hub has it in discovery mode search; -search-tool names another); with
neither, the hub that -config and the hub flags describe is built here
and its index searched, whatever its discovery mode.`

// semanticWait bounds how long tools search waits for the semantic
// stage's embeddings.
const semanticWait = 30 * time.Second

func runToolsSearch(ctx context.Context, env *Env, args []string) error {
	var (
		server   string
		limit    int
		toolName string
	)
	run, err := clientCommand(ctx, env, "tools search", "[flags] QUERY... [-- COMMAND ARGS...]", toolsSearchAbout, args, func(fs *flag.FlagSet) {
		fs.StringVar(&server, "server", "", "only tools of this `server` (source)")
		fs.IntVar(&limit, "limit", 10, fmt.Sprintf("the most tools to show, `n` from 1 to %d", junction.MaxSearchLimit))
		fs.StringVar(&toolName, "search-tool", junction.DefaultSearchToolName, "the `name` of the server's search tool (with -url or a command)")
	})
	if err != nil {
		return err
	}
	defer run.done()
	query := strings.Join(run.args, " ")
	if strings.TrimSpace(query) == "" {
		return usageErrorf("tools search needs a query: what the tool should do, in plain words")
	}
	if limit < 1 || limit > junction.MaxSearchLimit {
		return usageErrorf("-limit %d: want 1 to %d", limit, junction.MaxSearchLimit)
	}
	var r *junction.SearchResult
	if run.hub != nil {
		// A one-shot search waits for the semantic stage's embeddings, if
		// the hub has one, for a while; past it, the tools without one rank
		// by words.
		wctx, cancel := context.WithTimeout(ctx, semanticWait)
		if err := run.hub.Hub.WaitSemantic(wctx); errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			fmt.Fprintf(env.Stderr, "junction: the embeddings endpoint did not embed every tool within %v; those left rank by words only\n", semanticWait)
		} else if err != nil && ctx.Err() == nil {
			fmt.Fprintf(env.Stderr, "junction: %v; tools rank by words only\n", err)
		}
		cancel()
		if r, err = run.hub.View.SearchTools(ctx, query, junction.SearchOptions{Server: server, Limit: limit}); err != nil {
			return usageErrorf("%v", err)
		}
	} else if r, err = remoteSearch(run, toolName, query, server, limit); err != nil {
		return err
	}
	if run.json {
		return writeJSON(env.Stdout, r)
	}
	switch {
	case r.Matched == 0:
		fmt.Fprintf(env.Stdout, "no tool matched %q\n", query)
		return nil
	case r.Matched == 1:
		fmt.Fprintln(env.Stdout, "1 tool matched")
	case len(r.Tools) < r.Matched:
		fmt.Fprintf(env.Stdout, "%d tools matched; the best %d:\n", r.Matched, len(r.Tools))
	default:
		fmt.Fprintf(env.Stdout, "%d tools matched\n", r.Matched)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 3, ' ', 0)
	for _, t := range r.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Name, t.Server, t.Description)
	}
	return tw.Flush()
}

// remoteSearch calls the server's search tool.
func remoteSearch(run *clientRun, toolName, query, server string, limit int) (*junction.SearchResult, error) {
	args := map[string]any{"query": query, "limit": limit}
	if server != "" {
		args["server"] = server
	}
	res, err := run.cs.CallTool(run.ctx, &mcp.CallToolParams{Name: toolName, Arguments: args})
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && strings.Contains(werr.Message, "unknown tool") {
		return nil, fmt.Errorf("the server has no %s tool: a junction hub serves it when its discovery mode is search (discovery: {mode: search}; see docs/discovery.md)", toolName)
	}
	if err != nil {
		return nil, fmt.Errorf("tools/call %s: %w", toolName, err)
	}
	if res.IsError {
		var msg []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				msg = append(msg, t.Text)
			}
		}
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("%s: %s", toolName, strings.Join(msg, " "))}
	}
	var r junction.SearchResult
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil || res.StructuredContent == nil {
		return nil, fmt.Errorf("%s returned no {matched, tools} structured content; is it junction's search tool?", toolName)
	}
	return &r, nil
}
