// Package dataplane is junction's data plane: everything between a host's
// bytes and a source's bytes on the way of a call. It frames messages
// (newline-delimited JSON-RPC on stdio, Streamable HTTP and legacy SSE on
// HTTP), forwards tool calls as raw bytes where it can, keeps each
// connection's table of calls in flight with their cancellation, and puts
// the log messages and requests a source has for a host on the right
// stream. Everything else (initialize, lists, resources, prompts, calls
// with _meta) it hands to the view's go-sdk server.
//
//	v, _ := hub.NewView("", junction.Selection{})
//	plane := dataplane.New(v, nil)
//	plane.ServeStdio(ctx, os.Stdin, os.Stdout, nil)        // stdio
//	http.Handle("/mcp", plane.HTTPHandler(nil))            // Streamable HTTP
//
// # The path of a call
//
//	host ──bytes──▶ reader ─┬─ tools/call, plain ─▶ View.BeginRaw ─▶ RawCaller.CallToolRaw ─▶ Call.FinishRaw ─┐
//	 (stdio line,           │   (id, name parsed;      (route,          (the source's own           (metrics,   │
//	  HTTP POST)            │    arguments as bytes)   selection,       framing: an upstream's      errors,     │
//	                        │                          timeout)         stdin, say)                 log)        │
//	                        └─ anything else ──▶ go-sdk server ─▶ View's handlers ─▶ View.Begin ─▶ Call.CallTool ┤
//	host ◀──bytes── writer (lines coalesced: one write for the answers ready together) ◀──────────────────────────┘
//
// Both branches meet the core (package junction) through one small
// surface: [junction.View.Begin] or [junction.View.BeginRaw] to resolve a
// tool name through the view's selection, and [junction.Call] to call the
// source and finish the call. The core imports nothing of this package.
//
// # What takes the raw path
//
// A tools/call whose params hold only name and arguments, for a tool of
// a source that is a [junction.RawCaller] and takes the call raw, on a
// stdio connection after notifications/initialized or an HTTP session
// that go-sdk created (or, without sessions, from a client before
// 2026-07-28). docs/performance.md lists what does not, with the reasons.
// [Options.NoRaw] sends everything through go-sdk, for comparison.
//
// # Files
//
//	plane.go     Plane, Options
//	stdio.go     ServeStdio, StdioTransport, the go-sdk connection of a stdio host
//	http.go      HTTPHandler (stateful, stateless, dual), SSEHandler, body checks
//	rawhttp.go   the raw path over HTTP: sessions, answers as JSON or SSE, requests to hosts
//	envelope.go  reading a request's envelope, writing answers around result bytes
//	inflight.go  a connection's calls in flight, for cancellation and draining
//	lines.go     LineReader, the one line reader (hosts' stdio, upstreams' stdout and stderr)
//	writer.go    the coalescing writer
package dataplane
