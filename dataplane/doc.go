// Package dataplane is junction's data plane: everything between a host's
// bytes and a source's bytes on the way of a call. It frames messages
// (newline-delimited JSON-RPC on stdio, Streamable HTTP and legacy SSE on
// HTTP), forwards tool calls as raw bytes where it can, keeps each
// connection's table of calls in flight with their cancellation, answers
// the lists, prompts, resources, completions and the meta-tools' calls
// through the view, and puts the log messages and requests a source has
// for a host on the right stream. It answers everything a host sends,
// over every transport; go-sdk's server is not behind it.
// It is the host front only: a stdio upstream's pipes, the line reader,
// the coalescing writer and the answer envelopes are package wire's,
// which the sources use too.
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
//	                        └─ other requests ─▶ View.ListPage, GetPrompt, ReadResource, Initialize, … (requests.go)   │
//	host ◀──bytes── writer (lines coalesced: one write for the answers ready together) ◀──────────────────────────┘
//
// Every branch meets the core (package junction) through one small
// surface: [junction.View.Begin] or [junction.View.BeginRaw] to resolve a
// tool name through the view's selection, and [junction.Call] to call the
// source and finish the call. The core imports nothing of this package.
//
// # What takes the raw path
//
// A tools/call of the plain shape the envelope scanner reads (params with
// name, arguments, _meta, inputResponses, requestState; no task), for a
// tool the view serves (waiting for the sources still connecting), other
// than its own meta-tools: as bytes to a source that is a
// [junction.RawCaller] and takes the call raw, through its CallTool to
// any other (see [junction.Call.Decoded]; over HTTP not for an older
// client without a session). On a stdio connection, a legacy HTTP+SSE
// session and a Streamable HTTP session (each a line connection) once
// initialize is answered (or a 2026-07-28 request, which stands alone);
// over HTTP without a session for a 2026-07-28 request (one that asks
// for progress or log messages only when answers may be SSE streams),
// and, in stateless mode, an older client's (one that asks for progress
// on the same condition). A 2026-07-28 request's own log level, every
// request of a Streamable HTTP session, and the progress and log
// messages of a request without a session reach the host through a
// junction.HostLink (hostlink.go, session.go).
// docs/design.md ("What takes the fast path") has the full list with the
// reasons. Every other request is answered from the view.
//
// # Files
//
//	plane.go      Plane, Options
//	stdio.go      ServeStdio: a stdio host's connection, every message it sends
//	http.go       HTTPHandler (stateful, stateless, dual), body checks
//	session.go    a Streamable HTTP session: a line connection fed by its POSTs, its output routed to their responses and its GET stream, resumable streams
//	alone.go      a request without a session over HTTP: refusals in go-sdk's order, and a connection of its own
//	rawhttp.go    the raw path over HTTP without a session: answers as JSON or SSE
//	hostlink.go   host links (a raw call's log messages and progress), and a line connection's Host
//	asks.go       requests to hosts (sampling, elicitation, roots) and their answers
//	sse.go        the legacy HTTP+SSE endpoint: each session a line connection
//	inprocess.go  Transport: a go-sdk client connected in process, as a stdio host
//	sessions.go   the Streamable HTTP session front: timeouts, parking, sealed (portable) ids
//	ledger.go     SessionLedger: ended sessions, shared by replicas
//	replay.go     the event store that resumes a broken stream
//	listen.go     subscriptions/listen streams, and a stdio connection's resource subscriptions and list changes
//	tasks.go      the tasks extension's requests on the raw path
//	envelope.go   reading a request's envelope
//	ids.go        request ids kept byte for byte where go-sdk's decoder reads a message
//	inflight.go   a connection's calls in flight, for cancellation and draining; each carries its wire.Link
package dataplane
