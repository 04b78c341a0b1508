package diagram

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestApplySettings(t *testing.T) {
	var o Options
	err := ApplySettings(&o, "packs.diagram.settings", map[string]any{
		"allow_commands":        "true", // as ${VAR} expands
		"http_allow_hosts":      []any{"metadata.internal", "*.svc.cluster.local:8080", "127.0.0.1:9000"},
		"http_allow_cidrs":      []any{"10.0.0.0/8", "fd00::/8", "192.168.1.7"},
		"max_concurrent_runs":   int64(2),
		"default_run_timeout":   "90s",
		"max_run_timeout":       "2h",
		"max_nodes":             float64(50), // JSON config files give numbers as floats
		"max_fan_out":           int64(8),
		"max_steps":             "500",
		"max_node_output_bytes": int64(65536),
		"max_run_bytes":         int64(1 << 20),
		"max_stored_runs":       int64(100),
		"max_run_age":           "168h",
		"max_store_bytes":       int64(64 << 20),
		"files_root":            "/srv/files",
		"diagrams_root":         "/srv/dipeo",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		AllowCommands:     true,
		HTTPAllowHosts:    []string{"metadata.internal", "*.svc.cluster.local:8080", "127.0.0.1:9000"},
		HTTPAllowCIDRs:    []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("192.168.1.7/32")},
		MaxConcurrentRuns: 2,
		DefaultTimeout:    90 * time.Second,
		MaxTimeout:        2 * time.Hour,
		MaxNodes:          50,
		MaxFanOut:         8,
		MaxSteps:          500,
		MaxOutputBytes:    65536,
		MaxRunBytes:       1 << 20,
		MaxStoredRuns:     100,
		MaxRunAge:         168 * time.Hour,
		MaxStoreBytes:     64 << 20,
		FilesRoot:         "/srv/files",
		DiagramsRoot:      "/srv/dipeo",
	}
	if diff := cmp.Diff(want, o, cmpopts.IgnoreUnexported(Options{}), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("ApplySettings (-want +got):\n%s", diff)
	}
	if len(SettingNames()) != 16 {
		t.Errorf("SettingNames() = %v: a setting was added here without a test", SettingNames())
	}
}

func TestApplySettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]any
		want     string
	}{
		{map[string]any{"max_runs": 3}, "p.max_runs: unknown setting (known: allow_commands, http_allow_hosts, http_allow_cidrs, max_concurrent_runs, "},
		{map[string]any{"max_nodes": "lots"}, `p.max_nodes: must be a whole number above zero, not "lots"`},
		{map[string]any{"max_nodes": int64(0)}, "p.max_nodes: must be a whole number above zero, not 0 (int64)"},
		{map[string]any{"max_run_bytes": 1.5}, "p.max_run_bytes: must be a whole number above zero, not 1.5 (float64)"},
		{map[string]any{"max_run_age": "30d"}, `p.max_run_age: must be a duration above zero such as 90s, 5m or 720h, not "30d"`},
		{map[string]any{"default_run_timeout": int64(30)}, "p.default_run_timeout: must be a duration above zero such as 90s, 5m or 720h, not 30 (int64)"},
		{map[string]any{"allow_commands": "sometimes"}, `p.allow_commands: must be true or false, not "sometimes"`},
		{map[string]any{"http_allow_hosts": "example.com"}, `p.http_allow_hosts: must be a list of strings, not "example.com"`},
		{map[string]any{"http_allow_hosts": []any{"ok.example", int64(3)}}, "p.http_allow_hosts[1]: must be a string, not 3 (int64)"},
		{map[string]any{"http_allow_hosts": []any{"10.0.0.0/8"}}, `p.http_allow_hosts[0]: "10.0.0.0/8" is not a host (a network such as 10.0.0.0/8 goes in http_allow_cidrs)`},
		{map[string]any{"http_allow_cidrs": []any{"10.0.0.1/8"}}, `p.http_allow_cidrs[0]: "10.0.0.1/8" has bits set past its /8: write 10.0.0.0/8`},
		{map[string]any{"http_allow_cidrs": []any{"intranet"}}, `p.http_allow_cidrs[0]: "intranet" is not a network such as 10.0.0.0/8 or fd00::/8, or an IP address`},
		{map[string]any{"files_root": int64(3)}, "p.files_root: must be a folder, not 3 (int64)"},
		{map[string]any{"diagrams_root": ""}, `p.diagrams_root: must be a folder, not ""`},
		{map[string]any{"max_stored_runs": nil}, "p.max_stored_runs: must be a whole number above zero, not nothing"},
	} {
		var o Options
		err := ApplySettings(&o, "p", tc.settings)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ApplySettings(%v) error =\n  %v\nwant it to start with\n  %s", tc.settings, err, tc.want)
		}
	}
}
