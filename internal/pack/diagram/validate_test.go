package diagram

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction/internal/pack/diagram/diagramtest"
)

func problemKeys(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.NodeID+"|"+p.Field)
	}
	return out
}

func TestParseReportsEveryStructuralProblem(t *testing.T) {
	src := `
version: one
colour: blue
nodes:
  - {id: a, type: tool, tool: [x], timeout: 5}
  - just a string
  - {id: b, type: template, template: {x: 1}}
edges:
  - {from: a, to: b, weight: 3}
  - [a, b]
`
	d, ps := Parse([]byte(src))
	if d == nil {
		t.Fatal("Parse returned no diagram for a YAML mapping")
	}
	want := []string{
		"|version",
		"|colour",
		"a|nodes[0].tool",
		"|nodes[1]",
		"b|nodes[2].template",
		"|edges[0].weight",
		"|edges[1]",
	}
	if diff := cmp.Diff(want, problemKeys(ps)); diff != "" {
		t.Errorf("Parse problems (-want +got):\n%s\nall: %v", diff, ps)
	}
}

func TestParseRejectsNonDiagrams(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"", "diagram is empty"},
		{"[1, 2]", "must be a mapping"},
		{"a: [", "not valid YAML"},
		{"a: 1\n---\nb: 2\n", "single YAML document"},
		{strings.Repeat("#", maxDiagramBytes+1), "the limit is"},
	} {
		d, ps := Parse([]byte(tc.src))
		if d != nil || len(ps) != 1 || !strings.Contains(ps[0].Message, tc.want) {
			t.Errorf("Parse(%.20q) = %v, %v; want one problem containing %q", tc.src, d, ps, tc.want)
		}
	}
}

func TestValidateGraphRules(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // node|field of each problem, in order
	}{
		{
			name: "loop through a condition is fine",
			src: `
nodes:
  - {id: s, type: start}
  - {id: a, type: template, template: "{{ .a }}"}
  - {id: c, type: condition, if: "false"}
  - {id: e, type: endpoint}
edges: [{from: s, to: a}, {from: a, to: c}, {from: c, to: a, label: "true"}, {from: c, to: e, label: "false"}]
`,
		},
		{
			name: "self loop without condition",
			src: `
nodes:
  - {id: s, type: start}
  - {id: a, type: template, template: x}
  - {id: e, type: endpoint}
edges: [{from: s, to: a}, {from: a, to: a}, {from: a, to: e}]
`,
			want: []string{"a|edges"},
		},
		{
			name: "unreachable node and bad labels",
			src: `
nodes:
  - {id: s, type: start}
  - {id: c, type: condition, if: "true"}
  - {id: lost, type: template, template: x}
  - {id: e, type: endpoint}
edges: [{from: s, to: c}, {from: c, to: e, label: "yes"}]
`,
			want: []string{"c|edges[1].label", "lost|nodes[2]"},
		},
		{
			name: "ids, duplicates and start/endpoint edges",
			src: `
nodes:
  - {id: s, type: start}
  - {id: s2, type: start}
  - {id: bad-id, type: endpoint}
  - {id: input, type: template, template: x}
  - {id: e, type: endpoint}
  - {id: e, type: endpoint}
edges: [{from: s, to: e}, {from: e, to: s}]
`,
			want: []string{"bad-id|nodes[2].id", "input|nodes[3].id", "e|nodes[5].id", "s2|nodes[1].type", "e|edges[1].from", "s|edges[1].to", "s2|nodes[1]", "s|edges"},
		},
		{
			name: "field checks",
			src: `
nodes:
  - {id: s, type: start}
  - {id: h, type: http, url: "ftp://x", method: FETCH, body: b, json: {a: 1}, timeout: soon}
  - {id: t, type: template, template: "{{ .s ", format: xml}
  - {id: c, type: condition}
  - {id: e, type: endpoint}
edges: [{from: s, to: h}, {from: h, to: t}, {from: t, to: c}, {from: c, to: e, label: "true"}]
`,
			want: []string{"h|nodes[1].timeout", "h|nodes[1].url", "h|nodes[1].method", "h|nodes[1].json", "t|nodes[2].format", "c|nodes[3].if", "t|nodes[2].template"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, ps := Parse([]byte(tc.src))
			if len(ps) > 0 {
				t.Fatalf("Parse: %v", ps)
			}
			got := problemKeys(Validate(d, nil))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s\nall: %v", diff, Validate(d, nil))
			}
		})
	}
}

func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "diagrams", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, ps := Parse(src)
		if d == nil {
			t.Fatalf("%s: %v", f, ps)
		}
		if ps = append(ps, Validate(d, nil)...); len(ps) > 0 {
			t.Errorf("%s: %v", f, ps)
		}
	}
}

