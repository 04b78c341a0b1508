package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Timeouts of the original diode client.
const (
	TransferTimeout = 5 * time.Minute  // push and pull
	DeployTimeout   = 15 * time.Minute // deploy PUT
)

// SnippetMax is how much of a failed response's body becomes its message.
const SnippetMax = 4096

// DialContext dials a listener; see [Client].
type DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

// A Client talks to a file listener. The zero value dials directly.
type Client struct {
	// Dial opens connections; nil means a plain net.Dialer.
	Dial DialContext
	// Token, if non-empty, is sent as "Authorization: Bearer <Token>".
	Token string
}

// httpClient returns an http.Client bounded by timeout. Each call gets its
// own transport, closed by the caller through closeIdle.
func (c *Client) httpClient(timeout time.Duration) *http.Client {
	dial := c.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:           dial,
			TLSHandshakeTimeout:   10 * time.Second,
			DisableCompression:    true, // bodies are opaque bytes; never gunzip a .tar.gz
			ExpectContinueTimeout: expectContinue,
		},
	}
}

// A PUT of more than expectContinueOver bytes asks the listener first
// (Expect: 100-continue) and waits up to expectContinue for its go-ahead;
// a listener that never answers the question gets the body after that.
const (
	expectContinueOver = 64 << 10
	expectContinue     = 2 * time.Second
)

// Result is a listener's answer to a PUT or a failed GET.
type Result struct {
	StatusCode int
	// Message is the status line on success, else the first [SnippetMax]
	// bytes of the body, trimmed, or the status line when that is empty.
	Message string
}

// OK reports a 2xx status.
func (r Result) OK() bool { return r.StatusCode >= 200 && r.StatusCode < 300 }

// Put streams body (size bytes; -1 if unknown) to u. A transport failure
// is an error; any HTTP answer is a Result.
func (c *Client) Put(ctx context.Context, u *url.URL, body io.Reader, size int64, contentType string, timeout time.Duration) (Result, error) {
	hc := c.httpClient(timeout)
	defer hc.CloseIdleConnections()
	if body == nil {
		body = http.NoBody
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), io.NopCloser(body))
	if err != nil {
		return Result{}, err
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	req.Header.Set("Content-Type", contentType)
	if size > expectContinueOver {
		// Ask first: a listener that refuses the upload (a token, a size
		// limit) answers before the body is sent, instead of closing the
		// connection under it, which can cost the client the answer.
		req.Header.Set("Expect", "100-continue")
	}
	c.auth(req)
	resp, err := hc.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	return result(resp), nil
}

// Get starts a GET of u. The caller reads and closes the body; the
// returned cleanup releases the connection pool.
func (c *Client) Get(ctx context.Context, u *url.URL, timeout time.Duration) (*http.Response, func(), error) {
	hc := c.httpClient(timeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	c.auth(req)
	resp, err := hc.Do(req)
	if err != nil {
		hc.CloseIdleConnections()
		return nil, nil, err
	}
	return resp, func() { resp.Body.Close(); hc.CloseIdleConnections() }, nil
}

func (c *Client) auth(req *http.Request) {
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
}

// result reads a response into a Result (consuming at most SnippetMax
// bytes of body).
func result(resp *http.Response) Result {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return Result{StatusCode: resp.StatusCode, Message: resp.Status}
	}
	return Result{StatusCode: resp.StatusCode, Message: Snippet(resp)}
}

// Snippet returns the first [SnippetMax] bytes of resp's body, trimmed, or
// its status line when that is empty.
func Snippet(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, SnippetMax))
	if s := strings.TrimSpace(string(b)); s != "" {
		return s
	}
	return resp.Status
}

// ResolvePullDestination chooses the local file for a pull of remote into
// local, as the original does: a local path ending in "/" or "\" or naming
// an existing directory receives the remote path's base name; otherwise
// local is the file.
func ResolvePullDestination(local, remote string) (string, error) {
	if !strings.HasPrefix(remote, "/") {
		remote = "/" + remote
	}
	base := path.Base(remote)
	if base == "" || base == "." || base == "/" {
		return "", errors.New("remote_path has no file name segment")
	}
	if strings.HasSuffix(local, "/") || strings.HasSuffix(local, "\\") {
		return filepath.Join(local, base), nil
	}
	st, err := os.Stat(local)
	switch {
	case err == nil && st.IsDir():
		return filepath.Join(local, base), nil
	case err == nil, errors.Is(err, os.ErrNotExist):
		return local, nil
	default:
		return "", err
	}
}

// WriteFile streams r into the file dst atomically: parent directories are
// created 0750, the bytes go to a temporary file (0600) in dst's directory
// which is renamed over dst when complete. An existing dst keeps its mode.
// On any failure, including ctx being cancelled mid-copy, nothing is left.
func WriteFile(dst string, r io.Reader) (int64, error) {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	fail := func(n int64, err error) (int64, error) {
		f.Close()
		os.Remove(tmp)
		return n, err
	}
	// The file's ReadFrom, hidden here, would copy through a 32 KiB
	// buffer of its own: r is not a file or a socket.
	n, err := io.CopyBuffer(struct{ io.Writer }{f}, r, make([]byte, copyBuf))
	if err != nil {
		return fail(n, err)
	}
	if st, err := os.Stat(dst); err == nil && st.Mode().IsRegular() {
		if err := f.Chmod(st.Mode().Perm()); err != nil {
			return fail(n, err)
		}
	}
	if err := f.Close(); err != nil {
		return fail(n, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return n, fmt.Errorf("rename into place: %w", err)
	}
	return n, nil
}

// copyBuf is the buffer WriteFile copies through: each read takes what
// the connection has, up to 1 MiB, where io.Copy's 32 KiB buffer makes a
// 256 MiB pull 8,000 reads, each a wait for the network poller, and as
// many writes.
const copyBuf = 1 << 20

// CountingReader counts the bytes read through it and calls Progress (if
// set) after each read with the running total.
type CountingReader struct {
	R        io.Reader
	N        int64
	Progress func(total int64)
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	if n > 0 && c.Progress != nil {
		c.Progress(c.N)
	}
	return n, err
}
