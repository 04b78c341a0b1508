// Package wire is the bytes of MCP messages that the host front (package
// dataplane) and the server path (package upstream) share: a library the
// two call at their edges. It keeps no connection and starts no
// goroutine; each call's state is the caller's, and what a host
// connection tells a server connection about a call travels in the
// call's context as a [Link].
//
//   - [LineReader], the one line reader (hosts' stdio, servers' stdout
//     and stderr), and [Writer], the one coalescing line writer (a host's
//     stdout, a server's stdin), with the [Batch] of lines one reading
//     goroutine queues; a line made for one write is made in the
//     writer's queue ([Writer.AppendLine]).
//   - [Link]: what a host connection tells a server connection about one
//     call (its batches, what it read of the request, and how the host
//     takes a streamed answer), carried in the call's context.
//   - Cut-through: a long answer is forwarded to the host while it
//     arrives ([Forward], to a [StreamTo] and its [LineOut]); the server's
//     reader decides for which calls.
//   - The rewrites a result may need between a server and a host:
//     content blocks of unknown types ([SanitizeContent],
//     [ContentTransport] for HTTP servers), a server's own members of a
//     2026-07-28 result ([Rewrite], [StripServerFields], [ModernResult]),
//     tool annotations kept in tools/list ([KeepAnnotations]), and the
//     envelopes written around bytes ([AnswerLine], [AppendAnswer],
//     [AppendParams], [AppendCancelled]).
//
// It imports the core (package junction) and internal/rawjson, nothing
// else of junction's; the host front and the sources import it, and
// sources never import the host front.
//
// # Files
//
//	lines.go       LineReader
//	writer.go      Writer, the coalescing writer, and Batch
//	link.go        Link, a host call's batches and stream, in its context;
//	               AppendParams
//	cutthrough.go  a long answer forwarded while it arrives
//	answer.go      answer envelopes around result bytes
//	rewrite.go     Rewrite: a result's members for a 2026-07-28 side
//	content.go     content blocks of unknown types; SSE events
//	annotations.go tool annotations kept in tools/list results
//	meta.go        a request's _meta, read once
//	pipe_linux.go  GrowPipe, PipeCapacity
package wire
