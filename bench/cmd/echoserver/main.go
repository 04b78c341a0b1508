// Command echoserver is the benchmark's floor: a hand-written MCP server
// with one tool, "echo" (see package bench/echo), over stdio, or with
// -http over Streamable HTTP.
//
//	echoserver [-protocol 2026-07-28]
//	echoserver -http 127.0.0.1:PORT [-protocol 2026-07-28]
//
// -protocol is the newest revision it speaks: 2025-11-25 (the default: no
// server/discover, no per-request _meta) or 2026-07-28 (also
// server/discover, per-request _meta checked, and over HTTP stateless
// requests beside sessions).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/junction-mcp/junction/bench/echo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("echoserver", flag.ContinueOnError)
	addr := fs.String("http", "", "serve Streamable HTTP on `host:port` (path /mcp) instead of stdio")
	protocol := fs.String("protocol", echo.ProtocolVersion, "newest protocol `revision` spoken: "+echo.ProtocolVersion+" or "+echo.ModernVersion)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var s echo.Server
	switch *protocol {
	case echo.ProtocolVersion:
	case echo.ModernVersion:
		s.Modern = true
	default:
		return fmt.Errorf("-protocol: %q is neither %s nor %s", *protocol, echo.ProtocolVersion, echo.ModernVersion)
	}
	if *addr == "" {
		return s.Serve(os.Stdin, os.Stdout)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "echoserver: listening on http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
