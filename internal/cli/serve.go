package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/commalist"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/internal/gcfloor"
	"github.com/junction-mcp/junction/internal/memtrim"
)

// EnvToken holds the HTTP API token(s), comma-separated.
const EnvToken = "JUNCTION_TOKEN"

const serveAbout = `
Serve the hub. Without -http it speaks MCP on stdin/stdout (newline-delimited
JSON-RPC; logs go to stderr), which is how a host such as Claude Desktop runs
it. With -http it serves Streamable HTTP at /mcp, legacy SSE at /sse,
Prometheus metrics at /metrics, liveness at /healthz and readiness at
/readyz (503 while servers and plugins are still connecting, then 200).

HTTP requires a token (Authorization: Bearer <token> or X-API-Key: <token>)
from -token, -token-file or JUNCTION_TOKEN. With none given, junction makes a
random token and prints it on stderr. -insecure-no-auth turns auth off, and is
refused on anything but a loopback address. An -http or -admin address
that something already listens on stops serve before it builds the hub or
makes a token; -http 127.0.0.1:0 picks a free port.

The status page: a browser at / (on -http, or on the listener of its own
that -admin 127.0.0.1:PORT opens, in stdio mode too) gets a page of the
sources, tools, recent calls and reloads, after logging in at /login with
the token. The -admin listener also serves /status, /metrics, /healthz and
/readyz, with the same token rules, and no MCP.

Tool selection: -preset, -tool, -tools and JUNCTION_TOOLS add up (a union);
with none of them every tool is served; -deny removes tools. An unknown
preset or tool name stops junction before it serves.

Startup: upstream servers and plugins connect in the background, so
initialize is answered at once; a host's first tools/list (and the other
lists) waits until every one of them has connected or failed, at most
-startup-budget (10s; the config file's startup_budget), and a call to a
tool whose server is still connecting waits for it. junction logs "hub
ready" once the hub is built and, as it stops, "hub stopped" with the
number of tool calls it routed and of those the fast path took.

junction's own data plane answers everything a host sends, over stdio,
Streamable HTTP (sessions and requests without one) and legacy SSE. A
call of a stdio upstream's tool is forwarded as raw bytes (several times
the calls/s of decoding it; docs/performance.md); a pack, a plugin or an
HTTP upstream is called with the arguments decoded only for it.

Examples:
  junction serve                                   # stdio, core pack
  junction serve -config junction.yaml              # stdio, the servers of a config file
  junction serve -admin 127.0.0.1:7332             # stdio, and the status page
  junction serve -http 127.0.0.1:7331              # HTTP, prints a token
  junction serve -http 127.0.0.1:7331 -pack conformance -insecure-no-auth
  JUNCTION_TOKEN=s3cret junction serve -http 0.0.0.0:7331 -allowed-host hub.example.com`

func runServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "serve", "[flags]", serveAbout)
	var hf hubFlags
	hf.register(fs)
	def := daemon.ServeDefaults()
	var (
		addr           = fs.String("http", "", "serve HTTP on `host:port` instead of stdio (port 0 picks a free port)")
		mode           = fs.String("http-mode", "dual", "HTTP session `mode`: dual (stateless for 2026-07-28 clients, sessions for older ones), stateful or stateless")
		stateless      = fs.Bool("stateless", false, "shorthand for -http-mode stateless")
		jsonResponse   = fs.Bool("json-response", false, "answer HTTP POSTs with application/json instead of SSE streams")
		sessionTimeout = fs.Duration("session-timeout", def.SessionTimeout, "end HTTP sessions that get no POST for this long; the host then starts a new one (negative: never)")
		sessionPark    = fs.Duration("session-park", def.SessionPark, "park HTTP sessions quiet this long (no request answered, no stream open): under a KiB of each stays, and the host's next request makes the rest anew (negative: never)")
		maxBody        = fs.Int64("max-request-bytes", def.MaxRequestBytes, "largest HTTP request body accepted")
		replayBytes    = fs.Int("replay-bytes", def.ReplayBytes, "keep up to `n` bytes of HTTP sessions' SSE messages (all sessions together) so that hosts can resume dropped streams with Last-Event-ID; 0: keep none")
		budget         = fs.Duration("startup-budget", 0, "a host's first lists wait at most this `duration` for upstream servers and plugins to connect (default 10s, or the config file's startup_budget; 0: do not wait)")
		insecure       = fs.Bool("insecure-no-auth", false, "serve HTTP without a token (loopback addresses only)")
		tokenFile      = fs.String("token-file", "", "read HTTP tokens from `file`, one per line")
		admin          = fs.String("admin", "", "also serve the status page, /status, /metrics, /healthz and /readyz on `host:port`, with -http's token rules; works in stdio mode too")
		audit          = fs.String("audit", "", "write one JSON line per tool call to `output`: stderr, or a file rotated by size (docs/observability.md; default: the config file's audit.output, else none)")
		auditArgs      = fs.Bool("audit-arguments", false, "add each call's arguments to its audit line (they are the host's data: off by default)")
		tokens         stringList
		hosts          stringList
		origins        stringList
	)
	fs.Var(&tokens, "token", "accept this HTTP API `token` (repeatable)")
	fs.Var(&hosts, "allowed-host", "also accept this Host header `name` (repeatable; loopback names and the listen host are always accepted)")
	fs.Var(&origins, "allowed-origin", "also accept this `origin` (scheme://host:port; repeatable)")
	var guard guardFlags
	guard.register(fs)
	if err := refuseGoneFlags(args); err != nil {
		return err
	}
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("serve takes no arguments, got %q", fs.Args())
	}
	hf.noteSet(fs)
	flags := daemon.ServeFlags{
		Set: hf.set, LogLevel: hf.logLevel, LogFormat: hf.logFormat,
		HTTP: *addr, HTTPMode: *mode, Stateless: *stateless, JSONResponse: *jsonResponse,
		SessionTimeout: *sessionTimeout, SessionPark: *sessionPark, MaxRequestBytes: *maxBody,
		ReplayBytes: *replayBytes, StartupBudget: *budget, InsecureNoAuth: *insecure,
		TokenFile: *tokenFile, Admin: *admin, Audit: *audit, AuditArguments: *auditArgs,
		Tokens: tokens, AllowedHosts: hosts, AllowedOrigins: origins, Guard: guard.opts,
	}
	if err := flags.Check(); err != nil { // before the file is read
		return usageErrorf("%v", err)
	}
	fileCfg, cfgPath, err := hf.loadConfig(env)
	if err != nil {
		return err
	}
	// The flags merged with the file (package daemon): what serve runs with.
	s, err := daemon.ServeSettings(flags, fileCfg, env.Stderr)
	if err != nil {
		return usageErrorf("%v", err)
	}
	logger := s.Logger
	hf.startupBudget, hf.audit = s.StartupBudget, s.Audit

	var fromFile []string
	if s.Admin != "" {
		if err := daemon.CheckAdmin(s.Admin, s.InsecureNoAuth); err != nil {
			return usageErrorf("%v", err)
		}
		if err := checkFree("-admin", s.Admin); err != nil {
			return err
		}
	}
	if s.Listen != "" || s.Admin != "" {
		// Check the address and the token file before building anything
		// or printing a token.
		if s.Listen != "" {
			if err := daemon.CheckListen(s.Listen, s.InsecureNoAuth); err != nil {
				return usageErrorf("%v", err)
			}
			if err := checkFree("-http", s.Listen); err != nil {
				return err
			}
		}
		if err := guard.check(); err != nil {
			return err
		}
		if s.TokenFile != "" {
			if fromFile, err = readTokenFile(s.TokenFile); err != nil {
				return err
			}
		}
	}

	d, err := hf.build(ctx, env, logger, fileCfg, cfgPath)
	if err != nil {
		return err
	}
	defer d.Close()
	defer func() {
		calls, raw := d.Metrics.CallTotals()
		logger.Info("hub stopped", "tool_calls", calls, "fast_path_calls", raw)
	}()
	logger.Info("hub ready", "tools", len(d.View.ToolNames()), "sources", strings.Join(d.Hub.SourceNames(), ","))
	defer afterStartup(ctx, d.Hub, s.Listen == "", logger)()

	if cfgPath != "" {
		stopWatch := watchConfig(ctx, cfgPath, fileCfg, env, d, logger)
		defer stopWatch()
	}

	frontAuth, err := daemon.NewFrontAuth(s.Auth)
	if err != nil {
		return err
	}
	if frontAuth != nil && s.InsecureNoAuth {
		return usageErrorf("-insecure-no-auth contradicts the config file's http.auth (mode oauth); keep one")
	}
	all := append([]string(nil), s.Tokens...)
	all = append(all, commalist.Split(env.Getenv(EnvToken))...)
	all = append(all, fromFile...)
	if len(all) == 0 && !s.InsecureNoAuth && (s.Admin != "" || s.Listen != "" && !d.DiPeOAuth() && frontAuth == nil) {
		all = []string{generatedToken(env, EnvToken)}
	}
	if s.Admin != "" {
		actx, stopAdmin := context.WithCancel(ctx)
		adminDone := make(chan error, 1)
		go func() {
			err := d.ServeAdmin(actx, daemon.HTTPConfig{
				Addr: s.Admin, Tokens: all, InsecureNoAuth: s.InsecureNoAuth, AllowedHosts: s.AllowedHosts, AllowedOrigins: s.AllowedOrigins,
				Guard: s.Guard, ShutdownTimeout: 5 * time.Second,
				Ready: func(a net.Addr) { fmt.Fprintf(env.Stderr, "junction: status page on http://%s/\n", a) },
			})
			if err != nil { // the hub goes on serving its host
				logger.Error("admin listener stopped; the hub serves on without it", "error", err)
			}
			adminDone <- err
		}()
		defer func() {
			stopAdmin()
			<-adminDone
		}()
	}

	if s.Listen == "" {
		return d.ServeStdio(ctx, env.Stdin, env.Stdout)
	}
	cfg := daemon.HTTPConfig{
		Addr:           s.Listen,
		Tokens:         all,
		OAuth:          frontAuth,
		InsecureNoAuth: s.InsecureNoAuth,
		AllowedHosts:   s.AllowedHosts,
		AllowedOrigins: s.AllowedOrigins,
		MCP:            s.MCP,
		Ready: func(a net.Addr) {
			fmt.Fprintf(env.Stderr, "junction: listening on http://%s/mcp\n", a)
		},
		Guard:           s.Guard,
		ShutdownTimeout: 10 * time.Second,
	}
	if err := d.ServeHTTP(ctx, cfg); err != nil {
		if addrInUse(err) {
			// Taken since checkFree looked.
			return fmt.Errorf("%w\n%s", err, addrInUseHint("-http", s.Listen))
		}
		return err
	}
	return nil
}

