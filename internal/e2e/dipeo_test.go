package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DiPeO's clients, unchanged, against "junction serve -pack dipeo": the
// quick-reference bodies of DiPeO's MCP server documentation on
// /mcp/messages, its environment variables, dipeo_run, fetch by uri,
// dipeo://diagrams, and light diagrams whose person_job and user_response
// nodes are played by the host (sampling, elicitation).

// corpus is the pack's light-format corpus.
const corpus = "../pack/diagram/testdata/dipeo"

// dipeoProject lays out a DiPeO project: projects/mcp-diagrams and
// examples/simple_diagrams, with diagrams of the corpus.
func dipeoProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for dst, src := range map[string]string{
		"projects/mcp-diagrams/hello_world.yaml":       "hello.light.yaml",
		"examples/simple_diagrams/ask_user.light.yaml": "ask_user.light.yaml",
		"examples/simple_diagrams/branch.light.yaml":   "branch_on_input.light.yaml",
	} {
		b, err := os.ReadFile(filepath.Join(corpus, src))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(dst))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// dipeoServe serves the dipeo pack over root with DiPeO's variables set.
func dipeoServe(t *testing.T, root string, env map[string]string, args ...string) *serveProc {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	body := "packs:\n  core: {}\n  dipeo:\n    settings:\n      diagrams_root: " + root + "\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, append([]string{"-config", cfg}, args...)...)
}

type plainReply struct {
	code int
	body string
	json map[string]any
}

func plain(t *testing.T, method, url, body string, headers map[string]string) plainReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := plainReply{code: resp.StatusCode, body: string(b)}
	json.Unmarshal(b, &r.json)
	return r
}

// toolJSON is the JSON text of a tools/call result on /mcp/messages.
func toolJSON(t *testing.T, r plainReply) map[string]any {
	t.Helper()
	res, _ := r.json["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("tools/call: %d %s", r.code, r.body)
	}
	return decodeJSON(t, content[0].(map[string]any)["text"].(string))
}

