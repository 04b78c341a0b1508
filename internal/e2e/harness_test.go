// Package e2e drives the junction binary as users and hosts do: it builds
// cmd/junction once, runs "junction serve" over stdio and HTTP as a real
// process, and points real clients at it (go-sdk clients, the official MCP
// conformance suite, the MCP inspector CLI).
//
// # Harness
//
// Tests in this package use:
//
//   - [junctionBin]: the path of the binary TestMain built.
//   - [startServe]: "junction serve -http 127.0.0.1:0 ARGS" as a process;
//     returns its /mcp URL and stops it (SIGTERM, then SIGKILL) at cleanup.
//     [startServer] does the same and also gives access to stderr.
//   - [connectStdio] / [connectHTTP]: a go-sdk client session over stdio to
//     "junction serve ARGS", or over Streamable HTTP to a URL with an
//     optional bearer token; closed at cleanup.
//   - [nodeTools]: the project-local Node 22 and node_modules installed by
//     scripts/setup (JUNCTION_NODE, JUNCTION_NPM_DIR). Tests that need them
//     skip when they are unset, and fail instead when
//     JUNCTION_REQUIRE_TOOLS=1 (scripts/test sets it).
//
// Every test is bounded in time, listens on 127.0.0.1 only, and TestMain
// checks for leaked goroutines after the run.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// Environment variables that point tests at the Node tools scripts/setup
// installs.
const (
	envNode         = "JUNCTION_NODE"          // path of the node binary (Node 22)
	envNPMDir       = "JUNCTION_NPM_DIR"       // the node_modules directory
	envRequireTools = "JUNCTION_REQUIRE_TOOLS" // "1": missing tools fail instead of skip
)

// Bounds for the harness's own waits.
const (
	startTimeout   = 30 * time.Second // serve must print its address within this
	stopTimeout    = 10 * time.Second // after SIGTERM, before SIGKILL
	connectTimeout = 30 * time.Second // client connect (initialize) over stdio or HTTP
)

// binPath is the junction binary TestMain builds; set once before m.Run.
var binPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "junction-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "junction")
	if err := buildJunction(binPath); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building cmd/junction: %v\n", err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: goroutines leaked after the tests: %v\n", err)
			return 1
		}
	}
	return code
}

// buildJunction builds cmd/junction into out with the go command that runs
// the tests.
func buildJunction(out string) error {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, "github.com/junction-mcp/junction/cmd/junction")
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, buf.Bytes())
	}
	return nil
}

// junctionBin returns the path of the junction binary built for this run.
func junctionBin(t testing.TB) string {
	t.Helper()
	if binPath == "" {
		t.Fatal("e2e: junction binary not built (TestMain did not run)")
	}
	return binPath
}

// childEnv is the environment for junction processes: the test's own,
// without the junction variables that would change what is served, and
// with the XDG state, config and cache directories in dir so runs do not
// share state.
func childEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "JUNCTION_TOKEN", "JUNCTION_TOOLS", "JUNCTION_CONFIG",
			"XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
}

// serveProc is a running "junction serve -http" process.
type serveProc struct {
	// URL is the Streamable HTTP endpoint, http://ADDR/mcp.
	URL string
	// Addr is the host:port the process listens on.
	Addr string

	stderr *lineWatcher
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd.Wait returns
	err    error         // cmd.Wait's result; read after exited is closed
	killed bool          // set by a test that killed it: stop expects it gone
}

// Stderr returns what the process wrote to stderr so far.
func (p *serveProc) Stderr() string { return p.stderr.String() }

// startServe runs "junction serve -http 127.0.0.1:0 ARGS", waits until it
// listens, and returns its MCP endpoint (http://ADDR/mcp). The process is
// stopped at cleanup; its stderr is logged if the test failed.
func startServe(t testing.TB, args ...string) (mcpURL string) {
	t.Helper()
	return startServer(t, args...).URL
}

// startServer is [startServe] returning the process, for tests that look
// at its stderr.
func startServer(t testing.TB, args ...string) *serveProc {
	t.Helper()
	return startServerEnv(t, nil, args...)
}

