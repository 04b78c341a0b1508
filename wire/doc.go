// Package wire is junction's side of the bytes on a connection: what the
// host front (package dataplane) and the sources (package upstream)
// share, and an upstream's stdio connection itself.
//
//   - [ServerConn]: the stdin and stdout of an MCP server junction runs,
//     newline-delimited JSON-RPC both ways: an mcp.Connection for
//     go-sdk's client, and raw tool calls ([RawCall]) beside go-sdk's
//     requests on the same pipes, with their own ids and their table of
//     calls in flight.
//   - Cut-through: a long answer to a raw call is forwarded to the host
//     while it arrives ([StreamTo], [LineOut], [StreamReceiver]).
//   - [LineReader], the one line reader (hosts' stdio, servers' stdout
//     and stderr), and [Writer], the one coalescing line writer (a host's
//     stdout, a server's stdin), with the [Batch] of lines one reading
//     goroutine queues.
//   - [Link]: what a host connection tells a server connection about one
//     call (its batches, and how the host takes a streamed answer),
//     carried in the call's context.
//   - The rewrites a result may need between a server and a host:
//     content blocks of unknown types ([SanitizeContent],
//     [ContentTransport] for HTTP servers), a server's own members of a
//     2026-07-28 result ([Rewrite], [StripServerFields], [ModernResult]),
//     tool annotations kept in tools/list ([KeepAnnotations]), and the
//     answer envelopes written around result bytes ([AnswerLine]).
//
// It imports the core (package junction) and internal/rawjson, nothing
// else of junction's; the host front and the sources import it, and
// sources never import the host front.
//
// # Files
//
//	serverconn.go  ServerConn, RawCall, one raw call on it
//	cutthrough.go  a long answer forwarded while it arrives
//	link.go        Link, a host call's batches and stream, in its context
//	writer.go      Writer, the coalescing writer, and Batch
//	lines.go       LineReader
//	answer.go      answer envelopes around result bytes
//	rewrite.go     Rewrite: a result's members for a 2026-07-28 side
//	content.go     content blocks of unknown types; SSE events
//	annotations.go tool annotations kept in tools/list results
//	pipe_linux.go  GrowPipe, PipeCapacity
package wire
