package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/junction-mcp/junction/internal/httpguard"
)

// DefaultMaxBody is the largest PUT body a [Listener] accepts unless
// told otherwise: 256 MiB, the original diode listener's limit.
const DefaultMaxBody = 256 << 20

// ListenerOptions configure a [Listener]. A nil *ListenerOptions is the
// same as a zero one.
type ListenerOptions struct {
	// MaxBody bounds a PUT body; a larger one is answered 413 and nothing
	// is stored. Zero means [DefaultMaxBody]; negative means no limit.
	MaxBody int64
	// Token, if non-empty, must be sent as "Authorization: Bearer <Token>"
	// with every request; others get 401. Compared in constant time.
	Token string
	// Paths bound the paths served and stored: longer ones get 414, deeper
	// ones 400, and nothing is created.
	Paths PathLimits
	// ReadOnly refuses PUT with 405.
	ReadOnly bool
	// Logger receives one record per request. Nil discards them.
	Logger *slog.Logger
}

// A Listener is an http.Handler serving the files under one directory with
// the diode files contract (see the package doc). Close it to release the
// directory.
type Listener struct {
	root   *os.Root
	opts   ListenerOptions
	logger *slog.Logger
}

// NewListener returns a listener for dir, which must exist.
func NewListener(dir string, opts *ListenerOptions) (*Listener, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open fileroot: %w", err)
	}
	l := &Listener{root: root}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MaxBody == 0 {
		l.opts.MaxBody = DefaultMaxBody
	}
	l.logger = l.opts.Logger
	if l.logger == nil {
		l.logger = slog.New(slog.DiscardHandler)
	}
	return l, nil
}

// Close releases the root directory. Requests served after Close fail.
func (l *Listener) Close() error { return l.root.Close() }

// ServeHTTP implements http.Handler.
func (l *Listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !authorized(r, l.opts.Token) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="junction files"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		rel, ok := l.mapOrFail(w, r)
		if ok {
			serveFile(w, r, l.root, rel)
		}
	case http.MethodPut:
		if l.opts.ReadOnly {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rel, ok := l.mapOrFail(w, r)
		if !ok {
			return
		}
		n, err := storeBody(w, r, l.root, rel, l.opts.MaxBody)
		if err != nil {
			l.logger.Warn("put failed", "path", rel, "error", err)
			return
		}
		l.logger.Info("put", "path", rel, "bytes", n)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, HEAD, PUT")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// authorized reports whether r carries token as a bearer token (always,
// without a token).
func authorized(r *http.Request, token string) bool {
	return token == "" || httpguard.NewTokens(token).Match(httpguard.Bearer(r))
}

// mapOrFail maps r's path within the limits, or answers why not.
func (l *Listener) mapOrFail(w http.ResponseWriter, r *http.Request) (string, bool) {
	rel, err := MapPath(r.URL.Path)
	if err == nil {
		err = l.opts.Paths.Check(rel)
	}
	var ple *PathLimitError
	switch {
	case errors.As(err, &ple):
		l.logger.Warn("path refused", "method", r.Method, "error", err)
		http.Error(w, err.Error(), ple.StatusCode())
		return "", false
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return "", false
	}
	return rel, true
}

// isEscape reports an os.Root refusal: a path or symbolic link that leads
// out of the root.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func serveFile(w http.ResponseWriter, r *http.Request, root *os.Root, rel string) {
	f, err := root.Open(rel)
	if isEscape(err) {
		http.Error(w, ErrEscapesRoot.Error(), http.StatusBadRequest)
		return
	}
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "stat failed", http.StatusInternalServerError)
		return
	}
	if st.IsDir() || !st.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	// ServeContent adds Range and conditional requests; it never reads
	// more than it sends.
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// storeBody writes r's body to rel under root atomically and answers the
// error itself when it fails.
func storeBody(w http.ResponseWriter, r *http.Request, root *os.Root, rel string, max int64) (int64, error) {
	if max > 0 && r.ContentLength > max {
		http.Error(w, tooLarge(max, "files serve -max-body"), http.StatusRequestEntityTooLarge)
		return 0, fmt.Errorf("content-length %d over limit %d", r.ContentLength, max)
	}
	body := r.Body
	if max > 0 {
		body = http.MaxBytesReader(httpguard.Innermost(w), r.Body, max)
	}
	n, err := writeAtomic(root, rel, body)
	if err != nil {
		var mbe *http.MaxBytesError
		var we *writeError
		switch {
		case errors.As(err, &mbe):
			http.Error(w, tooLarge(max, "files serve -max-body"), http.StatusRequestEntityTooLarge)
		case httpguard.IsStalled(err):
			http.Error(w, err.Error(), http.StatusRequestTimeout)
		case isEscape(err):
			http.Error(w, ErrEscapesRoot.Error(), http.StatusBadRequest)
		case errors.Is(err, syscall.ENAMETOOLONG):
			// Within the listener's limits but over the file system's.
			http.Error(w, "path too long for the file system; use a shorter path", http.StatusRequestURITooLong)
		case errors.As(err, &we):
			http.Error(w, we.msg, http.StatusInternalServerError)
		default:
			http.Error(w, "write failed", http.StatusInternalServerError)
		}
	}
	return n, err
}

// writeError carries the short text the original listener answers with.
type writeError struct {
	msg string
	err error
}

func (e *writeError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// writeAtomic copies src to rel under root through a temporary file in the
// same directory, renamed into place only when the copy and close
// succeeded. On any failure the temporary file is removed.
func writeAtomic(root *os.Root, rel string, src io.Reader) (int64, error) {
	dir := path.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			if isEscape(err) {
				return 0, err
			}
			return 0, &writeError{"could not create parent directories", err}
		}
	}
	// The temporary name keeps (the start of) the final one, for whoever
	// looks at the directory, and stays under MaxNameBytes.
	tmp := path.Join(dir, "."+truncateName(path.Base(rel), MaxNameBytes-32)+".tmp-"+randHex())
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if isEscape(err) {
			return 0, err
		}
		return 0, &writeError{"could not open file for write", err}
	}
	n, err := io.Copy(f, src)
	if err != nil {
		f.Close()
		root.Remove(tmp)
		return n, fmt.Errorf("write failed: %w", err)
	}
	if err := f.Close(); err != nil {
		root.Remove(tmp)
		return n, &writeError{"close failed", err}
	}
	if err := root.Rename(tmp, rel); err != nil {
		root.Remove(tmp)
		if isEscape(err) {
			return n, err
		}
		return n, &writeError{"rename failed", err}
	}
	return n, nil
}

func randHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// tooLarge is the answer to a body over max bytes: the limit, and the flag
// of the listener that sets it.
func tooLarge(max int64, flag string) string {
	return fmt.Sprintf("request body too large: this listener takes at most %d bytes (%s); send a smaller file or raise %s", max, humanBytes(max), flag)
}

// humanBytes writes n with a binary unit ("256 MiB", "1.5 KiB").
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, i := float64(n), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.4g %s", v, units[i])
}