func TestDiPeOQuickReference(t *testing.T) {
	root := dipeoProject(t)
	p := dipeoServe(t, root, map[string]string{
		"MCP_AUTH_ENABLED":    "true",
		"MCP_API_KEY_ENABLED": "true",
		"MCP_API_KEYS":        "dev-key-123,dev-key-456",
		"MCP_DEFAULT_TIMEOUT": "600",
		"DIPEO_LOG_LEVEL":     "DEBUG",
	})
	base := "http://" + p.Addr
	key := map[string]string{"X-API-Key": "dev-key-123"}
	bearer := map[string]string{"Authorization": "Bearer dev-key-456"}

	if r := plain(t, "GET", base+"/mcp/info", "", nil); r.code != http.StatusUnauthorized {
		t.Errorf("GET /mcp/info without a key: %d %s", r.code, r.body)
	}
	info := plain(t, "GET", base+"/mcp/info", "", key)
	proto, _ := info.json["protocol"].(map[string]any)
	if info.code != 200 || proto["version"] != "2024-11-05" || !strings.Contains(info.body, `"dipeo_run"`) || !strings.Contains(info.body, `"dipeo://diagrams"`) {
		t.Errorf("GET /mcp/info: %d %s", info.code, info.body)
	}

	// The quick-reference bodies: no jsonrpc, no id.
	list := plain(t, "POST", base+"/mcp/messages", `{"method": "tools/list"}`, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer dev-key-456"})
	if list.code != 200 || !strings.Contains(list.body, `"dipeo_run"`) || list.json["id"] != nil || list.json["jsonrpc"] != "2.0" {
		t.Errorf(`{"method": "tools/list"}: %d %s`, list.code, list.body)
	}
	if _, hasID := list.json["id"]; !hasID {
		t.Errorf(`{"method": "tools/list"}: the answer has no id (want null): %s`, list.body)
	}
	if r := plain(t, "POST", base+"/mcp/messages", `{"method": "resources/list"}`, key); r.code != 200 || !strings.Contains(r.body, `"dipeo://diagrams"`) {
		t.Errorf(`{"method": "resources/list"}: %d %s`, r.code, r.body)
	}
	read := plain(t, "POST", base+"/mcp/messages", `{"method": "resources/read", "params": {"uri": "dipeo://diagrams"}}`, key)
	if read.code != 200 || !strings.Contains(read.body, `hello_world`) || !strings.Contains(read.body, `examples/simple_diagrams/branch.light.yaml`) {
		t.Errorf("resources/read dipeo://diagrams: %d %s", read.code, read.body)
	}

	// Execute diagram, as the quick reference does.
	run := plain(t, "POST", base+"/mcp/messages", `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "dipeo_run", "arguments": {"diagram": "hello_world", "format_type": "light"}}}`, bearer)
	if out := toolJSON(t, run); out["success"] != true || out["diagram"] != filepath.Join(root, "projects/mcp-diagrams/hello_world.yaml") || out["format"] != "light" || out["message"] != "Diagram executed successfully" {
		t.Errorf("dipeo_run hello_world: %v", out)
	}
	run = plain(t, "POST", base+"/mcp/messages", `{"method": "tools/call", "params": {"name": "dipeo_run", "arguments": {"diagram": "branch", "input_data": {"n": 13}}}}`, key)
	if out := toolJSON(t, run); out["success"] != true || out["output"] != "13 is small (or unlucky)" {
		t.Errorf("dipeo_run branch: %v", out)
	}

	// search and fetch, in DiPeO's shapes; fetch stays inside the root.
	search := toolJSON(t, plain(t, "POST", base+"/mcp/messages", `{"method": "tools/call", "params": {"name": "search", "arguments": {"query": "hello"}}}`, key))
	if search["success"] != true || search["query"] != "hello" || search["count"] != 1.0 {
		t.Errorf("search: %v", search)
	}
	for _, uri := range []string{"dipeo://diagrams/hello_world", "hello_world", filepath.Join(root, "projects/mcp-diagrams/hello_world.yaml")} {
		out := toolJSON(t, plain(t, "POST", base+"/mcp/messages", `{"method": "tools/call", "params": {"name": "fetch", "arguments": {"uri": `+string(jsonString(uri))+`}}}`, key))
		if out["success"] != true || out["name"] != "hello_world" || !strings.Contains(out["content"].(string), "version: light") {
			t.Errorf("fetch %s: %v", uri, out)
		}
	}
	for _, uri := range []string{"/etc/passwd", "../../../../../../etc/passwd"} {
		out := toolJSON(t, plain(t, "POST", base+"/mcp/messages", `{"method": "tools/call", "params": {"name": "fetch", "arguments": {"uri": `+string(jsonString(uri))+`}}}`, key))
		if out["success"] != false || !strings.HasPrefix(out["error"].(string), "Diagram not found") {
			t.Errorf("fetch %s: %v", uri, out)
		}
	}

	// junction's own tools are served beside DiPeO's.
	cs := connectHTTP(t, p.URL, "dev-key-456")
	names := map[string]bool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names[tool.Name] = true
	}
	for _, n := range []string{"dipeo_run", "run_backend", "see_result", "compile_diagram", "search", "fetch", "run_diagram", "cancel_run", "junction_version"} {
		if !names[n] {
			t.Errorf("tool %s is not served (have %v)", n, names)
		}
	}
	if !strings.Contains(p.Stderr(), "level=DEBUG") {
		t.Errorf("DIPEO_LOG_LEVEL=DEBUG: no debug line in the log:\n%s", p.Stderr())
	}
}