// startServerEnv is [startServer] with env (KEY=VALUE) added to the
// process's environment.
func startServerEnv(t testing.TB, env []string, args ...string) *serveProc {
	t.Helper()
	const prefix = "junction: listening on "
	full := append([]string{"serve", "-http", "127.0.0.1:0"}, args...)
	cmd := exec.Command(junctionBin(t), full...)
	cmd.Env = append(childEnv(t.TempDir()), env...)
	w := newLineWatcher(prefix)
	cmd.Stdout = w // serve -http writes nothing there; keep it anyway
	cmd.Stderr = w
	// Grandchildren (upstream servers) may hold stderr open; do not let
	// Wait hang on them after junction itself exits.
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting junction %s: %v", strings.Join(full, " "), err)
	}
	p := &serveProc{stderr: w, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case line := <-w.found:
		u := strings.TrimSpace(strings.TrimPrefix(line, prefix))
		p.URL = u
		p.Addr = strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
		return p
	case <-p.exited:
		t.Fatalf("junction %s exited before listening: %v\nstderr:\n%s", strings.Join(full, " "), p.err, w.String())
	case <-timer.C:
		t.Fatalf("junction %s did not print %q within %v\nstderr:\n%s", strings.Join(full, " "), prefix, startTimeout, w.String())
	}
	return nil
}

// stop sends SIGTERM, waits stopTimeout, then kills. A process that needs
// the kill, or exits non-zero after SIGTERM, fails the test: shutting down
// on SIGTERM is part of what serve promises.
func (p *serveProc) stop(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
		if !p.killed {
			t.Errorf("junction serve exited on its own: %v", p.err)
		}
	default:
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("SIGTERM to junction serve: %v", err)
		}
		timer := time.NewTimer(stopTimeout)
		select {
		case <-p.exited:
			timer.Stop()
			if p.err != nil {
				t.Errorf("junction serve after SIGTERM: %v", p.err)
			}
		case <-timer.C:
			// SIGQUIT makes a Go program print every goroutine's stack to
			// stderr and exit: the log below shows where shutdown waited.
			t.Errorf("junction serve still running %v after SIGTERM; sending SIGQUIT for its stacks, then killing it", stopTimeout)
			p.cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-p.exited:
			case <-time.After(5 * time.Second):
				p.cmd.Process.Kill()
				<-p.exited
			}
		}
	}
	if t.Failed() {
		t.Logf("junction serve stderr:\n%s", p.stderr.String())
	}
}

// lineWatcher collects a process's output and reports the first complete
// line that starts with prefix on found.
type lineWatcher struct {
	prefix string
	found  chan string // buffered; receives at most one line

	mu      sync.Mutex // guards the fields below
	buf     bytes.Buffer
	scanned int // bytes of buf already searched for complete lines
	sent    bool
}

func newLineWatcher(prefix string) *lineWatcher {
	return &lineWatcher{prefix: prefix, found: make(chan string, 1)}
}

// newOutput returns a lineWatcher that only collects: a process's stderr
// that a test may read (String) while the process still writes it.
func newOutput() *lineWatcher {
	return &lineWatcher{sent: true}
}

func (w *lineWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	for !w.sent {
		rest := w.buf.Bytes()[w.scanned:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := string(rest[:i])
		w.scanned += i + 1
		if strings.HasPrefix(line, w.prefix) {
			w.sent = true
			w.found <- line
		}
	}
	return len(b), nil
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// nodeTools returns the project-local node binary and node_modules
// directory from JUNCTION_NODE and JUNCTION_NPM_DIR (set by scripts/test).
// When they are unset or wrong it skips the test, or fails it if
// JUNCTION_REQUIRE_TOOLS=1.
func nodeTools(t testing.TB) (node, modulesDir string) {
	t.Helper()
	node, modulesDir = os.Getenv(envNode), os.Getenv(envNPMDir)
	var problem string
	switch {
	case node == "" || modulesDir == "":
		problem = fmt.Sprintf("%s and %s are not set (run bash scripts/setup, or use bash scripts/test)", envNode, envNPMDir)
	default:
		if _, err := os.Stat(node); err != nil {
			problem = fmt.Sprintf("%s: %v", envNode, err)
		} else if fi, err := os.Stat(modulesDir); err != nil || !fi.IsDir() {
			problem = fmt.Sprintf("%s=%s is not a directory (run bash scripts/setup)", envNPMDir, modulesDir)
		}
	}
	if problem == "" {
		return node, modulesDir
	}
	toolsMissing(t, "the Node tools", problem)
	return "", ""
}

// toolsMissing skips the test because the tools it names are unavailable
// (problem says why and what to run), or fails it if
// JUNCTION_REQUIRE_TOOLS=1.
func toolsMissing(t testing.TB, tools, problem string) {
	t.Helper()
	if os.Getenv(envRequireTools) == "1" {
		t.Fatalf("%s required (%s=1) but unavailable: %s", tools, envRequireTools, problem)
	}
	t.Skipf("skipping: needs %s: %s", tools, problem)
}

// npmPackageDir returns the directory of an installed npm package, failing
// the test if it is missing.
func npmPackageDir(t testing.TB, modulesDir, pkg string) string {
	t.Helper()
	dir := filepath.Join(modulesDir, filepath.FromSlash(pkg))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		t.Fatalf("npm package %s is not installed in %s (run bash scripts/setup): %v", pkg, modulesDir, err)
	}
	return dir
}

// newClient returns a go-sdk client named for the e2e tests. opts may be
// nil.
func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "junction-e2e", Version: "0.0.0"}, opts)
}

