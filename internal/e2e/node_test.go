package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeRun is the outcome of one Node program run.
type nodeRun struct {
	Stdout, Stderr string
	Err            error // nil on exit 0; *exec.ExitError otherwise, or a start/timeout error
}

// runNode runs node with args in dir, bounded by timeout. The program runs
// in its own process group, which is killed as a whole on timeout, so
// children it started (a stdio MCP server) go too.
func runNode(t testing.TB, node, dir string, timeout time.Duration, args ...string) nodeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(childEnv(t.TempDir()), "NO_COLOR=1", "FORCE_COLOR=0", "CI=true")
	cmd.Stdin = nil
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = &timeoutError{what: strings.Join(args, " "), after: timeout, err: err}
	}
	return nodeRun{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

type timeoutError struct {
	what  string
	after time.Duration
	err   error
}

func (e *timeoutError) Error() string {
	return "node " + e.what + ": timed out after " + e.after.String() + " (" + errString(e.err) + ")"
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