// TestDiPeOHostPlaysThePerson: a light diagram's user_response nodes are
// asked of the host's user (elicitation) and its person_job of the host's
// model (sampling); a host that cannot sample gets an error that says so.
func TestDiPeOHostPlaysThePerson(t *testing.T) {
	root := dipeoProject(t)
	p := dipeoServe(t, root, map[string]string{"MCP_API_KEYS": "k1"})
	answers := []any{"Ada", 36}
	var prompts []string
	c := newClient(&mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			text := req.Params.Messages[len(req.Params.Messages)-1].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Role: "assistant", Model: "host-model", Content: &mcp.TextContent{Text: "Hello! " + text + " (" + req.Params.SystemPrompt + ")"}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			prompts = append(prompts, req.Params.Message)
			a := answers[0]
			answers = answers[1:]
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"response": a}}, nil
		},
	})
	cs := connectHTTPClient(t, c, p.URL, "k1")
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "dipeo_run", Arguments: map[string]any{"diagram": "ask_user"}})
	if err != nil {
		t.Fatal(err)
	}
	out := decodeJSON(t, res.Content[0].(*mcp.TextContent).Text)
	if res.IsError || out["output"] != "Hello! Greet Ada who is 36 years old. (You are warm.)" {
		t.Errorf("dipeo_run ask_user: %v", out)
	}
	if want := "What is your name?|How old are you, Ada?"; strings.Join(prompts, "|") != want {
		t.Errorf("elicited %q, want %q", prompts, want)
	}
	if b, err := os.ReadFile(filepath.Join(root, "results/greeting.txt")); err != nil || !strings.HasPrefix(string(b), "Hello! Greet Ada") {
		t.Errorf("endpoint file: %q %v", b, err)
	}

	// The same through the legacy HTTP+SSE endpoint (2024-11-05): the
	// requests go to the host while the call is in progress.
	answers, prompts = []any{"Bo", 7}, nil
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	sse, err := c.Connect(ctx, &mcp.SSEClientTransport{Endpoint: "http://" + p.Addr + "/sse", HTTPClient: httpClient("k1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	if v := sse.InitializeResult().ProtocolVersion; v >= "2026-07-28" {
		t.Errorf("/sse negotiated %s, want a revision before 2026-07-28", v)
	}
	res, err = sse.CallTool(t.Context(), &mcp.CallToolParams{Name: "dipeo_run", Arguments: map[string]any{"diagram": "ask_user"}})
	if err != nil {
		t.Fatal(err)
	}
	if out := decodeJSON(t, res.Content[0].(*mcp.TextContent).Text); res.IsError || out["output"] != "Hello! Greet Bo who is 7 years old. (You are warm.)" {
		t.Errorf("dipeo_run ask_user over /sse: %v", out)
	}

	// A host without sampling or elicitation.
	plainHost := connectHTTP(t, p.URL, "k1")
	res, err = plainHost.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{
		"diagram_content": "version: light\nnodes:\n- {label: s, type: start}\n- {label: p, type: person_job, default_prompt: hi}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: p}, {from: p, to: e}]\n",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "did not declare the MCP sampling capability") {
		t.Errorf("person_job on a host that cannot sample: %s", text)
	}
}

// TestDiPeOAuthVariables: MCP_API_KEY_ENABLED=false ignores the keys;
// MCP_AUTH_ENABLED=false serves without authentication on loopback and
// is refused elsewhere.
func TestDiPeOAuthVariables(t *testing.T) {
	root := dipeoProject(t)
	t.Run("keys off", func(t *testing.T) {
		p := dipeoServe(t, root, map[string]string{"MCP_API_KEY_ENABLED": "false", "MCP_API_KEYS": "k1"}, "-token", "own")
		if r := plain(t, "GET", "http://"+p.Addr+"/mcp/info", "", map[string]string{"X-API-Key": "k1"}); r.code != http.StatusUnauthorized {
			t.Errorf("a key with MCP_API_KEY_ENABLED=false: %d", r.code)
		}
		if r := plain(t, "GET", "http://"+p.Addr+"/mcp/info", "", map[string]string{"X-API-Key": "own"}); r.code != 200 {
			t.Errorf("the hub's own token: %d", r.code)
		}
	})
	t.Run("auth off on loopback", func(t *testing.T) {
		p := dipeoServe(t, root, map[string]string{"MCP_AUTH_ENABLED": "false"})
		if r := plain(t, "POST", "http://"+p.Addr+"/mcp/messages", `{"method": "tools/list"}`, nil); r.code != 200 || !strings.Contains(r.body, "dipeo_run") {
			t.Errorf("MCP_AUTH_ENABLED=false: %d %s", r.code, r.body)
		}
		if strings.Contains(p.Stderr(), "generated token") {
			t.Errorf("MCP_AUTH_ENABLED=false, and serve made a token anyway:\n%s", p.Stderr())
		}
	})
	t.Run("keys only", func(t *testing.T) {
		p := dipeoServe(t, root, map[string]string{"MCP_API_KEYS": "k1,k2"})
		if strings.Contains(p.Stderr(), "generated token") {
			t.Errorf("MCP_API_KEYS set, and serve made a token of its own beside them:\n%s", p.Stderr())
		}
		if r := plain(t, "GET", "http://"+p.Addr+"/mcp/info", "", map[string]string{"X-API-Key": "k2"}); r.code != 200 {
			t.Errorf("an MCP_API_KEYS key: %d", r.code)
		}
		if r := plain(t, "GET", "http://"+p.Addr+"/mcp/info", "", nil); r.code != http.StatusUnauthorized {
			t.Errorf("no key: %d, want 401", r.code)
		}
	})
	t.Run("auth off elsewhere", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "junction.yaml")
		os.WriteFile(cfg, []byte("packs:\n  dipeo:\n    settings:\n      diagrams_root: "+root+"\n"), 0o600)
		_, stderr, code := runJunction(t, []string{"MCP_AUTH_ENABLED=false"}, "serve", "-http", "0.0.0.0:0", "-config", cfg)
		if code == 0 || !strings.Contains(stderr, "MCP_AUTH_ENABLED=false turns authentication off, which junction allows on a loopback address only") {
			t.Errorf("MCP_AUTH_ENABLED=false on 0.0.0.0: exit %d\n%s", code, stderr)
		}
	})
}