// connectStdio starts "junction serve ARGS" (stdio) and connects a default
// client to it. The session is closed, and the process stopped, at cleanup.
func connectStdio(t testing.TB, args ...string) *mcp.ClientSession {
	t.Helper()
	return connectStdioClient(t, newClient(nil), args...)
}

// connectStdioClient is [connectStdio] with a caller-built client (for
// handlers: sampling, elicitation, logging, progress).
func connectStdioClient(t testing.TB, c *mcp.Client, args ...string) *mcp.ClientSession {
	t.Helper()
	return connectStdioWatched(t, c, newOutput(), args...)
}

// connectStdioWatched is [connectStdioClient] with the process's stderr
// going to stderr, for tests that wait for a line on it.
func connectStdioWatched(t testing.TB, c *mcp.Client, stderr *lineWatcher, args ...string) *mcp.ClientSession {
	t.Helper()
	return connectStdioOpts(t, c, stderr, nil, args...)
}

// connectStdioOpts is [connectStdioWatched] with the session options
// opts (nil: go-sdk's defaults).
func connectStdioOpts(t testing.TB, c *mcp.Client, stderr *lineWatcher, opts *mcp.ClientSessionOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(junctionBin(t), append([]string{"serve"}, args...)...)
	cmd.Env = childEnv(t.TempDir())
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, opts)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		t.Fatalf("connecting over stdio to junction serve %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Logf("closing stdio session: %v", err)
		}
		if t.Failed() {
			t.Logf("junction serve (stdio) stderr:\n%s", stderr.String())
		}
	})
	return cs
}

// connectHTTP connects a default client to a Streamable HTTP endpoint,
// sending token as "Authorization: Bearer" when it is not empty. The
// session is closed at cleanup.
func connectHTTP(t testing.TB, mcpURL, token string) *mcp.ClientSession {
	t.Helper()
	return connectHTTPClient(t, newClient(nil), mcpURL, token)
}

// connectHTTPClient is [connectHTTP] with a caller-built client.
func connectHTTPClient(t testing.TB, c *mcp.Client, mcpURL, token string) *mcp.ClientSession {
	t.Helper()
	return connectHTTPClientOpts(t, c, mcpURL, token, nil)
}

// connectHTTPClientOpts is connectHTTPClient with the session's options
// (a protocol version to ask for, say).
func connectHTTPClientOpts(t testing.TB, c *mcp.Client, mcpURL, token string, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	hc := httpClient(token)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: hc, MaxRetries: -1}, opts)
	if err != nil {
		hc.CloseIdleConnections()
		t.Fatalf("connecting over HTTP to %s: %v", mcpURL, err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Logf("closing HTTP session: %v", err)
		}
		hc.CloseIdleConnections()
	})
	return cs
}

// httpClient returns a client with its own connection pool (so cleanup can
// close it and leave no goroutines behind) that adds a bearer token to
// every request when token is not empty.
func httpClient(token string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	var rt http.RoundTripper = tr
	if token != "" {
		rt = bearer{token: token, next: tr}
	}
	return &http.Client{Transport: rt}
}

// bearer adds "Authorization: Bearer <token>" to requests.
type bearer struct {
	token string
	next  *http.Transport
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// pool.
func (b bearer) CloseIdleConnections() { b.next.CloseIdleConnections() }

// httpResult is what httpDo saw of a response.
type httpResult struct {
	status                   int
	challenge, body, session string
}

// httpDo makes one request with token, and with more headers (name,
// value, ...) if given.
func httpDo(t *testing.T, method, u, token string, body []byte, headers ...string) httpResult {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	hc := httpClient("")
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return httpResult{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate"), body: string(b), session: resp.Header.Get("Mcp-Session-Id")}
}
