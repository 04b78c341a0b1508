// Command benchhub serves one upstream MCP server through a junction hub,
// over stdio or Streamable HTTP, for the benchmarks. It is the hub as
// `junction serve` builds it (a junction.Hub, an upstream.Server source,
// a dataplane.Plane serving the hub's view) without the daemon's config
// file, auth and metrics, so that the hub alone can be measured and
// profiled (docs/profiles/forward.md).
//
//	benchhub [-http 127.0.0.1:0] [-addr-file F] [-cpuprofile F] [flags] -- COMMAND [ARGS...]
//
// It serves on the data plane's one call path, as junction serve does:
// Plane.ServeStdio on stdio, Plane.HTTPHandler over HTTP, tools/call to
// package upstream's raw calls.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/upstream"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "benchhub:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("benchhub", flag.ContinueOnError)
	addr := fs.String("http", "", "serve Streamable HTTP on `host:port` instead of stdio")
	addrFile := fs.String("addr-file", "", "write the bound HTTP address to `file`")
	jsonResp := fs.Bool("json-response", false, "answer POSTs with application/json instead of SSE")
	name := fs.String("name", "echo", "source `name`; tools keep their upstream names")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: benchhub [flags] -- COMMAND [ARGS...]")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	hub := junction.New(&junction.Options{Name: "junction", Logger: logger})
	defer hub.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	up, err := upstream.New(*name, upstream.Config{Command: fs.Arg(0), Args: fs.Args()[1:]}, &upstream.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer up.Close()
	if err := hub.Add(ctx, *name, up, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		return err
	}
	// Serve only once the upstream's tools are in the hub's table, so the
	// first measured call is not a connection wait.
	if err := up.WaitReady(wctx); err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	if err := hub.Refresh(wctx); err != nil {
		return err
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		return err
	}

	plane := dataplane.New(view, &dataplane.Options{Logger: logger})
	if *addr == "" {
		err := plane.ServeStdio(ctx, os.Stdin, os.Stdout, nil)
		if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
			return err
		}
		return nil
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if *addrFile != "" {
		tmp := *addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, *addrFile); err != nil {
			return err
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", plane.HTTPHandler(&dataplane.HTTPOptions{Mode: dataplane.HTTPStateful, JSONResponse: *jsonResp, Logger: logger}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	return srv.Shutdown(sctx)
}
