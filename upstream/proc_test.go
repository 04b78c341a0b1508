//go:build linux

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pidAlive reports whether pid is a live process (zombies count as dead:
// in a container PID 1 may never reap orphans).
func pidAlive(pid int) bool { return reaper.Alive(pid) }

// readPids waits for the fake's pid file: "leader grandchild".
func readPids(t *testing.T, file string) (leader, child int) {
	t.Helper()
	waitFor(t, "pid file", func() bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		_, err = fmt.Sscanf(string(b), "%d %d", &leader, &child)
		return err == nil
	})
	return leader, child
}

func TestCloseReapsProcessGroup(t *testing.T) {
	t.Parallel()
	for _, stubborn := range []bool{false, true} {
		t.Run(fmt.Sprintf("stubborn=%v", stubborn), func(t *testing.T) {
			t.Parallel()
			pidfile := filepath.Join(t.TempDir(), "pids")
			env := map[string]string{"FAKE_CHILD_PIDFILE": pidfile}
			if stubborn {
				env["FAKE_STUBBORN"] = "1"
			}
			cfg := fakeConfig(t, "server", env)
			cfg.StopTimeout = 200 * time.Millisecond
			r, _ := newRegistry(t, nil)
			s := addReady(t, r, "g", cfg)
			leader, child := readPids(t, pidfile)
			if !pidAlive(leader) || !pidAlive(child) {
				t.Fatalf("processes %d, %d not running before Close", leader, child)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close() = %v", err)
			}
			for _, pid := range []int{leader, child} {
				if pidAlive(pid) {
					t.Errorf("process %d still alive after Close", pid)
				}
			}
			if s.Snapshot().State != StateStopped {
				t.Errorf("state after Close = %v, want stopped", s.Snapshot().State)
			}
			if _, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo"}}); !errors.Is(err, junction.ErrSourceDown) {
				t.Errorf("CallTool after Close = %v, want ErrSourceDown", err)
			}
		})
	}
}

// When the leader dies and leaves a grandchild holding its stdout (an npx
// wrapper whose child lingers), the session still ends, the grandchild is
// reaped, and the server reconnects.
func TestRestartReapsOrphans(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pids")
	cfg := fakeConfig(t, "server", map[string]string{"FAKE_CHILD_PIDFILE": pidfile})
	cfg.StopTimeout = 200 * time.Millisecond
	r, _ := newRegistry(t, &Options{MinBackoff: 20 * time.Millisecond})
	s := addReady(t, r, "o", cfg)
	leader, child := readPids(t, pidfile)
	os.Remove(pidfile)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err := s.CallTool(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "die"}})
	if !errors.Is(err, junction.ErrSourceDown) {
		t.Fatalf("CallTool(die) = %v, want ErrSourceDown", err)
	}
	waitFor(t, "reconnect", func() bool { return s.Snapshot().Connects == 2 })
	for _, pid := range []int{leader, child} {
		if pidAlive(pid) {
			t.Errorf("process %d of the first session still alive after reconnect", pid)
		}
	}
	res, err := s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`"again"`)}})
	if err != nil || !strings.Contains(resultText(t, res), "again") {
		t.Errorf("CallTool(echo) after restart = %v, %v", res, err)
	}
}
