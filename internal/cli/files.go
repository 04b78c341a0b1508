package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/daemon"
	"github.com/junction-mcp/junction/internal/files"
	"github.com/junction-mcp/junction/internal/httpguard"
)

// envFilesToken holds the token of the file listener and the deploy host
// (and what push, pull and junction mcp send).
const envFilesToken = "JUNCTION_FILES_TOKEN"

// listenerAbout is the part of files serve's and deploy-host's help on
// auth, connection bounds and path limits.
const listenerAbout = `
Auth: every request needs "Authorization: Bearer <token>" with the token
from -token or JUNCTION_FILES_TOKEN (junction files push, files pull and
mcp send the same variable). With none given, junction makes a random token and prints
it on stderr. -insecure-no-auth turns auth off, and is refused on anything
but a loopback address.

[ADDR:]PORT[,CLIENT...]: a bare port listens on 127.0.0.1 only. Clients
after the port, IP addresses or CIDR prefixes separated by commas (as in
"diode files 8080,10.0.0.0/8"), are the only ones served; others get 403.

Slow clients: a request's line and headers must arrive within
-read-header-timeout; a body, or a response, that moves less than 64 KiB in
-progress-timeout is cut off (408 for a body), however long the whole
transfer takes; a keep-alive connection idle for -idle-timeout is closed;
headers over -max-header-bytes get 431. Paths longer than -max-path-bytes
(or with a name over 255 bytes) get 414, deeper than -max-depth 400.`

const filesServeAbout = `
Serve the files under -fileroot over HTTP with the "diode files" contract:
PUT stores a body (204), GET returns a file (200), HEAD its headers; other
methods get 405. Paths cannot leave the root (.., absolute, encoded tricks
and symbolic links out are refused with 400). Uploads are written to a
temporary file and renamed into place, so a failed or cut-off upload leaves
nothing; a body over -max-body gets 413.
` + listenerAbout + `

Examples:
  junction files serve -fileroot ./share 8080          # prints a token
  junction files serve -fileroot ./share -insecure-no-auth 8080
  JUNCTION_FILES_TOKEN=s3cret junction files serve -fileroot /srv/drop 0.0.0.0:8080
  junction files serve -fileroot /srv/drop 0.0.0.0:8080,10.0.0.0/8,192.168.1.7   # those clients only`

func runFilesServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "files serve", "[flags] [ADDR:]PORT[,CLIENT...]", filesServeAbout)
	root := fs.String("fileroot", "", "serve and store files under `dir` (default: the current directory)")
	maxBody := fs.Int64("max-body", files.DefaultMaxBody, "largest PUT body in `bytes` (413 above it; negative: no limit)")
	var lf listenerFlags
	lf.register(fs, "longest path in `bytes` (414 above it)")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	addr, clients, err := listenArg(fs.Args())
	if err != nil {
		return err
	}
	if err := lf.check(env, addr); err != nil {
		return err
	}
	dir, err := rootDir(*root, "-fileroot")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	l, err := files.NewListener(dir, &files.ListenerOptions{MaxBody: *maxBody, Token: lf.token(env), Paths: lf.paths, Logger: logger})
	if err != nil {
		return err
	}
	defer l.Close()
	return serveHTTP(ctx, env, addr, clients.Handler(l), lf.guard.opts, fmt.Sprintf("files listening on http://%%s/ (root %s; %s%s)", dir, lf.authNote(), clientsNote(clients)))
}

const deployHostAbout = `
Accept deploys: PUT /<uuid>.tar.gz stores the gzip tarball, checks and
unpacks it into DIR/<uuid>/ (no absolute or .. entries, no links out, no
device files, size, entry and path limits), optionally runs a command there
(given after --, off by default), and writes DIR/<uuid>.log describing what
happened. GET and HEAD serve DIR's files, so diode_deploy's log preview and
diode_file_pull work against it. A rejected tarball gets 422 and changes
nothing but the log.
` + listenerAbout + `

Examples:
  junction files deploy-host -root /srv/deploy 8003         # prints a token
  JUNCTION_FILES_TOKEN=s3cret junction files deploy-host -root /srv/deploy 127.0.0.1:8003 -- ./install.sh`

func runDeployHost(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "files deploy-host", "[flags] [ADDR:]PORT [-- command args...]", deployHostAbout)
	root := fs.String("root", "", "deploy `dir` (required)")
	maxUpload := fs.Int64("max-upload", files.DefaultMaxBody, "largest tarball in `bytes` (413 above it)")
	maxBytes := fs.Int64("max-bytes", 1<<30, "largest total unpacked size in `bytes`")
	maxEntries := fs.Int("max-entries", 10000, "most tar entries accepted")
	cmdTimeout := fs.Duration("command-timeout", 10*time.Minute, "bound on the command after --")
	var lf listenerFlags
	lf.register(fs, "longest request path and tar entry name in `bytes` (414, 422 above it)")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	var command []string
	for i, a := range rest {
		if a == "--" {
			rest, command = rest[:i], rest[i+1:]
			break
		}
	}
	if *root == "" {
		return usageErrorf("files deploy-host: -root is required")
	}
	addr, clients, err := listenArg(rest)
	if err != nil {
		return err
	}
	if err := lf.check(env, addr); err != nil {
		return err
	}
	dir, err := rootDir(*root, "-root")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	d, err := files.NewDeployHost(dir, &files.DeployOptions{
		MaxUpload:      *maxUpload,
		Limits:         files.Limits{MaxBytes: *maxBytes, MaxEntries: *maxEntries, Paths: lf.paths},
		Command:        command,
		CommandTimeout: *cmdTimeout,
		Environ:        env.Environ(),
		Token:          lf.token(env),
		Logger:         logger,
	})
	if err != nil {
		return err
	}
	defer d.Close()
	return serveHTTP(ctx, env, addr, clients.Handler(d), lf.guard.opts, fmt.Sprintf("deploy host listening on http://%%s/ (root %s; %s%s)", dir, lf.authNote(), clientsNote(clients)))
}

