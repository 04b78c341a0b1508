package diagram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeHost answers sampling with reply and elicitation from answers, in
// order, and records what it was asked.
type fakeHost struct {
	mu       sync.Mutex
	reply    func(p *mcp.CreateMessageParams) string
	answers  []any
	sampled  []*mcp.CreateMessageParams
	elicited []string
}

func (h *fakeHost) CreateMessage(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sampled = append(h.sampled, p)
	return &mcp.CreateMessageResult{Role: "assistant", Model: "fake", Content: &mcp.TextContent{Text: h.reply(p)}}, nil
}

func (h *fakeHost) Elicit(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.elicited = append(h.elicited, p.Message)
	if len(h.answers) == 0 {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	a := h.answers[0]
	h.answers = h.answers[1:]
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"response": a}}, nil
}

func lastUser(p *mcp.CreateMessageParams) string {
	return p.Messages[len(p.Messages)-1].Content.(*mcp.TextContent).Text
}

// subShout is a diagram that sub_diagrams.light.yaml runs once per item.
const subShout = "version: light\nnodes:\n- {label: Start, type: start}\n- {label: Shout, type: template_job, template_content: '{{ default.default.word }}{{ punct }} ({{ _batch_index + 1 }} of {{ _batch_total }})'}\n- {label: End, type: endpoint}\nconnections: [{from: Start, to: Shout}, {from: Shout, to: End}]\n"

// lightCase is what one corpus diagram is run with and must give.
type lightCase struct {
	input    map[string]any
	host     *fakeHost
	commands bool
	output   any
	// setup are files put in the files root before the run.
	setup map[string]string
	// files are expected in the files root after the run.
	files map[string]string
	check func(t *testing.T, h *fakeHost)
}

