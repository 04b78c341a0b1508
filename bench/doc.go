// Package bench holds junction's performance suite: the in-process
// benchmarks of a forwarded call (go test -bench . ./bench/), and, in its
// subdirectories, the pieces scripts/bench runs as processes:
//
//	bench/echo           the floor: a hand-written JSON-RPC echo server
//	bench/load           the load generator (calls/s, latency, CPU, RSS)
//	bench/cmd/echoserver the echo server as a stdio program
//	bench/cmd/mcpload    the load generator as a program
//	bench/cmd/benchhub   a hub with one upstream, served over stdio or HTTP
//
// docs/performance.md has the results and how to read them; docs/profiles
// has CPU and allocation profiles of a forwarded call.
package bench
