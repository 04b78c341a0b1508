package daemon

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestDriftPolicyFromConfig pins junction_version with another
// description in a lock file: with drift: block the tool is withheld, and
// the drift shows in Status and in the metrics.
func TestDriftPolicyFromConfig(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	dir := t.TempDir()
	lock := filepath.Join(dir, "junction.lock.json")
	m := junction.NewManifest([]junction.ToolInfo{{
		Tool:   &mcp.Tool{Name: "junction_version", Description: "an older description", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Source: "core",
	}})
	if err := m.WriteFile(lock); err != nil {
		t.Fatal(err)
	}
	d, err := Build(t.Context(), Spec{Config: parseConfig(t, `
lock: `+lock+`
packs:
  core: {drift: block}
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if n := len(d.View.ToolNames()); n != 0 {
		t.Errorf("drift: block still serves %v", d.View.ToolNames())
	}
	st := d.Status()
	if len(st.Sources) != 1 || st.Sources[0].Drift == nil || len(st.Sources[0].Drift.Changed) != 1 {
		t.Fatalf("Status() = %+v, want core with a changed tool", st)
	}
	rec := httptest.NewRecorder()
	d.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `junction_source_drift{source="core"} 1`) {
		t.Errorf("/metrics lacks the drift gauge:\n%.1500s", rec.Body.String())
	}
}
