// Package junction is the core of the junction MCP hub: it aggregates the
// tools, resources, prompts and completions of many sources and serves them
// to MCP hosts as one server, through go-sdk.
//
//	hub := junction.New(&junction.Options{Name: "my-hub"})
//	defer hub.Close()
//
//	tools := junction.NewPack("tools")
//	junction.AddTool(tools, &mcp.Tool{Name: "greet", Description: "Say hello."},
//		func(ctx context.Context, req *mcp.CallToolRequest, in struct{ Name string `json:"name"` }) (*mcp.CallToolResult, any, error) {
//			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + in.Name}}}, nil, nil
//		})
//	hub.Add(ctx, "tools", tools, &junction.SourceOptions{Prefix: junction.PrefixNever})
//
//	view, _ := hub.NewView("", junction.Selection{})
//	dataplane.New(view, nil).ServeStdio(ctx, os.Stdin, os.Stdout, nil)
//
// # Overview
//
//	host ──stdio / HTTP──▶ data plane ──▶ View ──▶ Hub ──▶ Source ─┬─ Pack (Go tools, in process)
//	                                      selection       names,          ├─ upstream.Server (an MCP server)
//	                                                      routing,        └─ toolbox.Source (a plugin)
//	                                                      errors, drift
//
// A [Source] is anything that offers MCP features: a [Pack] of Go
// handlers, an upstream MCP server (package upstream), a toolbox plugin
// (package toolbox). The [Hub] reads each source's [Catalog], names its
// tools and prompts (see [PrefixMode] and [ShortenName]), reports clashes
// ([Hub.Collisions]) and routes every call to the source that owns it,
// with the source's own names.
//
// A [View] is what one kind of host sees: the hub narrowed by a
// [Selection] (presets, tools, deny, sources), kept in line with the hub,
// so hosts get list_changed notifications as sources come and go
// ([View.WatchLists]). Package dataplane serves a view over stdio and
// HTTP (Streamable HTTP, stateful and stateless, and the legacy SSE
// transport), forwarding tool calls as raw bytes where it can, and to a
// go-sdk client in process (dataplane.Plane.Transport). What the data
// plane needs of a view is one interface, dataplane.View, declared
// there: the methods of View that only a host front calls
// ([View.BeginRaw], [View.HostState] and the tasks extension's) are that
// contract.
//
// # Calls
//
// Every tool call takes the same steps, whoever makes it: [View.Begin]
// resolves the name through the view's selection (waiting for sources
// still connecting, see [Readier]), and the returned [Call] calls the
// source and finishes the call (timeout, error mapping, metrics, logs).
// The data plane uses [View.BeginRaw] and [Call.CallToolRaw]: sources
// that forward bytes ([RawCaller]) get the call as bytes, the others
// through their CallTool, the params decoded for them. Packs that call
// other tools use [Hub.Call] or [View.Call].
//
// # Errors
//
// A source that cannot answer a call (down, timed out, panicked) gives the
// host a tool result with isError set and the JSON text of a [ToolError];
// a *jsonrpc.Error from a source stays a protocol error.
//
// # Drift
//
// A [Manifest] pins tools by name and hashes of their description and
// schemas. With [Options.Lock] set, every change of a source's tools is
// compared with it, and [SourceOptions.Drift] says whether to warn, block
// the new or changed tools, or accept them; [Hub.Drift] reports the
// differences.
//
// The junction command (cmd/junction) builds all of this from flags and a
// config file; this package never reads files or flags itself.
package junction
