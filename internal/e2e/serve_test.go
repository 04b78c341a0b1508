package e2e

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolNames lists a session's tools.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func callVersion(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "junction_version"})
	if err != nil {
		t.Fatalf("tools/call junction_version: %v", err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("junction_version: isError=%v content=%v", res.IsError, res.Content)
	}
	if _, ok := res.Content[0].(*mcp.TextContent); !ok {
		t.Errorf("junction_version content[0] is %T, want text", res.Content[0])
	}
}

func hasName(names []string, want string) bool {
	for _, n := range names {
		if n == want {
			return true
		}
	}
	return false
}

// TestStdioServe checks the harness's stdio path: junction serve answers a
// go-sdk client on stdin/stdout.
func TestStdioServe(t *testing.T) {
	cs := connectStdio(t)
	if names := toolNames(t, cs); !hasName(names, "junction_version") {
		t.Fatalf("tools over stdio = %v, want junction_version among them", names)
	}
	callVersion(t, cs)
}

// TestServeReleasesStartupPages: once its startup is over, junction serve
// gives back the pages of its own code that only startup used (it says so
// at debug level, with how many bytes were resident), and serves on from
// the pages it maps again. The start of a hub whose host has a handshake
// (before 2026-07-28) ends with it; a 2026-07-28 host has none, and its
// first request stands for it (the hub would wait a few seconds only for
// a host that sends nothing).
func TestServeReleasesStartupPages(t *testing.T) {
	for _, tc := range []struct {
		name, version string
	}{{"handshake", "2025-11-25"}, {"first-request", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stderr := newOutput()
			cs := connectStdioOpts(t, newClient(nil), stderr, &mcp.ClientSessionOptions{ProtocolVersion: tc.version}, "-log-level", "debug")
			if names := toolNames(t, cs); !hasName(names, "junction_version") {
				t.Fatalf("tools = %v, want junction_version among them", names)
			}
			released := regexp.MustCompile(`msg="startup pages released" bytes=([0-9]+) after_handshake=(true|false)`)
			var m []string
			waitFor(t, "the startup pages released line", startTimeout, func() bool {
				m = released.FindStringSubmatch(stderr.String())
				return m != nil
			})
			if n, _ := strconv.Atoi(m[1]); n < 1<<20 {
				t.Errorf("released %s bytes; want the startup's pages, megabytes", m[1])
			}
			if m[2] != "true" {
				t.Errorf("released with after_handshake=%s; want true: the host greeted the hub", m[2])
			}
			callVersion(t, cs) // served after the release
		})
	}
}

// TestHTTPServeToken checks the HTTP path with a token: the right token
// gets in, no token and a wrong one get 401.
func TestHTTPServeToken(t *testing.T) {
	const token = "e2e-secret-token"
	srv := startServer(t, "-token", token)
	cs := connectHTTP(t, srv.URL, token)
	if names := toolNames(t, cs); !hasName(names, "junction_version") {
		t.Fatalf("tools over HTTP = %v, want junction_version among them", names)
	}
	callVersion(t, cs)

	for _, tc := range []struct{ name, token string }{{"none", ""}, {"wrong", "not-the-token"}} {
		t.Run(tc.name, func(t *testing.T) {
			status := postInitialize(t, srv.URL, tc.token)
			if status != http.StatusUnauthorized {
				t.Errorf("initialize with %s token: HTTP %d, want 401", tc.name, status)
			}
		})
	}
}

// TestHTTPServeNoAuth checks -insecure-no-auth on loopback.
func TestHTTPServeNoAuth(t *testing.T) {
	url := startServe(t, "-insecure-no-auth")
	cs := connectHTTP(t, url, "")
	callVersion(t, cs)
}

// postInitialize sends a raw initialize POST and returns the HTTP status.
func postInitialize(t *testing.T, url, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	hc := httpClient(token)
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