// TestDiPeOLightCLI: junction diagram compile --light and run --light
// take the files dipeo compile --light takes.
func TestDiPeOLightCLI(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*.light.yaml"))
	if len(files) == 0 {
		t.Fatal("no corpus")
	}
	dataDir := t.TempDir()
	for _, f := range files {
		out, stderr, code := runJunction(t, []string{"JUNCTION_DIAGRAM_ALLOW_COMMANDS=1"}, "diagram", "compile", f, "--light", "-data-dir", dataDir)
		if code != 0 || decodeJSON(t, out)["valid"] != true {
			t.Errorf("diagram compile --light %s: exit %d\n%s\n%s", f, code, out, stderr)
		}
	}
	out, stderr, code := runJunction(t, nil, "diagram", "run", strings.TrimSuffix(filepath.Join(corpus, "branch_on_input.light.yaml"), ".light.yaml"), "--light", "-input", `{"n": 42}`, "-data-dir", dataDir)
	if code != 0 || decodeJSON(t, out)["output"] != "42 is big" {
		t.Errorf("diagram run --light (no extension): exit %d\n%s\n%s", code, out, stderr)
	}
	// From standard input, as dipeo compile --stdin --light --push-as.
	src, _ := os.ReadFile(filepath.Join(corpus, "hello.light.yaml"))
	cmd := runJunctionStdin(t, src, "diagram", "compile", "--stdin", "--light", "--push-as", "my_workflow", "-data-dir", dataDir)
	if decodeJSON(t, cmd)["pushed_as"] != "my_workflow" {
		t.Errorf("compile --stdin --light --push-as: %s", cmd)
	}
	// --light refuses junction's own format, naming the file.
	own := writeFile(t, t.TempDir(), "own.yaml", "nodes: [{id: s, type: start}, {id: e, type: endpoint}]\nedges: [{from: s, to: e}]\n")
	if _, stderr, code := runJunction(t, nil, "diagram", "compile", own, "--light", "-data-dir", dataDir); code == 0 || !strings.Contains(stderr, own+" is not a DiPeO light diagram") {
		t.Errorf("compile --light of junction's format: exit %d %s", code, stderr)
	}
	// A person_job from the command line: there is no host to ask.
	_, stderr, code = runJunction(t, nil, "diagram", "run", filepath.Join(corpus, "judge.light.yaml"), "--light", "-input", `{"draft": "x"}`, "-data-dir", dataDir)
	if code != 1 || !strings.Contains(stderr, "this run has no MCP host to ask") {
		t.Errorf("run --light of a person's diagram: exit %d %s", code, stderr)
	}
}

func runJunctionStdin(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, junctionBin(t), args...)
	cmd.Env = childEnv(t.TempDir())
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("junction %v: %v", args, err)
	}
	return string(out)
}

// TestDiPeOOverStdio: a host that runs junction as its stdio server (as
// Claude Desktop does) plays DiPeO's persons: a person answers three times,
// then says how often it answered, from the conversation it was given.
func TestDiPeOOverStdio(t *testing.T) {
	root := dipeoProject(t)
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(cfg, []byte("packs:\n  dipeo:\n    settings:\n      diagrams_root: "+root+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(corpus, "iterate_person.light.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sampled := 0
	c := newClient(&mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled++
			answers := (len(req.Params.Messages) - 1) / 2
			return &mcp.CreateMessageResult{Role: "assistant", Model: "host-model", Content: &mcp.TextContent{Text: "I answered " + strconv.Itoa(answers) + " times"}}, nil
		},
	})
	cs := connectStdioClient(t, c, "-config", cfg)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "compile_diagram", Arguments: map[string]any{"diagram_content": string(src), "push_as": "simple_iter"}})
	if err != nil || res.IsError {
		t.Fatalf("compile_diagram: %v %v", err, res)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "dipeo_run", Arguments: map[string]any{"diagram": "simple_iter"}})
	if err != nil {
		t.Fatal(err)
	}
	out := decodeJSON(t, res.Content[0].(*mcp.TextContent).Text)
	if res.IsError || out["output"] != "I answered 3 times" || sampled != 4 {
		t.Errorf("dipeo_run simple_iter: sampled %d times: %v", sampled, out)
	}
	if b, err := os.ReadFile(filepath.Join(root, "files/results/total.txt")); err != nil || string(b) != "I answered 3 times" {
		t.Errorf("files/results/total.txt: %q %v", b, err)
	}
}
