package diagram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
)

// Default per-node timeouts, when the node sets none.
const (
	defaultHTTPTimeout    = 30 * time.Second
	defaultCommandTimeout = 30 * time.Second
)

// runHTTP makes one request. The output is {status, headers, body}; body
// is decoded when it is JSON. A status of 400 or more fails the node unless
// ignore_status is set.
func (e *engine) runHTTP(ctx context.Context, n *Node, data map[string]any) (any, error) {
	rawURL, err := render(n.ID+".url", n.URL, data)
	if err != nil {
		return nil, fmt.Errorf("url: %v", err)
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("url: %q is not an absolute http or https URL (http nodes fetch nothing else)", truncate(rawURL, 200))
	}
	method := strings.ToUpper(n.Method)
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	contentType := ""
	switch {
	case n.JSON != nil:
		v, err := renderValue(n.ID+".json", n.JSON, data)
		if err != nil {
			return nil, fmt.Errorf("json: %v", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("json: %v", err)
		}
		body, contentType = bytes.NewReader(b), "application/json"
	case n.Body != "":
		s, err := render(n.ID+".body", n.Body, data)
		if err != nil {
			return nil, fmt.Errorf("body: %v", err)
		}
		body = strings.NewReader(s)
	}
	timeout := nodeTimeout(n, defaultHTTPTimeout)
	parent := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("%s %s: no complete answer within %s, the node's timeout", method, u.Redacted(), timeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, tv := range n.Headers {
		s, err := render(n.ID+".headers."+k, tv, data)
		if err != nil {
			return nil, fmt.Errorf("headers.%s: %v", k, err)
		}
		req.Header.Set(k, s)
	}
	client := e.httpClient
	if client == nil {
		client = defaultClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		if parent.Err() == nil && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, requestError(method, u, err)
	}
	defer resp.Body.Close()
	limit := int64(e.maxOutputBytes)
	if limit <= 0 {
		limit = DefaultMaxOutputBytes
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if parent.Err() == nil && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("%s %s: reading body: %v", method, u.Redacted(), err)
	}
	if int64(len(b)) > limit {
		return nil, &LimitError{Setting: "max_node_output_bytes", msg: fmt.Sprintf("%s %s: response body is over the limit of %d bytes per node output", method, u.Redacted(), limit)}
	}
	headers := make(map[string]any, len(resp.Header))
	for k := range resp.Header {
		headers[strings.ToLower(k)] = resp.Header.Get(k)
	}
	var bodyVal any = string(b)
	var decoded any
	if len(bytes.TrimSpace(b)) > 0 && json.Unmarshal(b, &decoded) == nil {
		bodyVal = decoded
	}
	out := map[string]any{"status": resp.StatusCode, "headers": headers, "body": bodyVal}
	if resp.StatusCode >= 400 && !n.IgnoreStatus {
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", method, u.Redacted(), resp.StatusCode, truncate(string(b), 200))
	}
	return out, nil
}

// requestError describes a failed request. A connection the address
// rules refused says so first, with the URL it was for (a redirect's,
// when a redirect led there).
func requestError(method string, u *url.URL, err error) error {
	var refused *RefusedError
	if !errors.As(err, &refused) {
		return fmt.Errorf("%s %s: %v", method, u.Redacted(), err)
	}
	target := u.Redacted()
	var ue *url.Error
	if errors.As(err, &ue) {
		if tu, perr := url.Parse(ue.URL); perr == nil {
			target = tu.Redacted()
		}
	}
	if target != u.Redacted() {
		return fmt.Errorf("%s %s: redirected to %s, refused: %w", method, u.Redacted(), target, refused)
	}
	return fmt.Errorf("%s %s: refused: %w", method, u.Redacted(), refused)
}

// runCommand runs a program (no shell) with a timeout. The output is
// {exit_code, stdout, stderr}; a non-zero exit fails the node unless
// ignore_exit is set.
func (e *engine) runCommand(ctx context.Context, n *Node, data map[string]any) (any, error) {
	argv := make([]string, len(n.Command))
	for i, a := range n.Command {
		s, err := render(fmt.Sprintf("%s.command[%d]", n.ID, i), a, data)
		if err != nil {
			return nil, fmt.Errorf("command[%d]: %v", i, err)
		}
		argv[i] = s
	}
	stdin := ""
	if n.Stdin != "" {
		s, err := render(n.ID+".stdin", n.Stdin, data)
		if err != nil {
			return nil, fmt.Errorf("stdin: %v", err)
		}
		stdin = s
	}
	timeout := nodeTimeout(n, defaultCommandTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	limit := e.maxOutputBytes
	if limit <= 0 {
		limit = DefaultMaxOutputBytes
	}
	stdout := &capped{max: limit}
	stderr := &capped{max: limit}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 2 * time.Second
	// Its own process group, killed when the node ends (its timeout, the
	// run's end, or its exit), and reaped if the hub dies.
	err := reaper.Run(cmd)
	code := 0
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	out := map[string]any{"exit_code": code, "stdout": stdout.String(), "stderr": stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return nil, fmt.Errorf("%s: timed out after %s", argv[0], timeout)
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &exitErr):
		if !n.IgnoreExit {
			return nil, fmt.Errorf("%s exited with status %d: %s", argv[0], code, truncate(stderr.String(), 200))
		}
	case err != nil:
		return nil, fmt.Errorf("%s: %v", argv[0], err)
	}
	if stdout.over || stderr.over {
		return nil, &LimitError{Setting: "max_node_output_bytes", msg: fmt.Sprintf("%s: output is over the limit of %d bytes per node output", argv[0], limit)}
	}
	return out, nil
}

// capped is a buffer that keeps at most max bytes and remembers overflow.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if len(p) > room {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) String() string { return c.buf.String() }

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
