package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/files"
)

const filesServeAbout = `
Serve the files under -fileroot over HTTP with the "diode files" contract:
PUT stores a body (204), GET returns a file (200), HEAD its headers; other
methods get 405. Paths cannot leave the root (.., absolute, encoded tricks
and symbolic links out are refused with 400). Uploads are written to a
temporary file and renamed into place, so a failed or cut-off upload leaves
nothing; a body over -max-body gets 413.

[ADDR:]PORT: a bare port listens on 127.0.0.1 only.

Examples:
  junction files serve -fileroot ./share 8080
  JUNCTION_FILES_TOKEN=s3cret junction files serve -fileroot /srv/drop 0.0.0.0:8080`

func runFilesServe(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "files serve", "[flags] [ADDR:]PORT", filesServeAbout)
	root := fs.String("fileroot", "", "serve and store files under `dir` (default: the current directory)")
	maxBody := fs.Int64("max-body", files.DefaultMaxBody, "largest PUT body in `bytes` (413 above it; negative: no limit)")
	token := fs.String("token", env.Getenv("JUNCTION_FILES_TOKEN"), "require this bearer `token` (env JUNCTION_FILES_TOKEN; empty: no auth)")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	addr, err := listenArg(fs.Args())
	if err != nil {
		return err
	}
	dir, err := rootDir(*root, "-fileroot")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	l, err := files.NewListener(dir, &files.ListenerOptions{MaxBody: *maxBody, Token: *token, Logger: logger})
	if err != nil {
		return err
	}
	defer l.Close()
	return serveHTTP(ctx, env, addr, l, fmt.Sprintf("files listening on http://%%s/ (root %s)", dir))
}

const deployHostAbout = `
Accept deploys: PUT /<uuid>.tar.gz stores the gzip tarball, checks and
unpacks it into DIR/<uuid>/ (no absolute or .. entries, no links out, no
device files, size and entry limits), optionally runs a command there
(given after --, off by default), and writes DIR/<uuid>.log describing what
happened. GET and HEAD serve DIR's files, so diode_deploy's log preview and
diode_file_pull work against it. A rejected tarball gets 422 and changes
nothing but the log.

Examples:
  junction deploy-host -root /srv/deploy 8003
  junction deploy-host -root /srv/deploy 127.0.0.1:8003 -- ./install.sh`

func runDeployHost(ctx context.Context, env *Env, args []string) error {
	fs := newFlagSet(env, "deploy-host", "[flags] [ADDR:]PORT [-- command args...]", deployHostAbout)
	root := fs.String("root", "", "deploy `dir` (required)")
	maxUpload := fs.Int64("max-upload", files.DefaultMaxBody, "largest tarball in `bytes` (413 above it)")
	maxBytes := fs.Int64("max-bytes", 1<<30, "largest total unpacked size in `bytes`")
	maxEntries := fs.Int("max-entries", 10000, "most tar entries accepted")
	cmdTimeout := fs.Duration("command-timeout", 10*time.Minute, "bound on the command after --")
	token := fs.String("token", env.Getenv("JUNCTION_FILES_TOKEN"), "require this bearer `token` (env JUNCTION_FILES_TOKEN; empty: no auth)")
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
		return usageErrorf("deploy-host: -root is required")
	}
	addr, err := listenArg(rest)
	if err != nil {
		return err
	}
	dir, err := rootDir(*root, "-root")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(env.Stderr, nil))
	d, err := files.NewDeployHost(dir, &files.DeployOptions{
		MaxUpload:      *maxUpload,
		Limits:         files.Limits{MaxBytes: *maxBytes, MaxEntries: *maxEntries},
		Command:        command,
		CommandTimeout: *cmdTimeout,
		Environ:        env.Environ(),
		Token:          *token,
		Logger:         logger,
	})
	if err != nil {
		return err
	}
	defer d.Close()
	return serveHTTP(ctx, env, addr, d, fmt.Sprintf("deploy host listening on http://%%s/ (root %s)", dir))
}

// listenArg parses the one [ADDR:]PORT argument; a bare port means
// 127.0.0.1.
func listenArg(args []string) (string, error) {
	if len(args) != 1 {
		return "", usageErrorf("expected one [ADDR:]PORT argument, got %d", len(args))
	}
	a := args[0]
	if !strings.Contains(a, ":") {
		a = "127.0.0.1:" + a
	}
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", usageErrorf("invalid listen address %q: %v", args[0], err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", usageErrorf("invalid port in %q", args[0])
	}
	return a, nil
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

// serveHTTP serves h on addr until ctx is done, then shuts down
// gracefully. banner (with %s for the address) goes to stderr once
// listening.
func serveHTTP(ctx context.Context, env *Env, addr string, h http.Handler, banner string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: files.ReadHeaderTimeout}
	fmt.Fprintf(env.Stderr, "junction: "+banner+"\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), files.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
