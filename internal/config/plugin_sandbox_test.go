package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPluginSandbox: a spawned plugin takes sandbox: as a server does, a
// level alone or a mapping, laid over the top-level one.
func TestPluginSandbox(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(`
sandbox: {level: on, network: [api.example.com], limits: {memory: 1GiB}}
plugins:
  plain:
    command: ./plugin
  strict:
    command: ./plugin
    sandbox: strict
  mapped:
    command: ./plugin
    sandbox:
      read_write: [/srv/data]
      network: ["*.cdn.example.com"]
      env: [PLUGIN_KEY]
      limits: {cpu: 10m}
`), "yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Plugins["plain"].Sandbox != nil {
		t.Errorf("plain: sandbox = %+v, want nil (the top level's applies)", c.Plugins["plain"].Sandbox)
	}
	if got := c.Plugins["strict"].Sandbox; got == nil || got.Level != SandboxStrict {
		t.Errorf("strict: sandbox = %+v, want level strict", got)
	}
	got := c.Plugins["mapped"].Sandbox.Over(c.Sandbox)
	want := &Sandbox{Level: SandboxOn, ReadWrite: []string{"/srv/data"}, Network: []string{"api.example.com", "*.cdn.example.com"},
		Env: []string{"PLUGIN_KEY"}, Memory: 1 << 30, CPU: 10 * time.Minute}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mapped over the top level (-want +got):\n%s", diff)
	}
	if got := c.Plugins["plain"].Sandbox.Over(c.Sandbox); got == nil || got.Level != SandboxOn {
		t.Errorf("plain over the top level = %+v, want level on", got)
	}
}

// TestPluginSandboxInvalid: a plugin's sandbox is checked as a server's,
// and refused on a plugin junction dials.
func TestPluginSandboxInvalid(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"plugins: {p: {command: ./p, sandbox: sometimes}}", "plugins.p.sandbox.level"},
		{"plugins: {p: {command: ./p, sandbox: {network: ['*']}}}", "plugins.p.sandbox.network"},
		{"plugins: {p: {command: ./p, sandbox: {read_only: [relative]}}}", "plugins.p.sandbox.read_only"},
		{"plugins: {p: {command: ./p, sandbox: {levels: on}}}", "levels"},
		{"plugins: {p: {url: 'http://127.0.0.1:9100', sandbox: on}}", "plugins.p.sandbox"},
	} {
		_, err := Parse(strings.NewReader(tt.in), "yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an error mentioning %q", tt.in, err, tt.want)
		}
	}
}
