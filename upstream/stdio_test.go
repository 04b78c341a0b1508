package upstream

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server that exits at start is reported with its exit status and the
// last line it wrote on stderr, which usually says why.
func TestExitErrorNamesStatusAndStderr(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	s, err := r.Add("x", fakeConfig(t, "server", map[string]string{"FAKE_FIX_FILE": t.TempDir() + "/never"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil {
		t.Fatal("WaitReady succeeded for a server that exits at start")
	}
	got := s.Snapshot().LastError
	for _, want := range []string{"server exited: exit status 1", `last line on stderr: "fake: not fixed yet, exiting"`} {
		if !strings.Contains(got, want) {
			t.Errorf("LastError = %q, want it to contain %q", got, want)
		}
	}
}

// A server that exits before it reads anything (junction's initialize
// then meets a closed pipe, or its stdout ends first: whichever the
// scheduler makes happen) is reported the same way every time: its exit
// status and stderr, not go-sdk's "broken pipe" or "connection closed".
func TestExitBeforeInitializeNamesStatus(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	const n = 8
	servers := make([]*Server, n)
	for i := range servers {
		s, err := r.Add(fmt.Sprintf("quick%d", i), Config{Command: "sh", Args: []string{"-c", `echo "API_KEY is not set" >&2; exit 7`}, StopTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = s
	}
	for _, s := range servers {
		if err := s.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil {
			t.Fatal("WaitReady succeeded for a server that exits at start")
		}
		got := s.Snapshot().LastError
		for _, want := range []string{"server exited: exit status 7", `last line on stderr: "API_KEY is not set"`} {
			if !strings.Contains(got, want) {
				t.Errorf("LastError = %q, want it to contain %q", got, want)
			}
		}
	}
}

// A server that never answers initialize fails its attempt after the
// connect timeout, with an error that says so.
func TestConnectTimeoutErrorSaysInitialize(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	cfg := fakeConfig(t, "sleeper", nil)
	cfg.ConnectTimeout = 300 * time.Millisecond
	cfg.StopTimeout = 100 * time.Millisecond
	s, err := r.Add("mute", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WaitReady(ctxTimeout(t, 20*time.Second)); err == nil {
		t.Fatal("WaitReady succeeded for a server that never answers")
	}
	want := "connect: timed out after 300ms waiting for the server to answer initialize"
	if got := s.Snapshot().LastError; !strings.Contains(got, want) {
		t.Errorf("LastError = %q, want it to contain %q", got, want)
	}
}

// A server that dies during a session is reported, with the time, by its
// exit status and its last lines on stderr, not by what go-sdk's
// connection saw (a broken pipe, say).
func TestSessionEndNamesExit(t *testing.T) {
	t.Parallel()
	r, _ := newRegistry(t, &Options{MinBackoff: time.Minute, MaxBackoff: time.Minute})
	s := addReady(t, r, "x", fakeConfig(t, "server", nil))
	before := time.Now()
	s.CallTool(t.Context(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "die"}})
	waitFor(t, "the session's end recorded", func() bool { return s.Snapshot().LastError != "" })
	snap := s.Snapshot()
	for _, want := range []string{"session ended: server exited: exit status 3", `last 2 lines on stderr: "fake: starting", "fake: dying mid-call"`} {
		if !strings.Contains(snap.LastError, want) {
			t.Errorf("LastError = %q, want it to contain %q", snap.LastError, want)
		}
	}
	if snap.LastErrorAt.Before(before) || time.Since(snap.LastErrorAt) > time.Minute {
		t.Errorf("LastErrorAt = %v, want the time of the exit (after %v)", snap.LastErrorAt, before)
	}
}