// checkFree reports an address that serve could not listen on because
// something listens there already, before the hub is built and a token
// printed: trying to listen is the one sure test (the address is given
// back at once; daemon listens again when it serves). Other listen errors
// are left to the daemon, which says them in its own words.
func checkFree(flagName, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if addrInUse(err) {
			return &ExitError{Code: 1, Err: fmt.Errorf("%s %s: the address is in use: another program (perhaps another junction serve) listens there\n%s", flagName, addr, addrInUseHint(flagName, addr))}
		}
		return nil
	}
	ln.Close()
	return nil
}

// addrInUse reports whether err is a listen that failed because the
// address is taken (EADDRINUSE; WSAEADDRINUSE on Windows).
func addrInUse(err error) bool {
	const wsaEADDRINUSE = 10048
	var errno syscall.Errno
	return errors.Is(err, syscall.EADDRINUSE) ||
		runtime.GOOS == "windows" && errors.As(err, &errno) && errno == wsaEADDRINUSE
}

// addrInUseHint says how to choose another address than addr.
func addrInUseHint(flagName, addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = "127.0.0.1"
	}
	return fmt.Sprintf("Stop that program, or choose another address: %s %s lets the system pick a free port (junction prints the address it got), or name another port.",
		flagName, net.JoinHostPort(host, "0"))
}

