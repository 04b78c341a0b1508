package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/sandbox"
)

// fakeSandbox makes "sandbox check" see s for the rest of the test.
func fakeSandbox(t *testing.T, s sandbox.Support) {
	old := sandboxCheck
	sandboxCheck = func() sandbox.Support { return s }
	t.Cleanup(func() { sandboxCheck = old })
}

// full is a system with every layer.
var full = sandbox.Support{OS: "linux", UserNS: true, ProcMount: true, Loopback: true, PIDMax: true, LandlockABI: 6, Seccomp: true}

// TestSandboxCheck: one line per layer, then whether strict can run;
// exit 0 with every layer, else 1 and the missing layers named on the
// last line; -o json is the Support with strict and missing.
func TestSandboxCheck(t *testing.T) {
	fakeSandbox(t, full)
	out, errOut, code := run(t, nil, "sandbox", "check")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || errOut != "" || len(lines) < 7 || !strings.Contains(out, "Landlock: ABI 6") ||
		lines[len(lines)-1] != "every layer is here: level strict can run" {
		t.Errorf("sandbox check with every layer: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}

	lacking := full
	lacking.LandlockABI, lacking.Seccomp = 3, false
	fakeSandbox(t, lacking)
	out, errOut, code = run(t, nil, "sandbox", "check")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if code != 1 || errOut != "" || !strings.Contains(out, "seccomp filters: NO") ||
		!strings.HasPrefix(last, "strict cannot run here: missing Landlock ABI 3 lacks signal scoping (ABI 6), seccomp is unavailable: dangerous system calls are not blocked;") ||
		!strings.Contains(last, "at level on a server starts with a warning for each, at level strict it refuses to start") {
		t.Errorf("sandbox check without seccomp: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}

	for _, flags := range [][]string{{"-o", "json"}, {"-json"}} {
		out, _, code := run(t, nil, append([]string{"sandbox", "check"}, flags...)...)
		var got struct {
			OS          string
			LandlockABI int
			Seccomp     bool
			Strict      bool
			Missing     []string
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != 1 || got.OS != "linux" || got.LandlockABI != 3 ||
			got.Seccomp || got.Strict || len(got.Missing) != 2 {
			t.Errorf("sandbox check %v: exit %d, %v, %+v\n%s", flags, code, err, got, out)
		}
	}

	fakeSandbox(t, sandbox.Support{OS: "darwin"})
	out, _, code = run(t, nil, "sandbox", "check")
	if code != 1 || !strings.Contains(out, "no sandbox on darwin: servers at level on or strict refuse to start") {
		t.Errorf("sandbox check on darwin: exit %d, stdout\n%s", code, out)
	}

	if _, errOut, code := run(t, nil, "sandbox", "check", "extra"); code != 2 || !strings.Contains(errOut, "takes no arguments") {
		t.Errorf("sandbox check extra: exit %d, stderr %q", code, errOut)
	}
	out, _, code = run(t, nil, "sandbox", "check", "-help")
	for _, want := range []string{"off ", "on ", "strict ", "docs/sandbox.md", "-o format"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("sandbox check -help: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
}
