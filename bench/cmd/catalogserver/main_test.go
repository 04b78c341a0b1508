package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction/bench/catalog"
)

func TestServer(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "Git (geropl)", Name: "git_status", Description: "Show the working tree status", InputSchema: json.RawMessage(`{"type":"object","properties":{"repo_path":{"type":"string"}}}`)},
		{Server: "Slack", Name: "git_status", Description: "not really"},
	}
	s, keys, err := newServer(tools)
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range res.Tools {
		got = append(got, keys[tool.Name])
	}
	if len(got) != 2 || got[0] != "Git (geropl)/git_status" || got[1] != "Slack/git_status" {
		t.Errorf("listed %q (names %v)", got, keys)
	}
	call, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: res.Tools[1].Name})
	if err != nil || !call.IsError {
		t.Errorf("call = %+v, %v; want a tool error", call, err)
	}
}

func TestHTTP(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "Git (geropl)", Name: "git_status", Description: "Show the working tree status"},
		{Server: "Git (geropl)", Name: "git_log", Description: "Show the commit log"},
		{Server: "Slack", Name: "git_status", Description: "not really"},
	}
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serveHTTP(t.Context(), tools, "127.0.0.1:0", outW, inR)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if !ok || !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("first line %q", line)
	}
	for _, want := range []struct {
		path, title string
		tools       []string
	}{
		{"/s/Git_geropl", "Git (geropl)", []string{"git_log", "git_status"}},
		{"/s/Slack", "Slack", []string{"git_status"}},
	} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + want.path}, nil)
		if err != nil {
			t.Fatalf("%s: %v", want.path, err)
		}
		info := cs.InitializeResult().ServerInfo
		if info.Name != strings.TrimPrefix(want.path, "/s/") || info.Title != want.title {
			t.Errorf("%s: serverInfo %+v", want.path, info)
		}
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatalf("%s: %v", want.path, err)
		}
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want.tools) {
			t.Errorf("%s lists %q, want %q", want.path, got, want.tools)
		}
		cs.Close()
	}
	resp, err := http.Post(base+"/s/Nope", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown server: status %d", resp.StatusCode)
	}

	inW.Close() // the end of stdin stops it
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveHTTP = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveHTTP did not return after its stdin ended")
	}
}

func TestHTTPLoopbackOnly(t *testing.T) {
	tools := []catalog.Tool{{Server: "S", Name: "t"}}
	for _, addr := range []string{"0.0.0.0:0", ":0", "localhost:0", "nonsense"} {
		if err := serveHTTP(t.Context(), tools, addr, io.Discard, strings.NewReader("")); err == nil {
			t.Errorf("serveHTTP on %q: no error", addr)
		}
	}
}
