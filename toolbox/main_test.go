//go:build unix

package toolbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/junction-mcp/junction/internal/sandbox"
)

// goPluginPath is the example Go plugin, built once by TestMain.
var goPluginPath string

func TestMain(m *testing.M) {
	reaper.RunIfReaper() // the reapers of reaper_test.go run this binary
	sandbox.Enable()     // the sandboxes of sandbox_test.go run this binary as their init
	dir, err := os.MkdirTemp("", "toolbox-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goPluginPath = filepath.Join(dir, "toolbox-go")
	build := exec.Command("go", "build", "-o", goPluginPath, "github.com/junction-mcp/junction/examples/toolbox-go")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the example plugin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