// FuzzParseValidate feeds arbitrary documents to the parser and the
// validator: they must report problems, never panic, and a diagram that
// validates must also run without panicking.
func FuzzParseValidate(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "..", "examples", "diagrams", "*.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(shoutDiagram))
	f.Add([]byte(slowDiagram))
	f.Add([]byte("nodes: [{id: s, type: start}, {id: e, type: endpoint, output: '{{ .s }}'}]\nedges: [{from: s, to: e}]"))
	f.Add([]byte("nodes: [{id: s, type: start}, {id: c, type: condition, if: '{{ .input.x }}'}, {id: e, type: endpoint}]\nedges: [{from: s, to: c}, {from: c, to: c, label: 'true'}, {from: c, to: e, label: 'false'}]"))
	f.Add([]byte(diagramtest.FanOut(20)))
	f.Add([]byte(fetchDiagram))
	f.Add([]byte("nodes: [{id: s, type: start}, {id: h, type: http, url: 'http://169.254.169.254/{{ .input.x }}', method: post, json: {a: '{{ .s }}'}}, {id: e, type: endpoint}]\nedges: [{from: s, to: h}, {from: h, to: e}]"))
	f.Fuzz(func(t *testing.T, src []byte) {
		d, ps := Parse(src)
		if d == nil {
			if len(ps) == 0 {
				t.Fatal("Parse returned neither a diagram nor a problem")
			}
			return
		}
		vps := Validate(d, &ValidateOptions{HasTool: func(string) bool { return false }, MaxNodes: 100, MaxFanOut: 16})
		for _, p := range append(ps, vps...) {
			if p.Message == "" || (p.Severity != "error" && p.Severity != "warning") {
				t.Fatalf("malformed problem %+v", p)
			}
		}
		if len(ps.Errors())+len(vps.Errors()) > 0 {
			return
		}
		// Valid and calls no tool (HasTool refused them all): run it.
		// http nodes must not reach the network from a fuzzer.
		e := &engine{maxSteps: 50, maxOutputBytes: 1 << 16, maxRunBytes: 1 << 18, httpClient: &http.Client{Transport: refuseTransport{}}}
		out := e.run(t.Context(), d, map[string]any{"x": "true"}, nil)
		if out.err == nil && out.output == nil && len(out.executed) == 0 {
			t.Fatal("a completed run executed nothing")
		}
	})
}

// FuzzHostRule feeds arbitrary http_allow_hosts entries and hosts to the
// allowlist: no panic, and an entry that parses matches the host it names.
func FuzzHostRule(f *testing.F) {
	for _, s := range []string{"example.com", "*.svc.local:8080", "[::1]:80", "127.0.0.1", "fe80::1%eth0", "10.0.0.0/8", ":80", "*.", "[", "a:b:c"} {
		f.Add(s, "example.com", "80")
	}
	f.Fuzz(func(t *testing.T, rule, host, port string) {
		r, err := parseHostRule(rule)
		if err != nil {
			return
		}
		r.matches(host, port)
		if !strings.HasPrefix(r.host, "*.") && !r.matches(r.host, portOr(r.port, "443")) {
			t.Errorf("rule %q (host %q, port %q) does not match its own host", rule, r.host, r.port)
		}
	})
}

func portOr(p, def string) string {
	if p == "" {
		return def
	}
	return p
}

func TestTemplateRangeLimits(t *testing.T) {
	for _, tc := range []struct {
		tpl string
		ok  bool
	}{
		{"{{ range .input.items }}{{ . }}{{ end }}", true},
		{"{{ range $i, $v := .input.items }}{{ $v }}{{ end }}", true},
		{"{{ range $.input.items }}x{{ end }}", true},
		{"{{ range 1000000000000 }}{{ end }}", false},
		{"{{ $n := 5 }}{{ range $n }}{{ end }}", false},
		{"{{ range len .input.items }}{{ end }}", false},
		{`{{ define "x" }}y{{ end }}{{ template "x" }}`, false},
	} {
		_, err := templateRefs(tc.tpl)
		if (err == nil) != tc.ok {
			t.Errorf("templateRefs(%q) error = %v, want ok=%v", tc.tpl, err, tc.ok)
		}
	}
	if _, err := render("t", `{{ range .input.items }}{{ printf "%0999999d" 1 }}{{ end }}`, map[string]any{"input": map[string]any{"items": make([]any, 100)}}); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Errorf("huge render error = %v, want the output limit", err)
	}
}

type refuseTransport struct{}

func (refuseTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in the fuzzer")
}