// TestLightCorpus runs every diagram of testdata/dipeo (DiPeO's light
// format, written from its documentation) and checks its result. A file
// without a case here fails the test.
func TestLightCorpus(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if r.Method != http.MethodPost || r.URL.Path != "/orders" || r.URL.Query().Get("dry_run") != "yes" {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "o-1", "accepted": true, "quantity": body["quantity"], "customer": r.Header.Get("X-Customer"), "item": body["item"]})
	}))
	defer api.Close()
	apiURL, _ := url.Parse(api.URL)

	cases := map[string]lightCase{
		"hello": {input: map[string]any{"x": 1.0}, output: map[string]any{"x": 1.0}},
		"greeting_template": {
			input:  map[string]any{"words": []any{"alpha", "beta"}},
			output: "Hello, World of Earth! You sent 2 words, first alpha.",
		},
		"branch_on_input": {input: map[string]any{"n": 42.0}, output: "42 is big"},
		"iterate_person": {
			host: &fakeHost{reply: func(p *mcp.CreateMessageParams) string {
				return fmt.Sprintf("%s after %d messages", lastUser(p), len(p.Messages)-1)
			}},
			output: "How many times did you respond? after 6 messages",
			files:  map[string]string{"files/results/total.txt": "How many times did you respond? after 6 messages"},
			check: func(t *testing.T, h *fakeHost) {
				if len(h.sampled) != 4 {
					t.Errorf("sampled %d times, want 4 (3 iterations, then ask)", len(h.sampled))
				}
				p := h.sampled[0]
				if p.SystemPrompt != "You answer briefly." || p.ModelPreferences == nil || p.ModelPreferences.Hints[0].Name != "gpt-5-nano-2025-08-07" {
					t.Errorf("first request: system %q, prefs %+v", p.SystemPrompt, p.ModelPreferences)
				}
			},
		},
		"ask_user": {
			host: &fakeHost{
				answers: []any{"Ada", 36.0},
				reply:   func(p *mcp.CreateMessageParams) string { return "Hi! " + lastUser(p) },
			},
			output: "Hi! Greet Ada who is 36 years old.",
			files:  map[string]string{"results/greeting.txt": "Hi! Greet Ada who is 36 years old."},
			check: func(t *testing.T, h *fakeHost) {
				if want := []string{"What is your name?", "How old are you, Ada?"}; !reflect.DeepEqual(h.elicited, want) {
					t.Errorf("elicited %q, want %q", h.elicited, want)
				}
			},
		},
		"files_roundtrip": {
			input:  map[string]any{"region": "north", "units": 42.0},
			output: "north sold 42 units; 1 file(s)",
			files:  map[string]string{"data/sales.json": "{\n  \"region\": \"north\",\n  \"units\": 42\n}"},
		},
		"call_api": {
			input:  map[string]any{"base": api.URL, "customer": "acme", "item": "widget"},
			output: "order o-1 for acme accepted",
		},
		"code_jobs": {
			input:    map[string]any{"numbers": []any{1.0, 2.0, 3.0, 6.0}},
			commands: true,
			output: map[string]any{
				"stats": map[string]any{"total": 12.0, "count": 4.0, "mean": 3.0},
				"shell": map[string]any{"keys": []any{"numbers", "stats"}},
			},
		},
		"code_from_file": {
			input:    map[string]any{"values": []any{1.0, 2.5}},
			commands: true,
			setup:    map[string]string{"code/scale.py": "def scale(values, factor, **kwargs):\n    out = [v * factor for v in values]\n    return {'values': out, 'total': sum(out)}\n"},
			// A light diagram without an endpoint ends with its last node.
			output: "scaled: [10,25] (sum 35)",
		},
		"sub_diagrams": {
			input: map[string]any{"name": "Ada", "items": []any{map[string]any{"word": "alpha"}, map[string]any{"word": "beta"}}},
			setup: map[string]string{
				"examples/shout.light.yaml":      subShout,
				"projects/demo/greet.light.yaml": "version: light\nnodes:\n- {label: Start, type: start}\n- {label: Greet, type: template_job, template_content: 'Hello, {{ name }}'}\n- {label: End, type: endpoint}\nconnections: [{from: Start, to: Greet}, {from: Greet, to: End}]\n",
			},
			output: "Hello, Ada: alpha! (1 of 2) beta! (2 of 2)",
		},
		"judge": {
			input: map[string]any{"draft": "a fine text"},
			host: &fakeHost{reply: func(p *mcp.CreateMessageParams) string {
				if strings.Contains(lastUser(p), "fine") {
					return "YES, it is acceptable."
				}
				return "NO."
			}},
			output: "published: a fine text",
		},
	}
	files, err := filepath.Glob("testdata/dipeo/*.light.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".light.yaml")
		t.Run(name, func(t *testing.T) {
			c, ok := cases[name]
			if !ok {
				t.Fatalf("%s has no expected result in TestLightCorpus", f)
			}
			if c.commands {
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skip("python3 is not installed")
				}
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			env := newEnv(t, "", func(o *Options) {
				o.AllowCommands = c.commands
				o.HTTPAllowHosts = []string{apiURL.Host}
			})
			writeFiles(t, env, c.setup)
			d, ps := env.pack.Check(src)
			if errs := ps.Errors(); len(errs) > 0 || d == nil || !d.Light() {
				t.Fatalf("Check: %v", ps)
			}
			req := RunRequest{Content: src, Input: c.input}
			if c.host != nil {
				req.Host = c.host
			}
			r, err := env.pack.Run(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != StatusCompleted {
				t.Fatalf("status %s: %s (ran %v)", r.Status, r.Error, r.ExecutedNodes)
			}
			if !reflect.DeepEqual(r.Output, c.output) {
				t.Errorf("output %#v\nwant   %#v", r.Output, c.output)
			}
			for p, want := range c.files {
				b, err := os.ReadFile(filepath.Join(env.dir, "diagram-files", p))
				if err != nil || string(b) != want {
					t.Errorf("file %s: %q, %v; want %q", p, b, err, want)
				}
			}
			if c.check != nil {
				c.check(t, c.host)
			}
		})
	}
}