// afterStartup settles the process for serving once its start is over:
// it gives back the pages of junction's own code and read-only data that
// only its start used (package memtrim), and from then on raises the
// collector's heap goal while calls come fast (package gcfloor; not
// during startup, whose garbage would then stay resident). stop ends the
// wait, if it is still on, and the collector's tuning.
//
// The start is over once every source has connected (or the startup
// budget has run out), for a process that serves one stdio host (stdio)
// that host has finished its handshake or, if it does not initialize
// (2026-07-28 on), made its first request (or handshakeWait has passed),
// and then startSettle has: a stdio hub's host greets it once in its
// life, at once, and the sources' arrival sets off work of its own (the
// name table rebuilt, list_changed sent). Pages released before those
// run are mapped again as they do: 3-4 MiB more resident, idle, in one
// start of three to five before this wait.
func afterStartup(ctx context.Context, h *junction.Hub, stdio bool, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	stopFloor := func() {}
	go func() {
		defer close(done)
		h.WaitStartup(ctx)
		greeted := false
		if stdio {
			wait := time.NewTimer(handshakeWait)
			select {
			case <-h.Greeted():
				greeted = true
			case <-wait.C:
			case <-ctx.Done():
			}
			wait.Stop()
		}
		settle := time.NewTimer(startSettle)
		select {
		case <-settle.C:
		case <-ctx.Done():
		}
		settle.Stop()
		if ctx.Err() != nil {
			return
		}
		// Before the release: its own first steps (runtime/metrics' table)
		// are among the startup pages given back.
		stopFloor = gcfloor.Start(gcfloor.Options{})
		n, err := memtrim.Release()
		if err != nil {
			logger.Warn("could not give back the startup pages; junction serves on, with them", "error", err)
			return
		}
		logger.Debug("startup pages released", "bytes", n, "after_handshake", greeted)
	}()
	return func() {
		cancel()
		<-done
		stopFloor()
	}
}

// handshakeWait bounds how long afterStartup waits for a stdio host's
// handshake once the sources are up (a 2026-07-28 host has none), and
// startSettle is how long it then lets the work the start set off run.
// Released right after the sources were up, 3 to 5 starts of 12 held
// 11-13 MiB idle (bench/cmd/mcpload -idle-rss, a configured upstream);
// released 30, 100 or 500 ms after, or 50 or 100 ms after the handshake,
// every one of 12 held 6.4-7.0.
const (
	handshakeWait = 5 * time.Second
	startSettle   = 100 * time.Millisecond
)

// errReloadIncomplete marks a reload that applied the new config but for
// the parts it names.
var errReloadIncomplete = errors.New("reload incomplete")

// watchConfig reloads the config file on change and on SIGHUP until ctx is
// done or the returned stop is called; the lock file it names is watched
// with it, so a new "junction lock" applies at once. A bad file is logged
// and changes nothing. It returns once the files are watched.
func watchConfig(ctx context.Context, path string, current *config.Config, env *Env, d *daemon.Daemon, logger *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	stopPeers := d.ForwardReloads(hup) // a reload by another replica sharing the store
	w := &config.Watcher{
		Path:    path,
		Getenv:  env.Getenv,
		Signals: hup,
		Current: current,
		OnChange: func(c *config.Config) error {
			skipSelf(c, path, env)
			err := d.Reload(ctx, c)
			if err != nil && !errors.Is(err, daemon.ErrReloadRefused) {
				return fmt.Errorf("%w: %w", errReloadIncomplete, err)
			}
			return err
		},
		OnError: func(err error) {
			if errors.Is(err, errReloadIncomplete) {
				// A source's change failed once the new sources were
				// in: the rest of the new config is running.
				logger.Error("config reload incomplete: what failed is named below, the rest of the new config is applied; fix the file to retry", "file", path, "error", err)
				return
			}
			if !errors.Is(err, daemon.ErrReloadRefused) {
				d.ReloadRefused(err) // the file did not load; Reload records its own refusals
			}
			logger.Error("config reload refused; the running config is unchanged", "file", path, "error", err)
		},
		Related: func(c *config.Config) []string {
			if lock := d.LockFile(c); lock != "" {
				return []string{lock}
			}
			return nil
		},
	}
	started := make(chan struct{})
	w.OnStart = func() { close(started) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx); err != nil && ctx.Err() == nil {
			logger.Error("config watcher stopped", "file", path, "error", err)
		}
	}()
	select { // a change made once serve listens is seen
	case <-started:
	case <-done:
	}
	return func() {
		stopPeers()
		signal.Stop(hup)
		cancel()
		<-done
	}
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

// refuseGoneFlags names a flag serve no longer has, with what to do,
// rather than the flag package's "flag provided but not defined".
func refuseGoneFlags(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "fast-path" {
			return &UsageError{
				msg:  "serve: -fast-path is gone: junction has one call path, which answers every host request; remove the flag",
				hint: "Run \"junction serve -help\" for its flags.\n",
			}
		}
	}
	return nil
}
