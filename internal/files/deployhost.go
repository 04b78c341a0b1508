package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/junction-mcp/junction/internal/httpguard"
	"github.com/junction-mcp/junction/internal/reaper"
)

// DeployOptions configure a [DeployHost]. A nil *DeployOptions is the
// same as a zero one.
type DeployOptions struct {
	// MaxUpload bounds the compressed upload; zero means [DefaultMaxBody].
	MaxUpload int64
	// Limits bound what a tarball may unpack to.
	Limits Limits
	// Command, if non-empty, is run (argv, no shell) in DIR/<uuid>/ after
	// a successful unpack, with DEPLOY_UUID and DEPLOY_DIR in its
	// environment. Off by default.
	Command []string
	// CommandTimeout bounds Command; zero means 10 minutes.
	CommandTimeout time.Duration
	// Environ is the environment Command starts from (nil: none).
	Environ []string
	// Token, if non-empty, is required as a bearer token on every request.
	Token string
	// Logger receives one record per deploy. Nil discards them.
	Logger *slog.Logger
	// Now returns the time for log files; nil means time.Now.
	Now func() time.Time
}

// A DeployHost is an http.Handler that accepts PUT /<uuid>.tar.gz, unpacks
// the tarball into DIR/<uuid>/ (replacing an earlier deploy only once the
// new one unpacked cleanly), optionally runs a command there, and writes
// DIR/<uuid>.log describing what happened. GET and HEAD serve DIR's files
// (the logs) with the listener contract. Uploads run side by side; the
// unpacking, installing and commands of deploys are serialised.
type DeployHost struct {
	root  *os.Root
	dir   string
	opts  DeployOptions
	files *Listener
	log   *slog.Logger

	mu sync.Mutex // serialises unpack, install, command and log of deploys
}

var deployPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.tar\.gz$`)
})

// NewDeployHost returns a deploy host for dir, which must exist.
func NewDeployHost(dir string, opts *DeployOptions) (*DeployHost, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open deploy root: %w", err)
	}
	d := &DeployHost{root: root, dir: root.Name()}
	if opts != nil {
		d.opts = *opts
	}
	if d.opts.MaxUpload == 0 {
		d.opts.MaxUpload = DefaultMaxBody
	}
	if d.opts.CommandTimeout <= 0 {
		d.opts.CommandTimeout = 10 * time.Minute
	}
	if d.opts.Now == nil {
		d.opts.Now = time.Now
	}
	d.log = d.opts.Logger
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	d.files, err = NewListener(dir, &ListenerOptions{ReadOnly: true, Token: d.opts.Token, Logger: d.opts.Logger, Paths: d.opts.Limits.Paths})
	if err != nil {
		root.Close()
		return nil, err
	}
	return d, nil
}

// Close releases the directory.
func (d *DeployHost) Close() error {
	return errors.Join(d.files.Close(), d.root.Close())
}

// ServeHTTP implements http.Handler.
func (d *DeployHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		d.files.ServeHTTP(w, r) // auth, GET/HEAD, 405
		return
	}
	if !authorized(r, d.opts.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="junction deploy"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	m := deployPath().FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "deploy host accepts only PUT /<uuid>.tar.gz", http.StatusForbidden)
		return
	}
	uuid := strings.ToLower(m[1])
	status, msg := d.deploy(r.Context(), w, r, uuid)
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	http.Error(w, msg, status)
}

// deploy runs one deploy and returns the HTTP answer. Uploads run side by
// side (each to its own temporary file), so that one slow client does not
// hold up the others; what follows is serialised.
func (d *DeployHost) deploy(ctx context.Context, w http.ResponseWriter, r *http.Request, uuid string) (int, string) {
	start := d.opts.Now()
	upload, n, status, msg := d.receive(w, r, uuid)
	if upload == "" {
		return status, msg
	}
	defer d.root.Remove(upload)
	d.mu.Lock()
	defer d.mu.Unlock()

	var rep strings.Builder
	fmt.Fprintf(&rep, "deploy %s\nreceived: %s\n", uuid, start.UTC().Format(time.RFC3339))
	fmt.Fprintf(&rep, "package: %d bytes\n", n)

	staging := ".staging-" + uuid + "-" + randHex()
	stats, err := d.unpack(upload, staging)
	if err != nil {
		d.root.RemoveAll(staging)
		fmt.Fprintf(&rep, "unpack: rejected: %v\nresult: failed (nothing deployed; an earlier deploy of %s, if any, is unchanged)\n", err, uuid)
		d.writeLog(uuid, rep.String())
		d.log.Warn("deploy rejected", "uuid", uuid, "error", err)
		return http.StatusUnprocessableEntity, "deploy rejected: " + err.Error()
	}
	if err := d.swap(uuid, staging, upload); err != nil {
		d.root.RemoveAll(staging)
		fmt.Fprintf(&rep, "install: %v\nresult: failed\n", err)
		d.writeLog(uuid, rep.String())
		return http.StatusInternalServerError, "deploy failed: " + err.Error()
	}
	fmt.Fprintf(&rep, "unpack: %d files, %d directories, %d symbolic links, %d bytes into %s/\n",
		stats.Files, stats.Dirs, stats.Symlinks, stats.Bytes, uuid)
	result := "ok"
	if len(d.opts.Command) == 0 {
		rep.WriteString("command: none configured\n")
	} else {
		out, err := d.run(ctx, uuid)
		fmt.Fprintf(&rep, "command: %s\n", strings.Join(d.opts.Command, " "))
		if err != nil {
			fmt.Fprintf(&rep, "command result: %v\n", err)
			result = "command failed"
		} else {
			rep.WriteString("command result: exit status 0\n")
		}
		if len(out) > 0 {
			fmt.Fprintf(&rep, "command output:\n%s\n", bytes.TrimRight(out, "\n"))
		}
	}
	fmt.Fprintf(&rep, "result: %s\n", result)
	d.writeLog(uuid, rep.String())
	d.log.Info("deployed", "uuid", uuid, "files", stats.Files, "bytes", stats.Bytes, "result", result)
	return http.StatusNoContent, ""
}

// receive stores r's body as a temporary upload and returns its name and
// size, or "" and the HTTP answer. A failed upload leaves nothing, not
// even a log: no deploy happened.
func (d *DeployHost) receive(w http.ResponseWriter, r *http.Request, uuid string) (upload string, n int64, status int, msg string) {
	if d.opts.MaxUpload > 0 && r.ContentLength > d.opts.MaxUpload {
		return "", 0, http.StatusRequestEntityTooLarge, tooLarge(d.opts.MaxUpload, "deploy-host -max-upload")
	}
	body := io.Reader(r.Body)
	if d.opts.MaxUpload > 0 {
		body = http.MaxBytesReader(httpguard.Innermost(w), r.Body, d.opts.MaxUpload)
	}
	upload = ".upload-" + uuid + "-" + randHex()
	n, err := writeAtomic(d.root, upload, body)
	if err == nil {
		return upload, n, 0, ""
	}
	d.log.Warn("deploy upload failed", "uuid", uuid, "error", err)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return "", 0, http.StatusRequestEntityTooLarge, tooLarge(d.opts.MaxUpload, "deploy-host -max-upload")
	case httpguard.IsStalled(err):
		return "", 0, http.StatusRequestTimeout, err.Error()
	}
	return "", 0, http.StatusInternalServerError, "write failed"
}

func (d *DeployHost) unpack(upload, staging string) (UnpackStats, error) {
	if err := d.root.Mkdir(staging, 0o750); err != nil {
		return UnpackStats{}, err
	}
	sr, err := d.root.OpenRoot(staging)
	if err != nil {
		return UnpackStats{}, err
	}
	defer sr.Close()
	f, err := d.root.Open(upload)
	if err != nil {
		return UnpackStats{}, err
	}
	defer f.Close()
	return Unpack(f, sr, d.opts.Limits)
}

// swap installs staging as <uuid>/ and the upload as <uuid>.tar.gz.
func (d *DeployHost) swap(uuid, staging, upload string) error {
	old := ""
	if _, err := d.root.Lstat(uuid); err == nil {
		old = ".old-" + uuid + "-" + randHex()
		if err := d.root.Rename(uuid, old); err != nil {
			return err
		}
	}
	if err := d.root.Rename(staging, uuid); err != nil {
		if old != "" {
			d.root.Rename(old, uuid)
		}
		return err
	}
	if old != "" {
		d.root.RemoveAll(old)
	}
	return d.root.Rename(upload, uuid+".tar.gz")
}

// commandOutputMax bounds the command output kept for the log.
const commandOutputMax = 64 << 10

func (d *DeployHost) run(ctx context.Context, uuid string) ([]byte, error) {
	// The command belongs to this deploy: it ends with the request's
	// context or its timeout, whichever comes first.
	ctx, cancel := context.WithTimeout(ctx, d.opts.CommandTimeout)
	defer cancel()
	dir := d.dir + string(os.PathSeparator) + uuid
	cmd := exec.CommandContext(ctx, d.opts.Command[0], d.opts.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), d.opts.Environ...), "DEPLOY_UUID="+uuid, "DEPLOY_DIR="+dir)
	out := &headBuffer{max: commandOutputMax}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	// Its own process group, killed when the command ends (its timeout,
	// the request's end, or its exit), and reaped if the host dies.
	err := reaper.Run(cmd)
	return out.buf.Bytes(), err
}

func (d *DeployHost) writeLog(uuid, text string) {
	if _, err := writeAtomic(d.root, uuid+".log", strings.NewReader(text)); err != nil {
		d.log.Error("write deploy log", "uuid", uuid, "error", err)
	}
}

// headBuffer keeps the first max bytes (the start of the output explains most failures) written to it.
type headBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
