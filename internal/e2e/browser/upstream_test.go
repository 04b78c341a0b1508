//go:build linux

package browser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
)

// The flaky upstream is this test binary run again by junction, as
// internal/e2e's fault upstream is (fault_upstream_test.go there), with
// envUpstream set to "serve": a stdio MCP server (2025-11-25) with the
// tools echo (answers with its arguments) and crash (exits without
// answering). flakyServer wraps it in a shell that makes it fail to start
// while a flag file exists.
const envUpstream = "JUNCTION_E2E_BROWSER_UPSTREAM"

func init() {
	switch mode := os.Getenv(envUpstream); mode {
	case "":
		return
	case "serve":
		if err := serveUpstream(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "flaky upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	default:
		fmt.Fprintf(os.Stderr, "flaky upstream: unknown mode %q\n", mode)
		os.Exit(2)
	}
}

// serveUpstream answers the requests read from r on w until r ends.
func serveUpstream(r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, rerr := br.ReadBytes('\n')
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		var out []byte
		if json.Unmarshal(line, &req) == nil && len(req.ID) > 0 && req.Method != "" {
			result := func(res string) []byte {
				return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, res)
			}
			switch req.Method {
			case "initialize":
				out = result(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"flaky-upstream","version":"1"}}`)
			case "ping":
				out = result(`{}`)
			case "tools/list":
				out = result(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"crash","inputSchema":{"type":"object"}}]}`)
			case "tools/call":
				switch req.Params.Name {
				case "echo":
					text, _ := json.Marshal(string(req.Params.Arguments))
					out = result(fmt.Sprintf(`{"content":[{"type":"text","text":%s}]}`, text))
				case "crash":
					fmt.Fprintln(os.Stderr, "flaky upstream: crashing in the middle of a call")
					os.Exit(3)
				default:
					out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`+"\n", req.ID)
				}
			default:
				out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", req.ID)
			}
		}
		if out != nil {
			if _, err := w.Write(out); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// flakyServer is a config entry for an upstream named name that serves as
// the flaky upstream does (tools echo and crash) unless the file flag
// exists, in which case it reads a line, writes a line on stderr and
// exits with status 7, as a server missing its configuration would.
func flakyServer(t *testing.T, name, flag string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// It reads the initialize request before it fails, so that junction
	// sees the exit, not a write to a closed pipe.
	script := `if [ -e "$FLAKY_FLAG" ]; then read -r _; echo "flaky: down for maintenance ($FLAKY_FLAG exists)" >&2; exit 7; fi; exec "$FLAKY_SELF"`
	return fmt.Sprintf("  %s:\n    command: /bin/sh\n    args: [-c, %q]\n    env: {FLAKY_FLAG: %q, FLAKY_SELF: %q, %s: serve, GORACE: \"atexit_sleep_ms=0\"}\n",
		name, script, flag, self, envUpstream)
}
