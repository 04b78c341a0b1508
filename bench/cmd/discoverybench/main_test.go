package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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
	if err := yaml.Unmarshal([]byte(config(servers, "search", semantic{})), &c); err != nil {
		t.Fatal(err)
	}
	s := c.Servers["catalog"]
	if s.Command != "/tmp/a b" || len(s.Args) != 2 || s.Prefix != "never" || c.Discovery.Mode != "search" {
		t.Errorf("config parsed as %+v", c)
	}
}

func TestSemanticConfig(t *testing.T) {
	type sem struct {
		URL, Model string
		Weight     *float64
		Timeout    string
	}
	var c struct {
		Servers   map[string]struct{ URL string }
		Discovery struct {
			Mode     string
			Semantic *sem
		}
	}
	servers := "  a:\n    transport: http\n    url: \"http://127.0.0.1:9/s/a\"\n"
	parse := func(s semantic) {
		t.Helper()
		c.Discovery.Semantic = nil
		if err := yaml.Unmarshal([]byte(config(servers, "search", s)), &c); err != nil {
			t.Fatalf("%v:\n%s", err, config(servers, "search", s))
		}
		if c.Servers["a"].URL != "http://127.0.0.1:9/s/a" || c.Discovery.Mode != "search" {
			t.Errorf("config parsed as %+v", c)
		}
	}

	// Without -semantic, the config is what it was.
	if got, want := config(servers, "search", semantic{}), "servers:\n"+servers+"discovery:\n  mode: search\n"; got != want {
		t.Errorf("config without semantic = %q, want %q", got, want)
	}
	parse(semantic{})
	if c.Discovery.Semantic != nil {
		t.Errorf("semantic section without -semantic: %+v", c.Discovery.Semantic)
	}

	// -semantic alone: url and model, the weight and timeout left out.
	parse(semantic{url: "http://127.0.0.1:41000/v1", model: "use-lite"})
	if s := c.Discovery.Semantic; s == nil || s.URL != "http://127.0.0.1:41000/v1" || s.Model != "use-lite" || s.Weight != nil || s.Timeout != "" {
		t.Errorf("semantic section parsed as %+v", s)
	}
	// And with a weight and a timeout.
	parse(semantic{url: "http://127.0.0.1:41000/v1", model: "a \"model\"", weight: 0.3, timeout: 30 * time.Second})
	if s := c.Discovery.Semantic; s == nil || s.Model != `a "model"` || s.Weight == nil || *s.Weight != 0.3 || s.Timeout != "30s" {
		t.Errorf("semantic section with weight and timeout parsed as %+v", s)
	}
}

