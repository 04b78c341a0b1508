package config

import (
	"slices"
	"strings"
	"testing"
)

func TestQuarantineKey(t *testing.T) {
	t.Parallel()
	c := mustParse(t, `
servers:
  vetted: {command: a}
  fresh: {command: b, quarantine: true}
  off: {command: c, quarantine: true, disabled: true}
  explicit: {command: d, quarantine: false}
`)
	for name, want := range map[string]bool{"vetted": false, "fresh": true, "off": true, "explicit": false} {
		if got := c.Servers[name].Quarantine; got != want {
			t.Errorf("%s: Quarantine %v, want %v", name, got, want)
		}
	}
	if got := c.Quarantined(); !slices.Equal(got, []string{"fresh"}) {
		t.Errorf("Quarantined() = %v, want [fresh] (a disabled server is not listed)", got)
	}
	if c.Servers["fresh"].Serves() || !c.Servers["vetted"].Serves() || c.Servers["off"].Serves() {
		t.Errorf("Serves: fresh %v, vetted %v, off %v", c.Servers["fresh"].Serves(), c.Servers["vetted"].Serves(), c.Servers["off"].Serves())
	}
	// JSON, as junction add writes it.
	j, err := Parse(strings.NewReader(`{"servers": {"x": {"quarantine": true, "command": "npx", "args": ["-y", "p@1"]}}}`), "json", nil)
	if err != nil || !j.Servers["x"].Quarantine {
		t.Fatalf("JSON: %v, %+v", err, j)
	}
}

func TestQuarantineValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"servers:\n  x: {command: a, quarantine: \"yes\"}\n", `servers.x.quarantine: expected true or false, got the string "yes"`},
		{"servers:\n  x: {command: a, quarantine: 1}\n", "servers.x.quarantine: expected true or false, got the number 1"},
		{"plugins:\n  p: {command: a, quarantine: true}\n", "plugins.p.quarantine"},
	} {
		_, err := Parse(strings.NewReader(tc.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestDiffQuarantine: a server in quarantine counts as absent, so that
// approving it (the key removed) starts it on reload and putting it back
// stops it.
func TestDiffQuarantine(t *testing.T) {
	t.Parallel()
	held := mustParse(t, "servers:\n  s: {quarantine: true, command: a}\n  o: {command: b}\n")
	approved := mustParse(t, "servers:\n  s: {command: a}\n  o: {command: b}\n")
	d := Diff(held, approved)
	if !slices.Equal(d.Servers.Added, []string{"s"}) || len(d.Servers.Changed)+len(d.Servers.Updated)+len(d.Servers.Removed) != 0 {
		t.Errorf("approve: %+v, want s added", d.Servers)
	}
	d = Diff(approved, held)
	if !slices.Equal(d.Servers.Removed, []string{"s"}) || len(d.Servers.Added)+len(d.Servers.Changed) != 0 {
		t.Errorf("quarantine again: %+v, want s removed", d.Servers)
	}
	d = Diff(held, held)
	if !d.Empty() || len(d.Servers.Unchanged) != 1 {
		t.Errorf("no change: %+v", d.Servers)
	}
	// A server in quarantine that changes stays out: nothing to do.
	d = Diff(held, mustParse(t, "servers:\n  s: {quarantine: true, command: z}\n  o: {command: b}\n"))
	if !d.Empty() {
		t.Errorf("a change in quarantine: %+v, want none", d.Servers)
	}
}
