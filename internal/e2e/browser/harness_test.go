//go:build linux

// Package browser holds the status page's browser test
// (TestStatusPageBrowser, statuspage_test.go), in a module of its own so
// that chromedp stays out of the main go.mod. Like internal/e2e, TestMain
// builds cmd/junction once (from the repository root, with the go command
// that runs the tests) and the test drives the binary as a host does; the
// few harness helpers it needs are copies of internal/e2e's, which a
// nested module cannot import. Goroutine leaks are checked after the run.
package browser

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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// mainModule is the module whose cmd/junction the test builds.
const mainModule = "github.com/junction-mcp/junction"

const (
	envRequireTools = "JUNCTION_REQUIRE_TOOLS" // "1": missing tools fail instead of skip

	stopTimeout    = 10 * time.Second // a stdio hub's TerminateDuration
	connectTimeout = 30 * time.Second // client connect (initialize) over stdio
)

// binPath is the junction binary TestMain builds; set once before m.Run.
var binPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "junction-e2e-browser-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e/browser: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "junction")
	if err := buildJunction(binPath); err != nil {
		fmt.Fprintf(os.Stderr, "e2e/browser: building cmd/junction: %v\n", err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e/browser: goroutines leaked after the tests: %v\n", err)
			return 1
		}
	}
	return code
}

// repoRoot returns the directory of the main module: the nearest one
// above the working directory (this package's) whose go.mod declares
// mainModule.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module "+mainModule+"\n")) {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no go.mod of %s above %s", mainModule, dir)
		}
	}
}

// buildJunction builds the main module's cmd/junction into out with the
// go command that runs the tests.
func buildJunction(out string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, "./cmd/junction")
	cmd.Dir = root
	var buf bytes.Buffer
	cmd.Stdout = &buf
	cmd.Stderr = &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, buf.Bytes())
	}
	return nil
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

// connectStdioWatched starts "junction serve ARGS" (stdio) with its
// stderr going to stderr and connects a go-sdk client to it. The session
// is closed, and the process stopped, at cleanup.
func connectStdioWatched(t testing.TB, stderr *lineWatcher, args ...string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "junction-e2e", Version: "0.0.0"}, nil)
	cmd := exec.Command(binPath, append([]string{"serve"}, args...)...)
	cmd.Env = childEnv(t.TempDir())
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil)
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

// writeConfig writes a config file atomically (temp file + rename, as
// editors and config managers do) and returns its path.
func writeConfig(t *testing.T, path, content string) string {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFor polls cond every 100ms until it holds or the bound passes.
func waitFor(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hasTool reports whether the session lists the tool name.
func hasTool(t *testing.T, cs *mcp.ClientSession, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range res.Tools {
		if tool.Name == name {
			return true
		}
	}
	return false
}

// callTool calls a tool and returns its text, and whether it failed (a
// tool error or a protocol error, whose text is then the error's).
func callTool(ctx context.Context, cs *mcp.ClientSession, name, text string) (string, bool) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": text}})
	if err != nil {
		return err.Error(), true
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// mustEcho calls an echo tool and fails the test unless it answers.
func mustEcho(t *testing.T, cs *mcp.ClientSession, name, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if got, failed := callTool(ctx, cs, name, text); failed || !strings.Contains(got, text) {
		t.Errorf("%s(%q) = %q (failed %v), want its text back", name, text, got, failed)
	}
}

// getCode returns the status of a GET of u, without a token and with no
// Accept header, as curl sends.
func getCode(t *testing.T, u string) int {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(u)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
