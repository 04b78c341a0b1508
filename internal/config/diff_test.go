package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustParse(t *testing.T, in string) *Config {
	t.Helper()
	c, err := Parse(strings.NewReader(in), "yaml", nil)
	if err != nil {
		t.Fatalf("Parse(%q): %v", in, err)
	}
	return c
}

func TestDiff(t *testing.T) {
	t.Parallel()
	old := mustParse(t, `
servers:
  same: {command: a, args: [x]}
  retuned: {command: b, timeout: 10s}
  restarted: {command: c, env: {K: v1}}
  removed: {url: "https://h/mcp"}
  goes-off: {command: e}
  comes-on: {command: f, disabled: true}
  moved-line: {command: g}
plugins:
  p: {command: p}
packs: [core]
presets:
  ro: [a]
http:
  listen: 127.0.0.1:1
`)
	// Comments and blank lines move every entry to a new line; that alone
	// must not count as a change.
	new := mustParse(t, `
# a comment that shifts lines

servers:
  moved-line: {command: g}
  same:
    command: a
    args: [x]
  retuned: {command: b, timeout: 20s, tools: {deny: [t]}}
  restarted: {command: c, env: {K: v2}}
  added: {command: d}
  goes-off: {command: e, disabled: true}
  comes-on: {command: f}
plugins:
  p: {command: p, args: [-v]}
packs:
  core: {}
  diode: {}
presets:
  ro: [a]
http:
  listen: 127.0.0.1:2
`)
	got := Diff(old, new)
	want := Delta{
		Servers: SourceDelta{
			Added:     []string{"added", "comes-on"},
			Removed:   []string{"goes-off", "removed"},
			Changed:   []string{"restarted"},
			Updated:   []string{"retuned"},
			Unchanged: []string{"moved-line", "same"},
		},
		Plugins:  SourceDelta{Changed: []string{"p"}},
		Packs:    SourceDelta{Added: []string{"diode"}, Unchanged: []string{"core"}},
		Sections: []string{"http"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Diff mismatch (-want +got):\n%s", diff)
	}
	if got.Empty() {
		t.Error("Empty() = true for a delta with changes")
	}
}

func TestDiffEmptyEqualsAbsent(t *testing.T) {
	t.Parallel()
	a := mustParse(t, "servers:\n  s: {command: x, args: [], env: {}}\n")
	b := mustParse(t, "servers:\n  s: {command: x}\n")
	d := Diff(a, b)
	if !d.Empty() || !cmp.Equal(d.Servers.Unchanged, []string{"s"}) {
		t.Errorf("Diff(empty lists, absent) = %+v, want s unchanged", d)
	}
}

func TestDiffNil(t *testing.T) {
	t.Parallel()
	c := mustParse(t, "servers:\n  s: {command: x}\npacks: [core]\n")
	d := Diff(nil, c)
	want := Delta{Servers: SourceDelta{Added: []string{"s"}}, Packs: SourceDelta{Added: []string{"core"}},
		Sections: []string{"http", "log"}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("Diff(nil, c) mismatch (-want +got):\n%s", diff)
	}
	if d := Diff(c, c); !d.Empty() {
		t.Errorf("Diff(c, c) = %+v, want empty", d)
	}
	// packs: appearing with no names switches the default packs off.
	d = Diff(mustParse(t, "log: {}"), mustParse(t, "packs: []"))
	if !cmp.Equal(d.Sections, []string{"packs"}) {
		t.Errorf("Diff(no packs key, packs: []) sections = %v, want [packs]", d.Sections)
	}
}
