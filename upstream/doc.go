// Package upstream connects to MCP servers as a client and keeps those
// connections alive: a [Registry] of named [Server]s over stdio, legacy
// SSE or Streamable HTTP, each supervised, reconnected and filtered, and
// each usable as a [junction.Source] behind a hub. It works on its own,
// without a hub:
//
//	reg := upstream.NewRegistry(&upstream.Options{Logger: logger})
//	defer reg.Close()
//	reg.Add("fs", upstream.Config{
//		Command: "npx",
//		Args:    []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"},
//	})
//	reg.Add("search", upstream.Config{URL: "https://search.example/mcp", BearerToken: token})
//	reg.WaitReady(ctx) // optional: Add never blocks
//	res, err := reg.CallTool(ctx, "fs__read_file", json.RawMessage(`{"path":"/tmp/x"}`))
//
// # Overview
//
//	Registry ── name → *Server ──┬── supervisor goroutine: connect, serve, reconnect
//	                             ├── *mcp.Client (go-sdk) ── session ── transport
//	                             │       stdio: own process group, junk-tolerant reader,
//	                             │              stderr → slog line by line
//	                             │       sse / http: go-sdk client transports + headers
//	                             └── junction.Source: Catalog, CallTool, ReadResource, ...
//
// A [Config] is a plain value describing one server; nothing here reads
// files or the environment. [Config.Validate] names the bad field
// ("url: must not be empty for the http transport").
//
// # Lifecycle
//
// [New] (or [Registry.Add]) returns at once; the server connects in the
// background. Its [State] is initializing, then connected. When a session
// ends (the process exits, a stream breaks, a keepalive ping fails) the
// server is degraded and reconnects (at once after a session that lasted,
// after a backoff after one that ended within seconds); when a connection
// attempt fails it is failed and retries after a capped exponential
// backoff with jitter ([Options.MinBackoff], [Options.MaxBackoff]), for as
// long as the server is open.
//
// A server that is reconnecting keeps serving the catalog of its last
// session, so its tools do not flicker out of the hosts' lists, and a
// call to it starts an attempt at once and waits for the new session, up
// to the call's own timeout and context. Only when the server has been
// without a working session for Config.WithdrawAfter (60s by default;
// negative: never) is its catalog withdrawn: the listener is told, calls
// waiting for it fail with an error wrapping [junction.ErrSourceDown], and
// a later call fails as soon as one attempt has. The catalog comes back
// when the server reconnects. A call to a server that has never connected
// likewise waits for one attempt.
//
// [Server.Snapshot] and [Registry.Snapshots] report state, tools, backoff
// and the last error; [Options.OnEvent] reports every change as it
// happens. [Server.Close] and [Registry.Close] stop everything and wait:
// no goroutine and no process is left.
//
// # Stdio servers
//
// A stdio server runs in its own process group. Stopping it closes its
// stdin, waits, sends SIGTERM to the whole group, waits, then SIGKILL
// (Config.StopTimeout per stage), so wrappers such as npx and uvx do not
// leave their children behind. Its stderr goes to the logger line by
// line with the server's name. Lines on its stdout that are not JSON-RPC
// messages (banners, stray prints) are logged and skipped, not fatal.
//
// On every transport, content blocks of types go-sdk does not know are
// replaced by a text block naming the type (the original is kept in its
// _meta) instead of failing the whole call.
//
// # Forwarding
//
// As a [junction.Source], a Server serves the upstream's tools, resources,
// resource templates and prompts (all pages), after the Allow/Deny filters.
// Schemas are kept as sent; a tool whose input schema has no "type" gets
// "type":"object", one that is not an object schema is skipped with a
// warning, so serving it can never panic. Until the first session is up
// the catalog is empty, and the hub is told (CatalogChanged) on connect,
// reconnect, withdrawal (see Lifecycle) and every list_changed from the
// upstream.
//
// CallTool forwards arguments raw, and _meta with the progress token
// replaced by one of junction's own. Progress from the upstream restarts
// the call's no-progress timer (Config.CallTimeout, Config.ToolTimeouts)
// and goes to the host session that made the call, with the host's token,
// before the result. Cancelling the call's context cancels the upstream
// request (notifications/cancelled with the upstream's own request id).
// To a stdio server every call is a raw call (see [Server.CallToolRaw]),
// typed ones included. A stdio server's pipes are one connection
// (serverconn.go): go-sdk's client connection, and the raw calls beside
// its requests, with ids of their own and a table of calls in flight; its
// one reader hands each answer to its call, and forwards a long one to
// the host while it arrives (cutthrough.go). A tool error stays a result with IsError; a JSON-RPC error stays a
// *jsonrpc.Error with its code; a timeout wraps context.DeadlineExceeded
// and leaves the session up for other calls.
//
// Sampling and elicitation requests from an upstream go back to the host
// that caused them. Under protocol 2026-07-28 they arrive inside the tool
// result (multi round-trip) and travel back to the host with it; the
// host's answers come back on the retried call and are forwarded. Under
// older protocols the upstream sends a request that names no call: it is
// routed to the host session with calls in flight on that server, and
// refused if there is none or several. A host on 2026-07-28 cannot be sent
// requests, so for it the upstream call is bridged: the question goes back
// in the result as input requests, and the host's retry carries the answer
// to the waiting upstream.
//
// Log messages go to the log and to the hosts with calls in flight (or
// just finished) on the server. The upstream is asked for messages at
// "info" and above until [Server.SetLogLevel] (the hub's
// [junction.LevelSetter]) names another level: logging/setLevel is sent
// in the background to the session that is up and at every reconnect,
// and under 2026-07-28, which has no logging/setLevel, the level goes in
// the _meta of each call whose host named none. Resource subscriptions
// are forwarded, kept across reconnects, and updates reach the hub's
// [junction.Listener].
//
// # Drift
//
// Every time the tool list is read again (reconnect, list_changed),
// [junction.CompareTools] compares it with the previous one and reports every
// difference: duplicates, added, removed, reordered, description, input
// or output schema, title or annotations changed. Schemas are compared
// canonically ([junction.CanonicalJSON]). The last drift is in the snapshot and
// each one is an [EventDrift] event.
//
// # Reloading
//
// [Server.Update] applies a new [Config] to a running server when nothing
// that needs a new process or connection changed ([Config.NeedsRestart]):
// timeouts, WithdrawAfter and the tool filters change in place and the
// session is kept. [Registry.Replace] gives one server a new Config while
// the others keep running: it updates the server in place when it can;
// otherwise it starts the new server, then stops the old.
// [Registry.Remove] stops one server.
package upstream
