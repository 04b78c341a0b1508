// Package httpguard bounds what one client can hold of an HTTP server:
// its request line and headers, its body, the response it will not read,
// and its idle connection. Bodies and responses get a progress deadline
// rather than a total one (see [ServerOptions]), so a transfer of any size
// or a long stream of events keeps working while a client that trickles
// or stops reading is cut off. junction's MCP front (junction serve
// -http), the file listener and the deploy host are served this way.
package httpguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// Defaults of [ServerOptions]; every zero field takes its default.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultProgressTimeout   = 30 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultShutdownTimeout   = 5 * time.Second
)

// ProgressBytes is how much a request body must deliver, and how much of
// a response a client must accept, within each progress timeout. With the
// default timeout that is a floor of about 2 KiB/s.
const ProgressBytes = 64 << 10

// ServerOptions bound what one client can hold of an HTTP server. The
// zero value is the defaults.
//
// Bodies and responses get a progress deadline, not a total one: each
// [ProgressBytes] that move buy another ProgressTimeout (for a response,
// at least seven eighths of one: its deadline is moved at most once per
// eighth of a window, not at every write), so a transfer of any size at
// any reasonable speed completes, while a client that trickles a body
// (or stops reading a response) is cut off once a window passes with
// less than ProgressBytes moved. The deadlines are set on the
// connection through [http.ResponseController], so they end reads and
// writes that are already blocked.
//
// A body's first window, and a response's, are the ones net/http sets
// as it reads the request ([NewServer] sets http.Server's ReadTimeout
// and WriteTimeout to ProgressTimeout). A body's begins when its request
// began to arrive, so a request whose headers were slow (up to
// ReadHeaderTimeout) has that much less of its body's first window.
// net/http lifts the read deadline itself when the body has ended (at
// once for a request without one), as it begins the read it keeps
// pending on the connection while the handler runs: the expiry of a
// deadline on that read would cancel the request's context, and end a
// long handler (a deploy command, a tool call) that has read its body.
type ServerOptions struct {
	// ReadHeaderTimeout bounds the request line and headers.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout time.Duration
	// ProgressTimeout is the window in which a request body must deliver,
	// and a response's client accept, [ProgressBytes] (or finish).
	ProgressTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers; larger ones get
	// 431. (net/http allows 4 KiB of slack above it.)
	MaxHeaderBytes int
	// ShutdownTimeout is how long [Serve] waits for requests in flight
	// when its context ends, before it closes their connections.
	ShutdownTimeout time.Duration
}

// WithDefaults returns o with every zero or negative field set to its
// default.
func (o ServerOptions) WithDefaults() ServerOptions {
	orDefault(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	orDefault(&o.IdleTimeout, DefaultIdleTimeout)
	orDefault(&o.ProgressTimeout, DefaultProgressTimeout)
	orDefault(&o.MaxHeaderBytes, DefaultMaxHeaderBytes)
	orDefault(&o.ShutdownTimeout, DefaultShutdownTimeout)
	return o
}

// orDefault sets *v to def unless it is positive.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// NewServer returns an http.Server for h with o's bounds; h is wrapped by
// [ProgressHandler].
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	o = o.WithDefaults()
	return &http.Server{
		Handler:           progressHandler(h, o.ProgressTimeout, true),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		// The read deadline of each request's body and the write deadline
		// of its response (also for the answers net/http writes itself,
		// such as 431), set by net/http as it reads the request: the
		// first window of each, which ProgressHandler extends as they
		// move instead of setting it again.
		ReadTimeout:    o.ProgressTimeout,
		WriteTimeout:   o.ProgressTimeout,
		IdleTimeout:    o.IdleTimeout,
		MaxHeaderBytes: o.MaxHeaderBytes,
	}
}

// Serve serves srv on ln until ctx is done, then shuts down: requests in
// flight get up to shutdown to finish before their connections are
// closed. It returns nil after a shutdown, or the error that stopped
// serving.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, shutdown time.Duration) error {
	if shutdown <= 0 {
		shutdown = DefaultShutdownTimeout
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// The shutdown must run to its own bound although ctx is done.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// StalledError is what a request body wrapped by [ProgressHandler]
// returns when less than [ProgressBytes] arrived within the progress
// timeout; a handler answers it with 408.
type StalledError struct {
	Timeout time.Duration
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("request body stalled: fewer than %d bytes arrived in %v (the server's progress timeout); send faster or retry", ProgressBytes, e.Timeout)
}

// Unwrap makes a StalledError match os.ErrDeadlineExceeded.
func (e *StalledError) Unwrap() error { return os.ErrDeadlineExceeded }

// IsStalled reports whether err comes from a stalled request body.
func IsStalled(err error) bool {
	var se *StalledError
	return errors.As(err, &se)
}

// ProgressHandler wraps next so that a request body must deliver, and the
// client accept, [ProgressBytes] of the response per progress window. A
// stalled body's Read returns a [*StalledError]; a stalled response's
// Write fails. Each response gets its Date header here, formatted once a
// second rather than by net/http for each response.
func ProgressHandler(next http.Handler, progress time.Duration) http.Handler {
	return progressHandler(next, progress, false)
}

// progressHandler is ProgressHandler. serverSet says that the server set
// both deadlines a window from when it read the request (NewServer), so
// that their first windows are left as they are: moving a deadline
// changes a timer of the runtime's, under its locks.
func progressHandler(next http.Handler, progress time.Duration, serverSet bool) http.Handler {
	if progress <= 0 {
		progress = DefaultProgressTimeout
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// One allocation per request for the controller and both wrappers.
		g := &guarded{rc: *http.NewResponseController(w)}
		rc := &g.rc
		now := time.Now()
		w.Header()["Date"] = dateOf(now)
		if r.Body != nil && r.Body != http.NoBody {
			// A request without a body is left alone: net/http keeps a read
			// pending on its connection while the handler runs, and a
			// deadline on that read would cancel the request's context.
			if !serverSet {
				rc.SetReadDeadline(now.Add(progress))
			}
			g.body = progressBody{ReadCloser: r.Body, rc: rc, timeout: progress}
			r.Body = &g.body
		}
		g.w = progressWriter{ResponseWriter: w, rc: rc, timeout: progress}
		if serverSet {
			g.w.set = now // net/http set it as it read the request, just before
		}
		next.ServeHTTP(&g.w, r)
		// net/http flushes the rest of the response after the handler
		// returns, which may be long after the last write (a deploy runs
		// its command first): give that flush a window of its own.
		g.w.extend()
	})
}

