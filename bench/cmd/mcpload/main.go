// Command mcpload drives an MCP server with tools/call load and reports
// what it cost. See package bench/load.
//
//	mcpload [flags] -- COMMAND [ARGS...]     a stdio server it spawns
//	mcpload [flags] -url URL [-pid PID]      a Streamable HTTP endpoint
//	mcpload -idle-sessions 1000 [-idle-call -tool NAME] -url URL -pid PID
//	mcpload -spawn-runs 20 -- COMMAND [ARGS...]
//	mcpload -idle-rss 1s -- COMMAND [ARGS...]
//
// -protocol 2026-07-28 speaks that revision: no initialize (server/discover
// instead), the protocol fields in every request's _meta, and over HTTP
// no session and the Mcp-Protocol-Version, Mcp-Method and Mcp-Name
// headers on every POST.
//
// Output is one JSON object on stdout (-format json, the default) or a
// human-readable line (-format text).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/junction-mcp/junction/bench/load"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg load.Config
	fs.StringVar(&cfg.URL, "url", "", "Streamable HTTP `endpoint` to drive (instead of a command after --)")
	fs.StringVar(&cfg.Token, "token", os.Getenv("MCPLOAD_TOKEN"), "bearer `token` for -url (env MCPLOAD_TOKEN)")
	fs.IntVar(&cfg.PID, "pid", 0, "`pid` of the HTTP server, whose process tree's CPU and memory are measured")
	fs.StringVar(&cfg.Tool, "tool", "echo", "`name` of the tool to call with {\"msg\": ...}")
	fs.DurationVar(&cfg.ReadyWait, "ready-wait", 0, "retry the first call for up to this `duration` (a hub whose upstream connects in the background)")
	fs.IntVar(&cfg.Calls, "n", 10000, "number of timed `calls`")
	fs.IntVar(&cfg.Concurrency, "c", 1, "calls in flight")
	fs.IntVar(&cfg.Payload, "p", 16, "payload (msg) size in `bytes`")
	fs.IntVar(&cfg.ResultSize, "result-size", 0, "ask the echo tool for a result of this many `bytes` (instead of msg back)")
	fs.IntVar(&cfg.Warmup, "warmup", 0, "untimed calls first (0: n/10 up to 1000; negative: none)")
	fs.StringVar(&cfg.Driver, "driver", "raw", "client: raw (hand-written JSON-RPC) or sdk (go-sdk's client)")
	fs.StringVar(&cfg.ProtocolVersion, "protocol", "2025-11-25", "protocol `version` offered by the raw driver")
	label := fs.String("label", "", "label copied into the JSON output")
	format := fs.String("format", "json", "output `format`: json or text")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	idle := fs.Int("idle-sessions", 0, "instead of calls, open this many idle HTTP sessions and report memory per session")
	idleCall := fs.Bool("idle-call", false, "with -idle-sessions: each session calls -tool once before it idles; with -idle-rss: the server answers -n calls of -tool at -c first")
	idleStream := fs.Bool("idle-stream", false, "with -idle-sessions: each session also keeps a standalone GET stream open, on a connection of its own")
	spawnRuns := fs.Int("spawn-runs", 0, "instead of calls, spawn the command this many times and report the median time to initialize")
	idleWait := fs.Duration("idle-wait", 0, "with -idle-sessions: measure again after the sessions have been quiet this `long` (bytes_per_session_after_wait)")
	idleRSS := fs.Duration("idle-rss", 0, "instead of calls, spawn the command, complete the handshake, wait this `long` and report its resident memory")
	serverStderr := fs.Bool("server-stderr", false, "pass the spawned server's stderr through")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Command = fs.Args()
	if *serverStderr {
		cfg.Stderr = stderr
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	out := map[string]any{}
	if *label != "" {
		out["label"] = *label
	}
	switch {
	case *idle > 0:
		if cfg.URL == "" {
			return errors.New("-idle-sessions needs -url and -pid")
		}
		o := load.IdleOptions{Wait: *idleWait, Streams: *idleStream}
		if *idleCall {
			o.Tool = cfg.Tool
		}
		per, after, err := load.IdleSessions(ctx, cfg.URL, cfg.Token, cfg.PID, *idle, o)
		if err != nil {
			return err
		}
		out["idle_sessions"] = *idle
		out["bytes_per_session"] = per.RSS
		out["anon_bytes_per_session"] = per.Anon
		if *idleWait > 0 {
			out["bytes_per_session_after_wait"] = after.RSS
			out["anon_bytes_per_session_after_wait"] = after.Anon
		}
	case *idleRSS > 0:
		if len(cfg.Command) == 0 {
			return errors.New("-idle-rss needs a command after --")
		}
		idle, err := load.IdleRSS(ctx, cfg, *idleRSS, *idleCall)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(idle)
		json.Unmarshal(b, &out)
	case *spawnRuns > 0:
		if len(cfg.Command) == 0 {
			return errors.New("-spawn-runs needs a command after --")
		}
		d, err := load.SpawnToInitialize(ctx, cfg.Command, nil, *spawnRuns)
		if err != nil {
			return err
		}
		out["spawn_runs"] = *spawnRuns
		out["init_ms"] = float64(d) / float64(time.Millisecond)
	default:
		res, err := load.Run(ctx, cfg)
		if err != nil {
			return err
		}
		if *format == "text" {
			fmt.Fprintf(stdout, "%s %s: %d calls c=%d p=%d: %.0f calls/s, p50 %.0fµs p99 %.0fµs, server CPU %.1fµs/call, driver CPU %.1fµs/call, server RSS %.1f MiB, %.1f MB/s, init %.2fms, %d errors\n",
				*label, res.Driver, res.Calls, res.Concurrency, res.Payload, res.CallsPerSec, res.P50us, res.P99us, res.ServerCPUus, res.DriverCPUus, res.ServerRSSMiB, res.MBPerSec, res.InitMs, res.Errors)
			return nil
		}
		b, _ := json.Marshal(res)
		json.Unmarshal(b, &out)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return nil
}
