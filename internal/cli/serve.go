package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/daemon"
)

// EnvToken holds the HTTP API token(s), comma-separated.
const EnvToken = "JUNCTION_TOKEN"

const serveAbout = `
Serve the hub. Without -http it speaks MCP on stdin/stdout (newline-delimited
JSON-RPC; logs go to stderr), which is how a host such as Claude Desktop runs
it. With -http it serves Streamable HTTP at /mcp, legacy SSE at /sse,
Prometheus metrics at /metrics and liveness at /healthz.

HTTP requires a token (Authorization: Bearer <token> or X-API-Key: <token>)
from -token, -token-file or JUNCTION_TOKEN. With none given, junction makes a
random token and prints it on stderr. -insecure-no-auth turns auth off, and is
refused on anything but a loopback address.

Tool selection: -preset, -tool, -tools and JUNCTION_TOOLS add up (a union);
with none of them every tool is served; -deny removes tools. An unknown
preset or tool name stops junction before it serves.

Examples:
  junction serve                                   # stdio, core pack
  junction serve -http 127.0.0.1:7331              # HTTP, prints a token
  junction serve -http 127.0.0.1:7331 -pack conformance -insecure-no-auth
  JUNCTION_TOKEN=s3cret junction serve -http 0.0.0.0:7331 -allowed-host hub.example.com`

func runServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "serve", "[flags]", serveAbout)
	var hf hubFlags
	hf.register(fs)
	var (
		addr           = fs.String("http", "", "serve HTTP on `host:port` instead of stdio (port 0 picks a free port)")
		mode           = fs.String("http-mode", "dual", "HTTP session `mode`: dual (stateless for 2026-07-28 clients, sessions for older ones), stateful or stateless")
		stateless      = fs.Bool("stateless", false, "shorthand for -http-mode stateless")
		jsonResponse   = fs.Bool("json-response", false, "answer HTTP POSTs with application/json instead of SSE streams")
		sessionTimeout = fs.Duration("session-timeout", junction.DefaultSessionTimeout, "close HTTP sessions idle this long (negative: never)")
		maxBody        = fs.Int64("max-request-bytes", junction.DefaultMaxRequestBytes, "largest HTTP request body accepted")
		insecure       = fs.Bool("insecure-no-auth", false, "serve HTTP without a token (loopback addresses only)")
		tokenFile      = fs.String("token-file", "", "read HTTP tokens from `file`, one per line")
		tokens         stringList
		hosts          stringList
		origins        stringList
	)
	fs.Var(&tokens, "token", "accept this HTTP API `token` (repeatable)")
	fs.Var(&hosts, "allowed-host", "also accept this Host header `name` (repeatable; loopback names and the listen host are always accepted)")
	fs.Var(&origins, "allowed-origin", "also accept this `origin` (scheme://host:port; repeatable)")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("serve takes no arguments, got %q", fs.Args())
	}
	logger, err := hf.logger(env)
	if err != nil {
		return err
	}
	httpMode, err := junction.ParseHTTPMode(*mode)
	if err != nil {
		return usageErrorf("-http-mode: %v", err)
	}
	if *stateless {
		httpMode = junction.HTTPStateless
	}
	if *addr == "" && (*insecure || len(tokens) > 0 || *tokenFile != "") {
		return usageErrorf("-token, -token-file and -insecure-no-auth only apply with -http")
	}

	d, err := hf.build(ctx, env, logger)
	if err != nil {
		return err
	}
	defer d.Close()
	logger.Info("hub ready", "tools", len(d.View.ToolNames()), "sources", strings.Join(d.Hub.SourceNames(), ","))

	if *addr == "" {
		return d.ServeStdio(ctx, env.Stdin, env.Stdout)
	}

	all := append([]string(nil), tokens...)
	all = append(all, junction.SplitList(env.Getenv(EnvToken))...)
	if *tokenFile != "" {
		fromFile, err := readTokenFile(*tokenFile)
		if err != nil {
			return err
		}
		all = append(all, fromFile...)
	}
	if len(all) == 0 && !*insecure {
		t := make([]byte, 24)
		rand.Read(t)
		generated := hex.EncodeToString(t)
		all = []string{generated}
		fmt.Fprintf(env.Stderr, "junction: no token given; this run accepts the generated token\n\n    %s\n\nsend it as \"Authorization: Bearer <token>\" (set %s or -token to choose your own)\n\n", generated, EnvToken)
	}
	cfg := daemon.HTTPConfig{
		Addr:           *addr,
		Tokens:         all,
		InsecureNoAuth: *insecure,
		AllowedHosts:   hosts,
		AllowedOrigins: origins,
		MCP: junction.HTTPOptions{
			Mode:            httpMode,
			JSONResponse:    *jsonResponse,
			SessionTimeout:  *sessionTimeout,
			MaxRequestBytes: *maxBody,
		},
		Ready: func(a net.Addr) {
			fmt.Fprintf(env.Stderr, "junction: listening on http://%s/mcp\n", a)
		},
		ShutdownTimeout: 10 * time.Second,
	}
	if err := d.ServeHTTP(ctx, cfg); err != nil {
		return err
	}
	return nil
}

// readTokenFile reads one token per line, skipping blank lines and lines
// starting with #.
func readTokenFile(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-token-file: %w", err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-token-file %s: no tokens in file", path)
	}
	return out, nil
}
