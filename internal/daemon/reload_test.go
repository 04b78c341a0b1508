package daemon

import (
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"go.uber.org/goleak"
)

func parseConfig(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(yaml), "yaml", func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// TestReloadProfilesAndPresets reloads a config: an unchanged profile keeps
// its view (and so its host sessions), a changed one gets a new view, a
// removed one is gone, and presets follow the file.
func TestReloadProfilesAndPresets(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	d, err := Build(t.Context(), Spec{Config: parseConfig(t, `
presets:
  versions: [junction_version]
profiles:
  same: {tools: [junction_version]}
  changes: {tools: [junction_version]}
  goes: {tools: [junction_version]}
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	same, changes := d.Profile("same"), d.Profile("changes")
	if same == nil || changes == nil || d.Profile("goes") == nil {
		t.Fatal("profiles missing after Build")
	}
	if err := d.Hub.CheckSelection(junction.Selection{Presets: []string{"versions"}}); err != nil {
		t.Errorf("config preset: %v", err)
	}

	err = d.Reload(t.Context(), parseConfig(t, `
packs:
  core: {}
profiles:
  same: {tools: [junction_version]}
  changes: {presets: [], deny: [], tools: [junction_version], servers: [core]}
  new: {servers: [core]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if d.Profile("same") != same {
		t.Error("an unchanged profile got a new view on reload")
	}
	if d.Profile("changes") == changes || d.Profile("changes") == nil {
		t.Error("a changed profile kept its old view")
	}
	if d.Profile("goes") != nil || d.Profile("new") == nil {
		t.Error("removed or added profile not applied")
	}
	if err := d.Hub.CheckSelection(junction.Selection{Presets: []string{"versions"}}); err == nil {
		t.Error("a preset removed from the file is still known after reload")
	}
}
