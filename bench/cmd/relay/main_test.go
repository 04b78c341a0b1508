package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// Both modes hand every byte on, in order: here through cat, with a line
// longer than any buffer on the way and a last line without its newline.
func TestRelay(t *testing.T) {
	in := "{\"a\":1}\n" + strings.Repeat("x", 300<<10) + "\n{\"b\":2}"
	for _, mode := range [][]string{{}, {"-lines"}} {
		var out bytes.Buffer
		if err := run(append(mode, "--", "cat"), strings.NewReader(in), &out); err != nil {
			t.Fatalf("relay %v: %v", mode, err)
		}
		want := in
		if len(mode) > 0 {
			want += "\n" // whole lines: the last one gets its end
		}
		if out.String() != want {
			t.Errorf("relay %v: %d bytes out for %d in, or changed", mode, out.Len(), len(in))
		}
	}
}

// The HTTP relay answers each POST with the server's line of the same id
// (here the server is a pipe that sends every line back, so the answer is
// the request), accepts notifications with 202, and ends with its context.
func TestHTTPRelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHTTP(ctx, ln, pw, pr) }()
	url := "http://" + ln.Addr().String() + "/mcp"
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	long := `{"jsonrpc":"2.0","id":"b\"ig","result":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, req := range []string{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, long} {
		if code, got := post(req); code != http.StatusOK || got != req {
			t.Errorf("POST of %d bytes: %d, %d bytes back", len(req), code, len(got))
		}
	}
	if code, _ := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Errorf("notification: %d, want 202", code)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serveHTTP: %v", err)
	}
	pw.Close()
}
