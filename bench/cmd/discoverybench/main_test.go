package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
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
		{"extra"},
	} {
		if err := run(t.Context(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("run(%q) did not fail", args)
		}
	}
}