// listenerFlags are the flags files serve and deploy-host share: auth,
// the bounds on slow clients and the path limits.
type listenerFlags struct {
	given    string // -token or JUNCTION_FILES_TOKEN
	insecure bool
	guard    guardFlags
	paths    files.PathLimits
}

func (lf *listenerFlags) register(fs *flag.FlagSet, pathBytesUsage string) {
	// No default from the environment: -help would print the secret.
	fs.StringVar(&lf.given, "token", "", "require this bearer `token` (env "+envFilesToken+"; with neither, a token is generated and printed)")
	fs.BoolVar(&lf.insecure, "insecure-no-auth", false, "serve without a token (loopback addresses only)")
	lf.guard.register(fs)
	fs.IntVar(&lf.paths.MaxBytes, "max-path-bytes", files.DefaultMaxPathBytes, pathBytesUsage)
	fs.IntVar(&lf.paths.MaxDepth, "max-depth", files.DefaultMaxDepth, "most `levels` in a path (\"a/b/c\" is 3; deeper is refused)")
}

// check takes the token from the environment if -token gave none, and
// refuses bounds that are not positive, -insecure-no-auth off loopback
// (the check serve -http makes) and a token with it, before anything is
// built or a token printed.
func (lf *listenerFlags) check(env *Env, addr string) error {
	if lf.given == "" {
		lf.given = env.Getenv(envFilesToken)
	}
	if err := lf.guard.check(); err != nil {
		return err
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"max-path-bytes", lf.paths.MaxBytes}, {"max-depth", lf.paths.MaxDepth}} {
		if n.v <= 0 {
			return usageErrorf("-%s: must be positive, got %d", n.name, n.v)
		}
	}
	if err := daemon.CheckListen(addr, lf.insecure); err != nil {
		return usageErrorf("%v", err)
	}
	if lf.insecure && lf.given != "" {
		return usageErrorf("-insecure-no-auth contradicts -token (or %s); keep one", envFilesToken)
	}
	return nil
}

// token returns the token to require: the one given, none with
// -insecure-no-auth, else a generated one (printed). Call it once.
func (lf *listenerFlags) token(env *Env) string {
	switch {
	case lf.given != "":
		return lf.given
	case lf.insecure:
		return ""
	}
	lf.given = generatedToken(env, envFilesToken)
	return lf.given
}

func (lf *listenerFlags) authNote() string {
	if lf.insecure {
		return "no auth"
	}
	return "token required"
}

// listenArg parses the one [ADDR:]PORT[,CLIENT...] argument (the form of
// "diode files"): a bare port means 127.0.0.1, and the clients after it,
// IP addresses or CIDR prefixes, are the only ones served.
func listenArg(args []string) (string, httpguard.Clients, error) {
	if len(args) != 1 {
		return "", httpguard.Clients{}, usageErrorf("expected one [ADDR:]PORT[,CLIENT...] argument, got %d", len(args))
	}
	spec := strings.Split(args[0], ",")
	a := spec[0]
	if !strings.Contains(a, ":") {
		a = "127.0.0.1:" + a
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", httpguard.Clients{}, usageErrorf("invalid listen address %q: %v", spec[0], err)
	}
	if _, err := strconv.Atoi(host); err == nil {
		return "", httpguard.Clients{}, usageErrorf("%q: a PUBLISHED:LOCAL port pair publishes a port on the Diode network, which junction does not join; give [ADDR:]PORT (0.0.0.0:%s, say)", spec[0], port)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", httpguard.Clients{}, usageErrorf("invalid port in %q", spec[0])
	}
	for _, c := range spec[1:] {
		if strings.TrimSpace(c) == "" {
			return "", httpguard.Clients{}, usageErrorf("empty client in %q (clients are separated by single commas)", args[0])
		}
		if daemon.IsDiodeHost(strings.TrimSpace(c)) || !strings.ContainsAny(c, ".:/") {
			return "", httpguard.Clients{}, usageErrorf("client %q in %q: a Diode device address or name; junction's listener sees its clients by IP address, so list IP addresses or CIDR prefixes (10.0.0.7, 10.0.0.0/8)", c, args[0])
		}
	}
	clients, err := httpguard.ParseClients(spec[1:])
	if err != nil {
		return "", httpguard.Clients{}, usageErrorf("%v, in %q", err, args[0])
	}
	return a, clients, nil
}

// clientsNote is the banner's word on the allowlist.
func clientsNote(c httpguard.Clients) string {
	if c.Empty() {
		return ""
	}
	return "; clients " + c.String() + " only"
}

func rootDir(dir, flagName string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", flagName, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s: %s is not a directory", flagName, abs)
	}
	return abs, nil
}

// serveHTTP serves h on addr with the guard's bounds until ctx is done,
// then shuts down gracefully. banner (with %s for the address) goes to
// stderr once listening.
func serveHTTP(ctx context.Context, env *Env, addr string, h http.Handler, guard httpguard.ServerOptions, banner string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stderr, "junction: "+banner+"\n", ln.Addr())
	return httpguard.Serve(ctx, httpguard.NewServer(h, guard), ln, guard.ShutdownTimeout)
}