// TestLightErrors: bad light documents get errors that name the node
// and the field; nodes that need a host or commands say so when run.
func TestLightErrors(t *testing.T) {
	env := newEnv(t, "", nil)
	for _, tc := range []struct{ name, src, want string }{
		{"unsupported type", "version: light\nnodes:\n- {label: s, type: start}\n- {label: h, type: hook, hook_type: shell}\n", `node "h": nodes[1].type: DiPeO node type "hook" is not supported by junction`},
		{"unknown label", "version: light\nnodes:\n- {label: s, type: start}\n- {label: e, type: endpoint}\nconnections:\n- {from: s, to: nowhere}\n", `connections[0].to: no node has the label "nowhere"`},
		{"condition without handle", "version: light\nnodes:\n- {label: s, type: start}\n- {label: c, type: condition, expression: 'x > 1'}\n- {label: e, type: endpoint}\nconnections:\n- {from: s, to: c}\n- {from: c, to: e}\n", `a connection leaving a condition names its branch: "c[condtrue]" or "c[condfalse]"`},
		{"bad expression", "version: light\nnodes:\n- {label: s, type: start}\n- {label: c, type: condition, expression: 'x >'}\n", `node "c": nodes[1].expression: the expression ends too soon`},
		{"jinja block", "version: light\nnodes:\n- {label: s, type: start}\n- {label: t, type: template_job, template_content: '{% for x in y %}{{x}}{% endfor %}'}\n", `Jinja2 blocks`},
		{"filter", "version: light\nnodes:\n- {label: s, type: start}\n- {label: t, type: template_job, template_content: '{{ x | upper }}'}\n", `filters (|) are not supported`},
		{"unknown person", "version: light\nnodes:\n- {label: s, type: start}\n- {label: p, type: person_job, person: ghost, default_prompt: hi}\n", `no person "ghost" in the persons section`},
		{"code off", "version: light\nnodes:\n- {label: s, type: start}\n- {label: c, type: code_job, language: python, code: 'result = 1'}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: c}, {from: c, to: e}]\n", `code_job nodes run programs, and are disabled on this hub`},
		{"db outside sub_type", "version: light\nnodes:\n- {label: s, type: start}\n- {label: d, type: db, operation: read, sub_type: database, file: x}\n", `sub_type database is not supported`},
		{"not a list", "version: light\nnodes: 3\n", `a light diagram needs a list of nodes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps := env.pack.Check([]byte(tc.src))
			if !strings.Contains(ps.Errors().Error(), tc.want) {
				t.Errorf("problems %q\nwant one containing %q", ps.Errors().Error(), tc.want)
			}
		})
	}

	run := func(t *testing.T, src string, input map[string]any, host Host) *Run {
		t.Helper()
		return runDiagram(t, env, src, input, host)
	}
	person := "version: light\nnodes:\n- {label: s, type: start}\n- {label: p, type: person_job, default_prompt: hi}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: p}, {from: p, to: e}]\n"
	if r := run(t, person, nil, nil); r.Status != StatusFailed || !strings.Contains(r.Error, "MCP sampling request, but this run has no MCP host") {
		t.Errorf("person_job without a host: %s %q", r.Status, r.Error)
	}
	ask := "version: light\nnodes:\n- {label: s, type: start}\n- {label: u, type: user_response, prompt: 'name?', timeout: 5}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: u}, {from: u, to: e}]\n"
	if r := run(t, ask, nil, &fakeHost{}); r.Status != StatusFailed || !strings.Contains(r.Error, "the user did not answer (decline)") {
		t.Errorf("declined elicitation: %s %q", r.Status, r.Error)
	}
	escape := "version: light\nnodes:\n- {label: s, type: start}\n- {label: d, type: db, operation: read, sub_type: file, file: '{{path}}'}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: d}, {from: d, to: e}]\n"
	for _, p := range []string{"../../etc/passwd", "/etc/passwd", "a/../../x"} {
		if r := run(t, escape, map[string]any{"path": p}, nil); r.Status != StatusFailed || !strings.Contains(r.Error, "files root") {
			t.Errorf("db read of %s: %s %q", p, r.Status, r.Error)
		}
	}
	// A symbolic link inside the root that points out of it is refused too.
	root := filepath.Join(env.dir, "diagram-files")
	os.MkdirAll(root, 0o700)
	os.Symlink("/etc", filepath.Join(root, "out"))
	if r := run(t, escape, map[string]any{"path": "out/passwd"}, nil); r.Status != StatusFailed {
		t.Errorf("db read through a symlink out of the root: %s %v", r.Status, r.Output)
	}
	// The http node's network rules apply to api_job.
	api := "version: light\nnodes:\n- {label: s, type: start}\n- {label: a, type: api_job, url: 'http://127.0.0.1:9/x', method: GET}\n- {label: e, type: endpoint}\nconnections: [{from: s, to: a}, {from: a, to: e}]\n"
	if r := run(t, api, nil, nil); r.Status != StatusFailed || !strings.Contains(r.Error, "loopback address, which http nodes may not reach") {
		t.Errorf("api_job to loopback: %s %q", r.Status, r.Error)
	}
}

func TestLightExpressions(t *testing.T) {
	vars := map[string]any{
		"score": 72.0, "errors": []any{}, "name": "Ada", "items": []any{1.0, 2.0, 3.0},
		"row": map[string]any{"k": "v", "n": 2.0},
	}
	for expr, want := range map[string]any{
		"score >= 70 and len(errors) == 0": true,
		"score > 80 or name == 'Ada'":      true,
		"not score":                        false,
		"'d' in name":                      true,
		"'z' not in name":                  true,
		"items[-1] + row.n * 2":            7.0,
		"row['k']":                         "v",
		"items[:2]":                        []any{1.0, 2.0},
		"missing is_ok":                    nil,
		"missing and len(missing) > 0":     nil,
		"str(score) + '%'":                 "72%",
		"(1 + 2) * 3 % 4":                  1.0,
		"upper(name)":                      "ADA",
		"[1, 'a'][1]":                      "a",
		"row.get('k', 'd')":                "v",
		"len(row.get('missing', []))":      0.0,
	} {
		got, err := evalExpr(expr, vars, false)
		if expr == "missing is_ok" {
			if err == nil {
				t.Errorf("%s: no error", expr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, %v; want %#v", expr, got, err, want)
		}
	}
	for _, bad := range []string{"len(1)", "1 / 0", "'a' < 1", "nofunc(1)"} {
		if _, err := evalExpr(bad, vars, false); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := evalExpr(strings.Repeat("(", 100)+"1"+strings.Repeat(")", 100), nil, false); err == nil || !strings.Contains(err.Error(), "nests deeper") {
		t.Errorf("deep nesting: %v", err)
	}
}

// FuzzLightParse: any document is parsed, checked and (when valid)
// rendered without a panic.
func FuzzLightParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/dipeo/*.light.yaml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("version: light\nnodes:\n- {label: c, type: condition, expression: '((a['}\n"))
	f.Add([]byte("version: light\nnodes: [{label: 'x[y]', type: START}]\nconnections: [{from: 'x[y]_condtrue', to: 'x[y][condfalse]'}]\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		d, ps := Parse(src)
		if d == nil {
			return
		}
		ps = append(ps, Validate(d, nil)...)
		for _, n := range d.Nodes {
			if n.light == nil {
				continue
			}
			for _, v := range n.light.props {
				if s, ok := v.(string); ok {
					renderLight(s, map[string]any{"a": []any{1.0}, "b": map[string]any{}})
				}
			}
		}
		_ = ps.Error()
	})
}

// FuzzLightExpr: any expression or template is evaluated, or refused
// with an error, without a panic.
func FuzzLightExpr(f *testing.F) {
	for _, s := range []string{"score >= 70 and len(errors) == 0", "items[:2]", "a.b['c'][0] + 1", "not x or 'y' in z", "((((1))))", "'unterminated", "x[1:", "-'a'", "len(len)", "{{ a }} and {{ b.c }}"} {
		f.Add(s)
	}
	vars := map[string]any{"score": 1.0, "errors": []any{}, "items": []any{1.0, "a"}, "a": map[string]any{"b": map[string]any{"c": []any{2.0}}}, "z": "xyz"}
	f.Fuzz(func(t *testing.T, s string) {
		evalExpr(s, vars, false)
		evalExpr(s, vars, true)
		checkExpr(s)
		if checkLightTemplate(s) == nil {
			renderLight(s, vars)
		}
	})
}
