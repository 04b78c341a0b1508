package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/junction-mcp/junction"
	"go.uber.org/goleak"
)

var metaTools = []string{"search_tools", "describe_tools", "call_tool"}

// TestDiscoveryFromConfig builds a hub whose default view and one
// profile are in search mode, then reloads: the default view goes back
// to list mode and the profile, kept with its sessions, changes its pins.
func TestDiscoveryFromConfig(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	d, err := Build(t.Context(), Spec{Config: parseConfig(t, `
packs: [core, diode]
discovery:
  mode: search
  pinned: [junction_version]
profiles:
  ops:
    servers: [diode]
    discovery: {mode: search}
  plain:
    servers: [core]
`)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if diff := cmp.Diff(append(slices.Clone(metaTools), "junction_version"), d.View.ListedToolNames()); diff != "" {
		t.Errorf("default view lists (-want +got):\n%s", diff)
	}
	ops := d.Profile("ops")
	if diff := cmp.Diff(metaTools, ops.ListedToolNames()); diff != "" {
		t.Errorf("profile ops lists (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"junction_version"}, d.Profile("plain").ListedToolNames()); diff != "" {
		t.Errorf("profile plain lists (-want +got):\n%s", diff)
	}
	r, err := ops.SearchTools(t.Context(), "version of the binary", junctionSearch())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Tools {
		if h.Server != "diode" {
			t.Errorf("profile ops (servers: [diode]) found %+v", h)
		}
	}

	err = d.Reload(t.Context(), parseConfig(t, `
packs: [core, diode]
profiles:
  ops:
    servers: [diode]
    discovery: {mode: search, pinned: ["diode_get_*"]}
  plain:
    servers: [core]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.View.ListedToolNames(); slices.Contains(got, "search_tools") || !slices.Contains(got, "diode_deploy") {
		t.Errorf("default view after reload to list mode lists %v", got)
	}
	if d.Profile("ops") != ops {
		t.Error("a profile whose discovery alone changed got a new view (its sessions would be closed)")
	}
	got := ops.ListedToolNames()
	if !slices.Equal(got[:3], metaTools) || !slices.Contains(got, "diode_get_version") || slices.Contains(got, "diode_deploy") {
		t.Errorf("profile ops lists %v after reload", got)
	}
}

func TestDiscoveryNameClash(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	_, err := Build(t.Context(), Spec{Config: parseConfig(t, `
packs: [core]
discovery:
  mode: search
  names: {call: junction_version}
`)})
	want := `discovery: names.call: meta-tool "junction_version" clashes with the tool "junction_version" of source "core"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Build = %v, want %q", err, want)
	}
}

func junctionSearch() junction.SearchOptions { return junction.SearchOptions{Limit: 50} }
