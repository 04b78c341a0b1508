package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDiscoveryParses(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(`
packs: [core]
discovery:
  mode: search
  pinned: [junction_version, "github__*"]
  names: {search: find_tools, describe: show_tools, call: run_tool}
profiles:
  ops:
    servers: [core]
    discovery: {mode: Search}
  plain:
    servers: [core]
`), "yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Discovery{Mode: DiscoverySearch, Pinned: []string{"junction_version", "github__*"},
		Names: DiscoveryNames{Search: "find_tools", Describe: "show_tools", Call: "run_tool"}}
	if diff := cmp.Diff(want, c.Discovery); diff != "" {
		t.Errorf("discovery (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Discovery{Mode: DiscoverySearch}, c.Profiles["ops"].Discovery); diff != "" {
		t.Errorf("profiles.ops.discovery (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Discovery{}, c.Profiles["plain"].Discovery); diff != "" {
		t.Errorf("a profile without discovery (-want +got):\n%s", diff)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
}

func TestDiscoveryErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"discovery: {mode: lazy}\n", `line 1: discovery.mode: unknown discovery mode "lazy" (use list or search)`},
		{"discovery: {mod: search}\n", `line 1: discovery.mod: unknown key (did you mean "mode"?)`},
		{"discovery:\n  mode: search\n  pinned: [\"a[\"]\n", `line 3: discovery.pinned[0]: invalid pattern "a[": syntax error in pattern`},
		{"discovery:\n  mode: search\n  pinned: [\"\"]\n", `line 3: discovery.pinned[0]: must not be empty`},
		{"discovery:\n  mode: search\n  names: {search: call_tool}\n", `discovery.names.call: "call_tool" is also the name of the search meta-tool; each needs its own`},
		{"discovery:\n  mode: search\n  names: {describe: \"two words\"}\n", `discovery.names.describe: "two words" is not a valid tool name`},
		{"discovery:\n  names: {find: x}\n", `line 2: discovery.names.find: unknown key`},
		{"profiles:\n  p:\n    discovery: {mode: maybe}\n", `line 3: profiles.p.discovery.mode: unknown discovery mode "maybe"`},
		{"discovery:\n  semantic: {model: m}\n", `discovery.semantic.url: is required`},
		{"discovery:\n  semantic: {url: \"ftp://h/v1\", model: m}\n", `discovery.semantic.url: "ftp://h/v1" is not an http or https URL`},
		{"discovery:\n  semantic: {url: \"http://10.0.0.5/v1\", model: m, api_key: k}\n", `the API key would travel in clear (use https)`},
		{"discovery:\n  semantic: {url: \"http://127.0.0.1:8080/v1\"}\n", `discovery.semantic.model: is required`},
		{"discovery:\n  semantic: {url: \"http://127.0.0.1:8080/v1\", model: m, weight: -1}\n", `discovery.semantic.weight: must be between 0 and 10`},
		{"discovery:\n  semantic: {url: \"http://127.0.0.1:8080/v1\", model: m, dimension: 3}\n", `discovery.semantic.dimension: unknown key (did you mean "dimensions"?)`},
		{"profiles:\n  p:\n    discovery:\n      semantic: {url: \"http://127.0.0.1/v1\", model: m}\n", `profiles.p.discovery.semantic: the search index is the hub's`},
	} {
		_, err := Parse(strings.NewReader(tc.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestDiscoveryWarnsOutsideSearchMode(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader("discovery:\n  pinned: [a]\n"), "yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 1 || c.Warnings[0].String() != "line 1: discovery: pinned and names apply only with mode: search" {
		t.Errorf("warnings = %v", c.Warnings)
	}
}

func TestDiscoveryDiff(t *testing.T) {
	t.Parallel()
	a := &Config{}
	b := &Config{Discovery: Discovery{Mode: DiscoverySearch}}
	if d := Diff(a, b); !cmp.Equal(d.Sections, []string{"discovery"}) {
		t.Errorf("Diff sections = %v, want [discovery]", d.Sections)
	}
}

// TestDiscoveryDocExamples: every YAML example of docs/discovery.md
// parses and validates.
func TestDiscoveryDocExamples(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/discovery.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) < 2 {
		t.Fatalf("found %d YAML examples in docs/discovery.md, want 2 or more", len(blocks))
	}
	for i, m := range blocks {
		if _, err := Parse(strings.NewReader(m[1]), "yaml", func(string) string { return "set" }); err != nil {
			t.Errorf("docs/discovery.md YAML example %d: %v\n%s", i+1, err, m[1])
		}
	}
}

func TestSemanticParses(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(`
discovery:
  mode: search
  semantic:
    url: https://embed.example/v1
    model: text-embedding-3-small
    api_key: ${EMBED_KEY}
    dimensions: 512
    timeout: 2s
    weight: 0.5
`), "yaml", func(k string) string { return map[string]string{"EMBED_KEY": "sk-1"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := &Semantic{URL: "https://embed.example/v1", Model: "text-embedding-3-small", APIKey: "sk-1", Dimensions: 512, Timeout: 2 * time.Second, Weight: 0.5}
	if diff := cmp.Diff(want, c.Discovery.Semantic); diff != "" {
		t.Errorf("discovery.semantic (-want +got):\n%s", diff)
	}
}

func TestCodeModeParses(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(`
code_mode:
  enabled: true
  name: run_js
  limits: {wall: 5s, cpu: 2s, memory: 32MiB, calls: 10, concurrent: 2, output: 64KiB}
profiles:
  a: {code_mode: on}
  b: {code_mode: {enabled: true, name: script}}
  c: {code_mode: false}
`), "yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := CodeMode{Enabled: true, Name: "run_js", Limits: CodeLimits{Wall: 5 * time.Second, CPU: 2 * time.Second, Memory: 32 << 20, Calls: 10, Concurrent: 2, Output: 64 << 10}}
	if diff := cmp.Diff(want, c.CodeMode); diff != "" {
		t.Errorf("code_mode (-want +got):\n%s", diff)
	}
	for name, want := range map[string]CodeMode{"a": {Enabled: true}, "b": {Enabled: true, Name: "script"}, "c": {}} {
		if diff := cmp.Diff(want, c.Profiles[name].CodeMode); diff != "" {
			t.Errorf("profiles.%s.code_mode (-want +got):\n%s", name, diff)
		}
	}
}

func TestCodeModeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"code_mode: maybe\n", `code_mode: want on or off, got "maybe"`},
		{"code_mode: {enabled: true, name: \"two words\"}\n", `code_mode.name: "two words"`},
		{"code_mode: {limits: {memory: 1KiB}}\n", `code_mode.limits.memory: must be between 4MiB and 4GiB`},
		{"code_mode: {limits: {concurrent: 100}}\n", `code_mode.limits.concurrent: must be between 1 and 64`},
		{"code_mode: {limits: {wal: 1s}}\n", `code_mode.limits.wal: unknown key (did you mean "wall"?)`},
		{"profiles:\n  p:\n    code_mode: {limits: {wall: 1s}}\n", `profiles.p.code_mode.limits: script limits are the hub's`},
		{"profiles:\n  p:\n    code_mode: {nam: x}\n", `profiles.p.code_mode.nam: unknown key (did you mean "name"?)`},
	} {
		_, err := Parse(strings.NewReader(tc.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}