func TestSemanticFlags(t *testing.T) {
	base := []string{"-catalog", "c.json", "-fixture", "f", "-queries", "q.json", "-ranked", "r.jsonl"}
	sem := append(slices.Clone(base), "-semantic", "http://127.0.0.1:1/v1")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-catalog", "c.json", "-fixture", "f", "-semantic", "http://127.0.0.1:1/v1"}, "-semantic needs -queries"},
		{append(slices.Clone(base), "-semantic-weight", "0.3"), "-semantic-weight needs -semantic"},
		{append(slices.Clone(base), "-semantic-model", "m"), "-semantic-model needs -semantic"},
		{append(slices.Clone(base), "-semantic-timeout", "30s"), "-semantic-timeout needs -semantic"},
		{append(slices.Clone(base), "-semantic-wait", "1m"), "-semantic-wait needs -semantic"},
		{append(slices.Clone(sem), "-semantic-weight", "0"), "want a number above 0 and at most 10"},
		{append(slices.Clone(sem), "-semantic-weight", "11"), "want a number above 0 and at most 10"},
		{append(slices.Clone(sem), "-semantic-weight", "x"), "want a number above 0 and at most 10"},
		{append(slices.Clone(sem), "-semantic-timeout", "-1s"), "want a duration above 0"},
		{append(slices.Clone(sem), "-semantic-model", ""), "-semantic needs a -semantic-model"},
		{append(slices.Clone(sem), "-semantic-wait", "0s"), "-semantic-wait above 0"},
	} {
		err := run(t.Context(), c.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", c.args, err, c.want)
		}
	}
	// Set right, the flags pass the checks: the run fails on the missing
	// catalog file.
	args := append(slices.Clone(sem), "-semantic-model", "m", "-semantic-weight", "0.3", "-semantic-timeout", "30s", "-semantic-wait", "1m")
	if err := run(t.Context(), args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "c.json") {
		t.Errorf("run(%q) = %v, want the catalog's error", args, err)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP junction_search_semantic_tools Tools with an embedding (state=ready) and waiting for one (state=pending).
# TYPE junction_search_semantic_tools gauge
junction_search_semantic_tools{state="pending"} 2755
junction_search_semantic_tools{state="ready"} 128
junction_search_semantic_requests_total 4

`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil || len(m) != 3 || m[metricReady] != 128 || m[metricPending] != 2755 || m[metricRequests] != 4 {
		t.Errorf("parseMetrics = %v, %v", m, err)
	}
	if _, err := parseMetrics(strings.NewReader("x{a=\"b\"} many\n")); err == nil {
		t.Error("a value that is not a number: no error")
	}
}

func TestStderrWatch(t *testing.T) {
	var out bytes.Buffer
	found := make(chan string, 1)
	w := &stderrWatch{w: &out, prefix: adminPrefix, found: found}
	text := "time=x level=WARN msg=hello\n" + adminPrefix + "http://127.0.0.1:4242/\n" + adminPrefix + "http://127.0.0.1:1/\n"
	// One byte a write, so that lines arrive in pieces.
	for i := range len(text) {
		if n, err := w.Write([]byte{text[i]}); n != 1 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if out.String() != text {
		t.Errorf("passed through %q", out.String())
	}
	select {
	case u := <-found:
		if u != "http://127.0.0.1:4242/" {
			t.Errorf("found %q", u)
		}
	default:
		t.Error("found nothing")
	}
}

func TestWaitSemantic(t *testing.T) {
	// A hub's admin listener whose semantic stage has 2 of 3 tools at
	// first, then all 3 from the third scrape on.
	var scrapes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		ready, pending := 2, 1
		if scrapes.Add(1) >= 3 {
			ready, pending = 3, 0
		}
		fmt.Fprintf(w, "# TYPE junction_search_semantic_tools gauge\n%s %d\n%s %d\n%s 7\n%s 1\n%s 0\n",
			metricPending, pending, metricReady, ready, metricRequests, metricFailures, metricFallbacks)
	}))
	defer srv.Close()
	admin := make(chan string, 1)
	admin <- srv.URL + "/"
	h := &hub{started: time.Now(), admin: admin}
	var log bytes.Buffer
	if err := waitSemantic(t.Context(), h, 3, time.Minute, &log); err != nil {
		t.Fatal(err)
	}
	if scrapes.Load() != 3 || !strings.Contains(log.String(), "all 3 tools embedded") || !strings.Contains(log.String(), "7 requests to the endpoint, 1 failed") {
		t.Errorf("%d scrapes, log %q", scrapes.Load(), log.String())
	}
	log.Reset()
	if err := semanticAfter(t.Context(), h, &log); err != nil || !strings.Contains(log.String(), "0 searches ranked by words only") || strings.Contains(log.String(), "WARNING") {
		t.Errorf("semanticAfter: %v, log %q", err, log.String())
	}

	// Past the deadline, with a tool still pending: an error naming
	// what it waited for.
	scrapes.Store(-100)
	h = &hub{started: time.Now().Add(-time.Hour), adminBase: srv.URL + "/"}
	err := waitSemantic(t.Context(), h, 3, time.Minute, io.Discard)
	if err == nil || !strings.Contains(err.Error(), metricReady) || !strings.Contains(err.Error(), "got 2 ready and 1 pending") {
		t.Errorf("past the deadline: %v", err)
	}
	// A hub without a semantic stage.
	noStage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "junction_up 1")
	}))
	defer noStage.Close()
	h = &hub{started: time.Now(), adminBase: noStage.URL + "/"}
	if err := waitSemantic(t.Context(), h, 3, time.Minute, io.Discard); err == nil || !strings.Contains(err.Error(), "semantic stage is off") {
		t.Errorf("no semantic stage: %v", err)
	}
	// A hub with no admin listener.
	if err := waitSemantic(t.Context(), &hub{started: time.Now()}, 3, time.Minute, io.Discard); err == nil {
		t.Error("no admin listener: no error")
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
	if err := yaml.Unmarshal([]byte(config(servers, "search", semantic{})), &c); err != nil {
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
