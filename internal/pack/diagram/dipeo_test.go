package diagram

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// dipeoEnv is a hub with the pack in DiPeO mode over a project folder
// laid out as DiPeO's: projects/mcp-diagrams and examples/simple_diagrams.
func dipeoEnv(t *testing.T) (*testEnv, string) {
	t.Helper()
	root := t.TempDir()
	hello, err := os.ReadFile("testdata/dipeo/hello.light.yaml")
	if err != nil {
		t.Fatal(err)
	}
	greet, _ := os.ReadFile("testdata/dipeo/greeting_template.light.yaml")
	for p, b := range map[string][]byte{
		"projects/mcp-diagrams/hello_world.yaml":       hello,
		"projects/mcp-diagrams/native.json":            []byte(`{"nodes": {}}`),
		"examples/simple_diagrams/greeting.light.yaml": greet,
		"secret.txt": []byte("not a diagram"),
		"projects/mcp-diagrams/sub/nested.light.yaml": hello,
	} {
		full := filepath.Join(root, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o700)
		if err := os.WriteFile(full, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := newEnv(t, "", func(o *Options) { o.DiPeO = true; o.DiagramsRoot = root })
	return env, root
}

func TestDiPeORun(t *testing.T) {
	env, root := dipeoEnv(t)
	out, isErr := env.call(t, "dipeo_run", map[string]any{"diagram": "hello_world", "input_data": map[string]any{"x": 1}})
	if isErr || out["success"] != true || out["format"] != "light" || out["message"] != "Diagram executed successfully" ||
		out["diagram"] != filepath.Join(root, "projects/mcp-diagrams/hello_world.yaml") {
		t.Fatalf("dipeo_run hello_world: %v", out)
	}
	if got := out["output"].(map[string]any)["x"]; got != 1.0 {
		t.Errorf("output: %v", out["output"])
	}
	out, _ = env.call(t, "dipeo_run", map[string]any{"diagram": "greeting", "input_data": map[string]any{"words": []any{"a"}}})
	if out["success"] != true || !strings.HasPrefix(out["output"].(string), "Hello, World of Earth!") {
		t.Errorf("dipeo_run of an example: %v", out)
	}
	out, _ = env.call(t, "dipeo_run", map[string]any{"diagram": "projects/mcp-diagrams/sub/nested", "format_type": "light"})
	if out["success"] != true {
		t.Errorf("dipeo_run by path: %v", out)
	}
	for args, want := range map[string]string{
		`{"diagram": ""}`: "diagram parameter is required",
		`{"diagram": "hello_world", "format_type": "yaml"}`:   "Invalid format_type: yaml. Must be one of ['light', 'native', 'readable']",
		`{"diagram": "hello_world", "format_type": "native"}`: "format_type native is not supported by junction",
		`{"diagram": "../../etc/passwd"}`:                     "outside the diagrams root",
		`{"diagram": "/etc/passwd"}`:                          "outside the diagrams root",
		`{"diagram": "nothing_here"}`:                         "Diagram not found: nothing_here",
	} {
		var a map[string]any
		json.Unmarshal([]byte(args), &a)
		out, isErr := env.call(t, "dipeo_run", a)
		if !isErr || out["success"] != false || !strings.Contains(out["error"].(string), want) {
			t.Errorf("dipeo_run %s: %v, want error containing %q", args, out, want)
		}
	}
	out, _ = env.call(t, "dipeo_run", map[string]any{"diagram": "secret.txt"})
	if out["success"] != false || !strings.Contains(out["error"].(string), "Diagram not found") && !strings.Contains(out["error"].(string), "not valid") {
		t.Errorf("dipeo_run secret.txt: %v", out)
	}
}

func TestDiPeOSearchFetchResource(t *testing.T) {
	env, root := dipeoEnv(t)
	out, _ := env.call(t, "search", map[string]any{"query": "HELLO"})
	if out["success"] != true || out["query"] != "HELLO" || out["count"] != 1.0 {
		t.Fatalf("search: %v", out)
	}
	r := out["results"].([]any)[0].(map[string]any)
	if r["name"] != "hello_world" || r["format"] != "light" || r["location"] != "mcp-diagrams" || r["path"] != filepath.Join(root, "projects/mcp-diagrams/hello_world.yaml") || r["id"] != "dipeo://diagrams/hello_world" {
		t.Errorf("search result: %v", r)
	}
	out, _ = env.call(t, "search", map[string]any{"query": ""})
	if out["count"] != 3.0 {
		t.Errorf("search everything: %v", out)
	}
	for _, uri := range []string{"dipeo://diagrams/hello_world", "hello_world", filepath.Join(root, "projects/mcp-diagrams/hello_world.yaml"), "projects/mcp-diagrams/hello_world.yaml"} {
		out, isErr := env.call(t, "fetch", map[string]any{"uri": uri})
		if isErr || out["success"] != true || out["name"] != "hello_world" || out["format"] != "light" || !strings.Contains(out["content"].(string), "version: light") || out["text"] != out["content"] || out["uri"] != uri {
			t.Errorf("fetch %s: %v", uri, out)
		}
	}
	out, _ = env.call(t, "fetch", map[string]any{"id": "dipeo://diagrams/greeting.light"})
	if out["success"] != true || out["name"] != "greeting.light" {
		t.Errorf("fetch by id: %v", out)
	}
	for _, uri := range []string{"../../../../etc/passwd", "/etc/passwd", "dipeo://diagrams/../secret", "nothing"} {
		out, isErr := env.call(t, "fetch", map[string]any{"uri": uri})
		if !isErr || out["success"] != false || !strings.HasPrefix(out["error"].(string), "Diagram not found") {
			t.Errorf("fetch %s: %v", uri, out)
		}
	}
	// A link inside the root that leads out of it is not followed.
	os.Symlink("/etc/passwd", filepath.Join(root, "projects/mcp-diagrams/passwd.yaml"))
	if out, _ := env.call(t, "fetch", map[string]any{"uri": "passwd"}); out["success"] != false {
		t.Errorf("fetch through a link out of the root: %v", out)
	}

	res, err := env.cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: DiPeOListURI})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Diagrams []map[string]any `json:"diagrams"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &list); err != nil || len(list.Diagrams) != 3 || list.Diagrams[0]["path"] != "projects/mcp-diagrams/hello_world.yaml" || list.Diagrams[1]["format"] != "native" {
		t.Errorf("dipeo://diagrams: %v %s", err, res.Contents[0].Text)
	}
	found := false
	for r, err := range env.cs.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		found = found || r.URI == DiPeOListURI
	}
	if !found {
		t.Error("dipeo://diagrams is not listed")
	}

	// compile_diagram saves into projects/mcp-diagrams, where dipeo_run finds it.
	src, _ := os.ReadFile("testdata/dipeo/branch_on_input.light.yaml")
	out, _ = env.call(t, "compile_diagram", map[string]any{"diagram_content": string(src), "push_as": "my_workflow", "format_type": "light"})
	if out["valid"] != true || out["pushed_as"] != "my_workflow" {
		t.Fatalf("compile_diagram: %v", out)
	}
	if _, err := os.Stat(filepath.Join(root, "projects/mcp-diagrams/my_workflow.yaml")); err != nil {
		t.Error(err)
	}
	out, _ = env.call(t, "dipeo_run", map[string]any{"diagram": "my_workflow", "input_data": map[string]any{"n": 3}})
	if out["output"] != "3 is small (or unlucky)" {
		t.Errorf("dipeo_run of a pushed diagram: %v", out)
	}
}

// TestExpiredRequestState: a call that names a request state no parked
// run has gets an error saying so.
func TestExpiredRequestState(t *testing.T) {
	env := newEnv(t, "", nil)
	res, err := env.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run_diagram", Arguments: map[string]any{"diagram_content": "version: light\nnodes: [{label: s, type: start}, {label: e, type: endpoint}]\nconnections: [{from: s, to: e}]\n"}, RequestState: "dgm_0123"})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, "unknown or expired requestState") {
		t.Errorf("a made-up request state: %s", text)
	}
}

// TestDiPeORunBackendLookup: in DiPeO mode run_backend and run_diagram
// find a diagram as dipeo_run does (a name in projects/mcp-diagrams or
// examples/simple_diagrams, or a path under the root), and a name that
// is not there is "Diagram not found".
func TestDiPeORunBackendLookup(t *testing.T) {
	env, _ := dipeoEnv(t)
	for _, ref := range []string{"greeting", "projects/mcp-diagrams/sub/nested", "dipeo://diagrams/hello_world"} {
		want, isErr := env.call(t, "dipeo_run", map[string]any{"diagram": ref, "input_data": map[string]any{"words": []any{"a"}}})
		if isErr {
			t.Fatalf("dipeo_run %s: %v", ref, want)
		}
		out, isErr := env.call(t, "run_backend", map[string]any{"diagram": ref, "input_data": map[string]any{"words": []any{"a"}}})
		if isErr || out["status"] != "started" {
			t.Errorf("run_backend %s: %v", ref, out)
			continue
		}
		if r := env.poll(t, out["session_id"].(string)); r["status"] != StatusCompleted || fmt.Sprint(r["output"]) != fmt.Sprint(want["output"]) {
			t.Errorf("run_backend %s: run %v, want the output dipeo_run gave: %v", ref, r, want["output"])
		}
		if out, isErr := env.call(t, "run_diagram", map[string]any{"diagram": ref, "input_data": map[string]any{"words": []any{"a"}}}); isErr || fmt.Sprint(out["output"]) != fmt.Sprint(want["output"]) {
			t.Errorf("run_diagram %s: %v, want the output dipeo_run gave: %v", ref, out, want["output"])
		}
	}
	for ref, want := range map[string]string{
		"nothing_here":     "Diagram not found: nothing_here",
		"../../etc/passwd": "outside the diagrams root",
	} {
		out, isErr := env.call(t, "run_backend", map[string]any{"diagram": ref})
		if !isErr || out["success"] != false || !strings.Contains(fmt.Sprint(out["error"]), want) {
			t.Errorf("run_backend %s: %v, want an error containing %q", ref, out, want)
		}
	}
}

// TestRunNamesTheDiagramParameter: outside DiPeO mode diagram names a
// saved diagram; a path there gets an error about the diagram parameter,
// not about push_as (which the caller did not give).
func TestRunNamesTheDiagramParameter(t *testing.T) {
	env := newEnv(t, "", nil)
	for _, tool := range []string{"run_backend", "run_diagram"} {
		out, isErr := env.call(t, tool, map[string]any{"diagram": "examples/simple_diagrams/simple_iter"})
		msg := fmt.Sprint(out["error"])
		if !isErr || strings.Contains(msg, "push_as") || !strings.Contains(msg, "path separators and '..' are not allowed in diagram parameter") || !strings.Contains(msg, "diagram_content") {
			t.Errorf("%s with a path: %v", tool, out)
		}
	}
	out, _ := env.call(t, "fetch", map[string]any{"id": "../x"})
	if msg := fmt.Sprint(out["error"]); strings.Contains(msg, "push_as") || !strings.Contains(msg, "id parameter") {
		t.Errorf("fetch with a path: %v", out)
	}
}
