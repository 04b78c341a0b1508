package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// newGoServer returns a go-sdk MCP server with one echo tool. Its
// sessions are closed when the test ends (a session the client did not
// end, because the server was killed under it, lives on otherwise).
func newGoServer(t *testing.T) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "http-upstream", Version: "1"}, nil)
	t.Cleanup(func() {
		for ss := range s.Sessions() {
			ss.Close()
		}
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	return s
}

// requireAuth rejects requests without the bearer token and team header.
func requireAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Team") != "blue" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func TestHTTPTransports(t *testing.T) {
	t.Parallel()
	server := newGoServer(t)
	handlers := map[Transport]http.Handler{
		TransportStreamableHTTP: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil),
		TransportSSE:            mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil),
	}
	for kind, h := range handlers {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(requireAuth(h))
			t.Cleanup(ts.Close)
			r, _ := newRegistry(t, &Options{MinBackoff: time.Hour})
			cfg := Config{Transport: kind, URL: ts.URL, BearerToken: "s3cret", Headers: map[string]string{"X-Team": "blue"}}
			s := addReady(t, r, "h", cfg)
			res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{"a":1}`)}})
			if err != nil || resultText(t, res) != `{"a":1}` {
				t.Errorf("CallTool(echo) over %s = %v, %v", kind, res, err)
			}
			if snap := s.Snapshot(); snap.Transport != kind || snap.ServerInfo.Name != "http-upstream" {
				t.Errorf("Snapshot = %+v", snap)
			}

			// Without the token: failed, with the HTTP status in the error.
			bad := cfg
			bad.BearerToken = "wrong"
			b, err := r.Add("bad", bad)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil {
				t.Error("WaitReady with a wrong token succeeded")
			}
			if snap := b.Snapshot(); snap.State != StateFailed || !strings.Contains(strings.ToLower(snap.LastError), "unauthorized") {
				t.Errorf("wrong token: state %v, last error %q; want failed, unauthorized", snap.State, snap.LastError)
			}
		})
	}
}

// TestHTTPReconnect stops an HTTP upstream and starts it again on the same
// address: the keepalive ping notices, and the server reconnects.
func TestHTTPReconnect(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serve := func(ln net.Listener) *http.Server {
		server := newGoServer(t)
		hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)}
		go hs.Serve(ln)
		return hs
	}
	hs := serve(ln)

	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	r, _ := newRegistry(t, &Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	cfg := Config{
		URL:        "http://" + addr,
		HTTPClient: &http.Client{Transport: transport},
		KeepAlive:  100 * time.Millisecond,
		// Pings exist only before 2026-07-28.
		ProtocolVersion: "2025-11-25",
	}
	s := addReady(t, r, "h", cfg)

	hs.Close()
	waitFor(t, "the session to be noticed dead", func() bool { return s.Snapshot().State != StateConnected })
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	hs = serve(ln)
	t.Cleanup(func() { hs.Close() })
	waitFor(t, "reconnect", func() bool { snap := s.Snapshot(); return snap.State == StateConnected && snap.Connects == 2 })
	res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`1`)}})
	if err != nil || resultText(t, res) != "1" {
		t.Errorf("CallTool after reconnect = %v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	if _, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo"}}); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CallTool after Close = %v, want a source-down error", err)
	}
}

// An SSE server that accepts the stream but never names its endpoint:
// the connect timeout ends the attempt, and nothing is left running.
func TestSSEConnectTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) })
	r, _ := newRegistry(t, &Options{MinBackoff: time.Hour})
	s, err := r.Add("slow", Config{Transport: TransportSSE, URL: ts.URL, ConnectTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitReady = %v, want a deadline error", err)
	}
	if st := s.Snapshot().State; st != StateFailed {
		t.Errorf("state = %v, want failed", st)
	}
}
