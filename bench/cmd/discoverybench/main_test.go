package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"

	"github.com/junction-mcp/junction/bench/catalog"
)

func TestRecorder(t *testing.T) {
	wire := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"x"}}
{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}
{"jsonrpc":"2.0","id":2,"result":{"content":[],"structuredContent":{"matched":1,"tools":[{"name":"a"}]}}}
{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}
`
	// One byte a read, so that lines arrive in pieces.
	r := &recorder{r: io.NopCloser(iotest.OneByteReader(strings.NewReader(wire)))}
	got, err := io.ReadAll(r)
	if err != nil || string(got) != wire {
		t.Fatalf("passed through %q, %v", got, err)
	}
	n, pages := r.pages()
	lines := strings.SplitAfter(wire, "\n")
	if want := len(lines[0]) + len(lines[3]); n != want {
		t.Errorf("recorded %d bytes, want %d", n, want)
	}
	if len(pages) != 2 || string(pages[0]) != `[{"name":"a"}]` || string(pages[1]) != `[]` {
		t.Errorf("recorded pages %q", pages)
	}
	r.reset()
	if n, pages := r.pages(); n != 0 || pages != nil {
		t.Errorf("after reset: %d, %q", n, pages)
	}
}

func TestRankedKeys(t *testing.T) {
	keys := map[string]string{"Git_geropl__git_status": "Git (geropl)/git_status"}
	res := &mcp.CallToolResult{StructuredContent: map[string]any{"matched": 2, "tools": []any{
		map[string]any{"name": "Git_geropl__git_status", "server": "catalog"},
		map[string]any{"name": "other", "server": "catalog"},
	}}}
	got, err := rankedKeys(res, keys)
	if err != nil || len(got) != 2 || got[0] != "Git (geropl)/git_status" || got[1] != "other" {
		t.Errorf("rankedKeys = %q, %v", got, err)
	}
	res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "query must not be empty"}}}
	if _, err := rankedKeys(res, keys); err == nil || !strings.Contains(err.Error(), "query must not be empty") {
		t.Errorf("tool error: %v", err)
	}
}

func TestConfig(t *testing.T) {
	var c struct {
		Servers map[string]struct {
			Command string
			Args    []string
			Prefix  string
		}
		Discovery struct{ Mode string }
	}
	servers := "  catalog:\n    command: \"/tmp/a b\"\n    args: [-catalog, \"/x/catalog.json\"]\n    prefix: never\n"
	if err := yaml.Unmarshal([]byte(config(servers, "search")), &c); err != nil {
		t.Fatal(err)
	}
	s := c.Servers["catalog"]
	if s.Command != "/tmp/a b" || len(s.Args) != 2 || s.Prefix != "never" || c.Discovery.Mode != "search" {
		t.Errorf("config parsed as %+v", c)
	}
}

func TestPercentileAndTable(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4}
	if percentile(d, 50) != 3 || percentile(d, 99) != 4 || percentile(nil, 50) != 0 {
		t.Error("percentile")
	}
	var b bytes.Buffer
	printTable(&b, []row{
		{config: "c", mode: "list", list: listing{tools: 100, bytes: 5000, toolsJSON: make([][]byte, 1)}, o200k: 1000},
		{config: "c", mode: "search", list: listing{tools: 3, bytes: 300, toolsJSON: make([][]byte, 1)}, o200k: 15},
	})
	if !strings.Contains(b.String(), "| c | search | 3 | 1 | 300 | 0 | 15 | 6.00% / 1.50% |") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-catalog", "c.json"},
		{"-node", "node"},
		{"-catalog", "c.json", "-fixture", "f", "-queries", "q.json"},
		{"-catalog", "c.json", "-fixture", "f", "-layout", "many"},
		{"extra"},
	} {
		if err := run(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) did not fail", args)
		}
	}
}

// pipeHub returns a hub whose session is with s, over pipes, its
// responses recorded as startHub's are.
func pipeHub(t *testing.T, s *mcp.Server) *hub {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ss, err := s.Connect(t.Context(), &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	h := &hub{rec: &recorder{r: cr}}
	h.cs, err = mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(t.Context(), &mcp.IOTransport{Reader: h.rec, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.cs.Close() })
	return h
}

func TestReady(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake hub"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	s.AddTool(&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	s.AddTool(&mcp.Tool{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	// describe_tools knows a at first, b from its second call on.
	calls := 0
	s.AddTool(&mcp.Tool{Name: "describe_tools", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in struct{ Names []string }
		json.Unmarshal(req.Params.Arguments, &in)
		type named struct {
			Name string `json:"name"`
		}
		out := struct {
			Tools  []named `json:"tools"`
			Errors []named `json:"errors"`
		}{[]named{}, []named{}}
		for _, n := range in.Names {
			if n == "a" || n == "b" && calls > 0 {
				out.Tools = append(out.Tools, named{n})
			} else {
				out.Errors = append(out.Errors, named{n})
			}
		}
		calls++
		return &mcp.CallToolResult{StructuredContent: out}, nil
	})
	h := pipeHub(t, s)

	first, err := h.listAll(t.Context())
	if err != nil || first.tools != 3 {
		t.Fatalf("listAll = %+v, %v", first, err)
	}
	if l, late, err := h.ready(t.Context(), "list", []string{"a", "b"}, first); err != nil || late || l.tools != 3 {
		t.Errorf("list mode, all there: %d tools, late %v, %v", l.tools, late, err)
	}
	partial := listing{tools: 1, names: []string{"a"}}
	if l, late, err := h.ready(t.Context(), "list", []string{"a", "b"}, partial); err != nil || !late || l.tools != 3 {
		t.Errorf("list mode, b missing at first: %d tools, late %v, %v", l.tools, late, err)
	}
	if l, late, err := h.ready(t.Context(), "search", []string{"a", "b"}, partial); err != nil || !late || l.tools != 3 || calls != 2 {
		t.Errorf("search mode, b missing at first: %d tools, late %v, %v, %d describe_tools calls", l.tools, late, err, calls)
	}
	if missing, err := h.undescribed(t.Context(), []string{"a", "c"}); err != nil || len(missing) != 1 || missing[0] != "c" {
		t.Errorf("undescribed = %q, %v", missing, err)
	}
}

func TestFixture(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A fixture that prints its URL and serves until its stdin ends.
	f, err := startFixture(script("good", `echo listening http://127.0.0.1:1; cat >/dev/null`), "c.json")
	if err != nil {
		t.Fatal(err)
	}
	if f.url != "http://127.0.0.1:1" {
		t.Errorf("url %q", f.url)
	}
	if err := f.close(); err != nil {
		t.Error(err)
	}
	if _, err := startFixture(script("bad", `echo hello; cat >/dev/null`), "c.json"); err == nil {
		t.Error("a fixture with no URL: no error")
	}
}

func TestPerServer(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "Git (geropl)", Name: "git_status"},
		{Server: "Git (geropl)", Name: "git_log"},
		{Server: "Slack", Name: "git_status"},
	}
	servers, err := perServer("http://127.0.0.1:9", tools)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Servers map[string]struct {
			Transport, URL, Prefix string
		}
	}
	if err := yaml.Unmarshal([]byte(config(servers, "search")), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 2 || c.Servers["Git_geropl"].URL != "http://127.0.0.1:9/s/Git_geropl" ||
		c.Servers["Slack"].URL != "http://127.0.0.1:9/s/Slack" || c.Servers["Slack"].Transport != "http" || c.Servers["Slack"].Prefix != "" {
		t.Errorf("per-server config parsed as %+v", c)
	}
}

func TestAbsent(t *testing.T) {
	if got := absent([]string{"a", "b", "c"}, []string{"c", "a"}); len(got) != 1 || got[0] != "b" {
		t.Errorf("absent = %q", got)
	}
}