// httpDate is a Date header's value, for the second sec (Unix time).
type httpDate struct {
	sec int64
	v   []string
}

var lastDate atomic.Pointer[httpDate]

// dateOf returns the Date header of a response begun at now. net/http
// formats one for each response that has none; ProgressHandler gives
// each the one made for its second, shared, which a handler replaces
// rather than changes (http.Header's Set and Add make a new slice).
func dateOf(now time.Time) []string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.v
	}
	d := &httpDate{sec: sec, v: []string{now.UTC().Format(http.TimeFormat)}}
	lastDate.Store(d)
	return d.v
}

// guarded is what ProgressHandler keeps of one request.
type guarded struct {
	rc   http.ResponseController
	body progressBody
	w    progressWriter
}

// progressBody extends the connection's read deadline as the body
// arrives. It is read by the handler's goroutine only. When the body
// ends, net/http lifts the deadline itself (see ServerOptions on the
// pending read): it begins its pending read where it returns io.EOF,
// with the last bytes of a body of known length, or with the end of a
// chunked one.
type progressBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	moved   int // bytes since the deadline was last extended
}

func (b *progressBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.moved += n
	switch {
	case err == nil:
		if b.moved >= ProgressBytes {
			b.moved = 0
			b.rc.SetReadDeadline(time.Now().Add(b.timeout))
		}
	case err != io.EOF && errors.Is(err, os.ErrDeadlineExceeded):
		err = &StalledError{Timeout: b.timeout}
	}
	return n, err
}

// progressWriter gives each ProgressBytes of the response a fresh write
// deadline. It keeps sendfile for files (ReadFrom) and exposes the
// original writer to http.ResponseController (Unwrap).
type progressWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	set     time.Time // when extend last set the deadline (zero: not yet)
}

// extend sets the write deadline a window from now, unless it set it less
// than an eighth of a window ago: what is written next then still has
// seven eighths of a window, and a response of a few writes and flushes
// (an MCP answer) moves the connection's deadline, a timer of the
// runtime's, once instead of at each of them.
func (w *progressWriter) extend() {
	if !w.set.IsZero() && time.Since(w.set) < w.timeout/8 {
		return
	}
	w.set = time.Now()
	w.rc.SetWriteDeadline(w.set.Add(w.timeout))
}

func (w *progressWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), ProgressBytes)]
		w.extend()
		n, err := w.ResponseWriter.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// ReadFrom copies src in ProgressBytes steps, each with a fresh deadline,
// through the underlying writer's ReadFrom. A *io.LimitedReader (what
// io.CopyN and http.ServeContent pass) is unwrapped first, so that a file
// under it still reaches sendfile.
func (w *progressWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(writerOnly{w}, src)
	}
	inner, limited := src, (*io.LimitedReader)(nil)
	if lr, ok := src.(*io.LimitedReader); ok {
		inner, limited = lr.R, lr
	}
	var total int64
	for {
		step := int64(ProgressBytes)
		if limited != nil {
			if limited.N <= 0 {
				return total, nil
			}
			step = min(step, limited.N)
		}
		w.extend()
		n, err := rf.ReadFrom(&io.LimitedReader{R: inner, N: step})
		total += n
		if limited != nil {
			limited.N -= n
		}
		if err != nil || n < step {
			return total, err // n < step: src is at EOF
		}
	}
}

// Flush sends what is buffered, with a fresh deadline: a stream of small
// events (SSE) flushes each one, and may idle between them for as long as
// it likes.
func (w *progressWriter) Flush() {
	w.extend()
	w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Innermost returns the writer under any wrappers (Unwrap), for
// http.MaxBytesReader: only net/http's own writer can be told that a body
// went over its limit, which makes the server close the connection after
// the 413 instead of reading on.
func Innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// writerOnly hides ReadFrom, so that io.Copy does not call it again.
type writerOnly struct{ io.Writer }
