package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestProfileFromUpstreamPreset: a profile built from a preset of an
// upstream's tools serves (it used to stop serve with "tool selection is
// empty" while the upstream was still connecting, though config check
// passed the file), and lists exactly the preset's tools once the
// upstream is up. The upstream takes two seconds to start, so that the
// profile is built before it serves anything.
func TestProfileFromUpstreamPreset(t *testing.T) {
	t.Parallel()
	node, everything := everythingCmd(t)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf(`servers:
  ev:
    command: /bin/sh
    args: [-c, 'sleep 2; exec "$0" "$1" stdio', %q, %q]
presets:
  ro: [ev__echo, ev__get-sum]
profiles:
  reviewer:
    servers: [ev]
    presets: [ro]
`, node, everything))
	if _, stderr, code := runJunction(t, nil, "config", "check", cfg); code != 0 {
		t.Fatalf("config check: exit %d\n%s", code, stderr)
	}
	p := startServer(t, "-insecure-no-auth", "-config", cfg)
	cs := connectHTTP(t, "http://"+p.Addr+"/mcp/p/reviewer", "")
	want := []string{"ev__echo", "ev__get-sum"}
	waitFor(t, "the profile's tools", 60*time.Second, func() bool {
		return slices.Equal(toolNames(t, cs), want)
	})
}
