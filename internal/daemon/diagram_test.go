package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/internal/buildinfo"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// diagramDaemon builds a daemon serving the core and diagram packs over
// a temporary data directory, and a go-sdk client session to it. The
// diagram pack's settings open loopback to http nodes, through the config
// file's packs section: the examples call test servers on 127.0.0.1.
func diagramDaemon(t *testing.T) (*Daemon, *mcp.ClientSession) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	cfg := &config.Config{Packs: map[string]*config.Pack{"diagram": {Settings: map[string]any{"http_allow_cidrs": []any{"127.0.0.0/8"}}}}}
	d, err := Build(t.Context(), Spec{Packs: []string{"core", "diagram"}, Config: cfg, DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return d, connectDaemon(t, d)
}

// connectDaemon connects a go-sdk client to d's default view in process
// (Daemon.Connect), and closes the session, then d, at cleanup.
func connectDaemon(t *testing.T, d *Daemon) *mcp.ClientSession {
	t.Helper()
	cs, err := d.Connect(t.Context(), mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return cs
}

func callJSON(t *testing.T, cs *mcp.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return out, res.IsError
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "diagrams", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDiagramExamples compiles every example diagram through the hub and
// runs it for real.
func TestDiagramExamples(t *testing.T) {
	_, cs := diagramDaemon(t)
	for _, name := range []string{"chain", "condition", "http"} {
		out, isErr := callJSON(t, cs, "compile_diagram", map[string]any{"diagram_content": readExample(t, name+".yaml"), "push_as": name})
		if isErr || out["valid"] != true {
			t.Fatalf("compile_diagram(%s) = %v", name, out)
		}
	}

	t.Run("chain", func(t *testing.T) {
		out, isErr := callJSON(t, cs, "run_diagram", map[string]any{"diagram": "chain", "input_data": map[string]any{"query": "con"}})
		if isErr {
			t.Fatalf("run = %v", out)
		}
		want := map[string]any{
			"version": buildinfo.Version(),
			"matches": []any{map[string]any{"id": "condition", "title": "condition — say whether a number is big or small", "url": "junction://diagrams/condition"}},
			"report":  fmt.Sprintf("junction %s has 1 saved diagrams matching \"con\"", buildinfo.Version()),
		}
		if diff := cmp.Diff(want, out["output"]); diff != "" {
			t.Errorf("chain output (-want +got):\n%s", diff)
		}
	})

	t.Run("condition", func(t *testing.T) {
		for n, want := range map[float64]string{42: "42 is big", 3: "3 is small"} {
			out, _ := callJSON(t, cs, "run_diagram", map[string]any{"diagram": "condition", "input_data": map[string]any{"n": n}})
			if out["output"] != want {
				t.Errorf("condition(n=%v) output = %v, want %q", n, out["output"], want)
			}
			branch := "big"
			if n < 10 {
				branch = "small"
			}
			if diff := cmp.Diff([]any{"start", "check", branch, "end"}, out["executed_nodes"]); diff != "" {
				t.Errorf("condition(n=%v) executed_nodes (-want +got):\n%s", n, diff)
			}
		}
	})

	t.Run("http", func(t *testing.T) {
		healthy := true
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/status" || r.Header.Get("Accept") != "application/json" {
				http.Error(w, "wrong request", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"ok": %v, "version": "1.2"}`, healthy)
		}))
		defer srv.Close()
		out, isErr := callJSON(t, cs, "run_diagram", map[string]any{"diagram": "http", "input_data": map[string]any{"base_url": srv.URL}})
		if isErr {
			t.Fatalf("run = %v", out)
		}
		if diff := cmp.Diff(map[string]any{"healthy": true, "version": "1.2"}, out["output"]); diff != "" {
			t.Errorf("http output (-want +got):\n%s", diff)
		}
		healthy = false
		out, _ = callJSON(t, cs, "run_diagram", map[string]any{"diagram": "http", "input_data": map[string]any{"base_url": srv.URL}})
		if diff := cmp.Diff(map[string]any{"healthy": false, "status": 200.0}, out["output"]); diff != "" {
			t.Errorf("http output when unhealthy (-want +got):\n%s", diff)
		}
		out, _ = callJSON(t, cs, "run_diagram", map[string]any{"diagram": "http", "input_data": map[string]any{"base_url": srv.URL + "/nope"}})
		if out["status"] != "failed" || !strings.Contains(fmt.Sprint(out["error"]), "HTTP 400: wrong request") {
			t.Errorf("http against a missing path = %v", out)
		}
	})
}

// TestPlainEndpoints is seed 002's curl session: GET /mcp/info and POST
// /mcp/messages, with and without a key.
func TestPlainEndpoints(t *testing.T) {
	d, _ := diagramDaemon(t)
	srv := httptest.NewServer(d.Handler(HTTPConfig{Tokens: []string{"dev-key-123"}}, "127.0.0.1"))
	defer srv.Close()
	client := srv.Client()

	do := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	key := map[string]string{"X-API-Key": "dev-key-123"}
	bearer := map[string]string{"Authorization": "Bearer dev-key-123"}

	if code, body := do("GET", "/mcp/info", "", nil); code != http.StatusUnauthorized || !strings.Contains(body, "authentication required") {
		t.Errorf("GET /mcp/info without a key = %d %s, want 401", code, body)
	}
	if code, body := do("GET", "/mcp/info", "", map[string]string{"X-API-Key": "wrong"}); code != http.StatusUnauthorized || !strings.Contains(body, "invalid token") {
		t.Errorf("GET /mcp/info with a wrong key = %d %s, want 401", code, body)
	}
	for _, h := range []map[string]string{key, bearer} {
		code, body := do("GET", "/mcp/info", "", h)
		if code != http.StatusOK {
			t.Fatalf("GET /mcp/info with %v = %d %s", h, code, body)
		}
		var info struct {
			Server       map[string]string `json:"server"`
			Protocol     map[string]string `json:"protocol"`
			Endpoints    map[string]string `json:"endpoints"`
			Capabilities map[string]int    `json:"capabilities"`
			Tools        []struct{ Name string }
			Resources    []struct{ URI string }
		}
		if err := json.Unmarshal([]byte(body), &info); err != nil {
			t.Fatalf("GET /mcp/info body: %v\n%s", err, body)
		}
		var tools []string
		for _, tl := range info.Tools {
			tools = append(tools, tl.Name)
		}
		// go-sdk lists tools sorted by name.
		wantTools := []string{"cancel_run", "compile_diagram", "fetch", "junction_version", "run_backend", "run_diagram", "search", "see_result"}
		if diff := cmp.Diff(wantTools, tools); diff != "" {
			t.Errorf("/mcp/info tools (-want +got):\n%s", diff)
		}
		if info.Server["name"] != "junction" || info.Protocol["transport"] != "http" || info.Protocol["version"] == "" || info.Endpoints["messages"] != "/mcp/messages" {
			t.Errorf("/mcp/info server/protocol/endpoints = %v %v %v", info.Server, info.Protocol, info.Endpoints)
		}
		if info.Capabilities["tools"] != len(wantTools) || info.Capabilities["resources"] != 1 || len(info.Resources) != 1 || info.Resources[0].URI != "junction://diagrams" {
			t.Errorf("/mcp/info capabilities/resources = %v %v", info.Capabilities, info.Resources)
		}
	}

	list := `{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}`
	if code, _ := do("POST", "/mcp/messages", list, map[string]string{"Content-Type": "application/json"}); code != http.StatusUnauthorized {
		t.Errorf("POST /mcp/messages without a key = %d, want 401", code)
	}
	// As in the seed's curl examples: only Content-Type, no Accept, no
	// initialize, no session.
	code, body := do("POST", "/mcp/messages", list, map[string]string{"Content-Type": "application/json", "X-API-Key": "dev-key-123"})
	if code != http.StatusOK || !strings.Contains(body, `"run_diagram"`) {
		t.Fatalf("POST /mcp/messages tools/list = %d %s", code, body)
	}
	var resp struct {
		ID     int `json:"id"`
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.ID != 1 || len(resp.Result.Tools) != 8 {
		t.Errorf("tools/list response = %s (%v)", body, err)
	}

	run := `{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_diagram", "arguments": {"diagram_content": ` +
		strconvQuote(readExample(t, "condition.yaml")) + `, "input_data": {"n": 99}}}}`
	code, body = do("POST", "/mcp/messages", run, bearer)
	if code != http.StatusOK || !strings.Contains(body, `99 is big`) {
		t.Errorf("POST /mcp/messages tools/call run_diagram = %d %s", code, body)
	}
	read := `{"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "junction://diagrams"}}`
	if code, body = do("POST", "/mcp/messages", read, key); code != http.StatusOK || !strings.Contains(body, `\"diagrams\"`) {
		t.Errorf("POST /mcp/messages resources/read = %d %s", code, body)
	}
	if code, body = do("POST", "/mcp/messages", `{not json`, key); code != http.StatusBadRequest || !strings.Contains(body, "-32700") {
		t.Errorf("POST /mcp/messages with bad JSON = %d %s, want 400 parse error", code, body)
	}
	if code, _ = do("GET", "/mcp/messages", "", key); code != http.StatusMethodNotAllowed {
		t.Errorf("GET /mcp/messages = %d, want 405", code)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestDiagramPackDataDir(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, "/state/junction"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/state/junction"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/state/junction"},
	} {
		if got := DefaultDataDir(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("DefaultDataDir(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}

	// With no DataDir, the pack keeps its state under XDG_STATE_HOME.
	ignore := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, ignore)
	state := t.TempDir()
	d, err := Build(t.Context(), Spec{Packs: []string{"diagram"}, Getenv: func(k string) string {
		if k == "XDG_STATE_HOME" {
			return state
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "junction", "diagram-runs.db")); err != nil {
		t.Errorf("run store not under XDG_STATE_HOME: %v", err)
	}
	if _, err := os.Stat(filepath.Join(state, "junction", "diagram-owners")); err != nil {
		t.Errorf("owner locks not under XDG_STATE_HOME: %v", err)
	}
}

// A bad diagram setting stops the build with an error naming it; a good
// one reaches the pack.
func TestDiagramSettings(t *testing.T) {
	build := func(settings map[string]any) (*Daemon, error) {
		cfg := &config.Config{Packs: map[string]*config.Pack{"diagram": {Settings: settings}}}
		return Build(t.Context(), Spec{Packs: []string{"diagram"}, Config: cfg, DataDir: t.TempDir()})
	}
	for _, tc := range []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"max_nodes": "lots"}, `packs.diagram.settings.max_nodes: must be a whole number above zero, not "lots"`},
		{map[string]any{"http_allow_cidrs": []any{"10.0.0/8"}}, `packs.diagram.settings.http_allow_cidrs[0]: "10.0.0/8" is not a network`},
		{map[string]any{"max_node": 3}, "packs.diagram.settings.max_node: unknown setting (known: allow_commands, "},
	} {
		d, err := build(tc.settings)
		if err == nil {
			d.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build with settings %v: error %v, want %q", tc.settings, err, tc.want)
		}
	}
	d, err := build(map[string]any{"max_nodes": int64(2)})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectDaemon(t, d)
	out, _ := callJSON(t, cs, "compile_diagram", map[string]any{"diagram_content": readExample(t, "condition.yaml"), "push_as": "c"})
	if !strings.Contains(fmt.Sprint(out["errors"]), "over the limit of 2 (the diagram pack's max_nodes setting)") {
		t.Errorf("compile_diagram with max_nodes 2 = %v", out)
	}
}
