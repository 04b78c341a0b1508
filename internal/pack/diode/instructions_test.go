package diode

import (
	"strings"
	"testing"
)

// TestInstructionsStandAlone: the instructions a host gets name what
// diode_deploy needs (package_path, DIODE_MCP_DEPLOY_TARGET), and point at
// nothing the host cannot read (a repository file, say).
func TestInstructionsStandAlone(t *testing.T) {
	for _, want := range []string{"package_path", "DIODE_MCP_DEPLOY_TARGET", "DIODE_MCP_DEPLOY_UUID", "diode_file_pull"} {
		if !strings.Contains(Instructions, want) {
			t.Errorf("the instructions do not mention %s", want)
		}
	}
	for _, bad := range []string{"docs/", ".md"} {
		if strings.Contains(Instructions, bad) {
			t.Errorf("the instructions point at %q, which a host cannot read", bad)
		}
	}
}
