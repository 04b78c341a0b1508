// Package toolbox turns toolbox plugins — services in any language that
// speak the junction.toolbox.v1 Connect-RPC contract
// (proto/toolbox/v1/toolbox.proto) — into a [junction.Source], so their
// tools, resources and prompts are served by a hub as MCP.
//
//	src, err := toolbox.NewPlugin(toolbox.Command{Path: "./my-plugin"}, &toolbox.Options{Name: "mine", Logger: logger})
//	if err != nil { ... }
//	defer src.Close()
//	hub.Add(ctx, "mine", src, nil) // tools appear as mine__<tool>
//
// # Two kinds of source
//
// [NewPlugin] spawns a plugin program and supervises it: it waits for the
// handshake line the plugin prints on stdout
// (JUNCTION_TOOLBOX|1|tcp|127.0.0.1:PORT|grpc, see package
// [github.com/junction-mcp/junction/toolbox/plugin]), logs the plugin's
// stderr under the source's name, checks its health with Identity calls,
// restarts it with backoff when it dies, and on Close stops it with
// SIGTERM, then SIGKILL, reaping its whole process group. A program that
// calls [EnableReaper] first thing in main has the group stopped the same
// way if the program itself is killed (Linux).
//
// [NewURL] talks to a toolbox service that runs on its own, over Connect,
// gRPC or gRPC-Web, on HTTP/1.1 or h2c.
//
//	host ──MCP──▶ Hub ──▶ toolbox.Source ──Connect-RPC──▶ plugin process (any language)
//	                          │                               ▲
//	                          └── supervisor: spawn, handshake, health, restart, stop
//
// # Transcoding
//
// The contract mirrors MCP field for field, so nothing is lost: JSON
// Schemas, arguments and structured results travel as JSON text and reach
// the host verbatim; content blocks (text, image, audio, resource links,
// embedded resources) keep their annotations and _meta. During a call the
// plugin streams Progress events, which become notifications/progress for
// the host that asked; cancelling the host's request cancels the RPC.
// A plugin's tool failure is a result with isError; a failed RPC becomes a
// tool error naming the plugin and the Connect code (SOURCE_UNAVAILABLE
// when the plugin died during the call). A plugin that sends something
// MCP cannot carry (a tool schema that is not an object schema, invalid
// JSON) has that item skipped or the call failed, with the reason in the
// log; it never crashes the hub.
//
// The command "junction toolbox mcp -- PLUGIN ARGS" serves one plugin as a
// standalone stdio MCP server with this package. docs/plugins.md is the
// plugin author's guide.
package toolbox
