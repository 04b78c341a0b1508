package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestLockFileWatched runs the re-lock workflow through the binary with no
// SIGHUP: "junction serve" watches the lock file its config names as it
// watches the config, so
//
//   - a tool whose definition no longer matches the lock is withheld under
//     drift: block; the real "junction lock" rewrites the lock (a temporary
//     file renamed over it) and the running hub serves the tool again;
//   - a broken lock file changes nothing: the tool stays served and the
//     log names the file;
//   - a lock that no longer matches, renamed over the broken one,
//     withholds the tool again.
func TestLockFileWatched(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, "junction.lock.json")
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(
		"lock: %s\nservers:\n  a:\n    command: %q\n    env: {%s: \"1\", GORACE: \"atexit_sleep_ms=0\"}\n    drift: block\n",
		lock, self, envEchoUpstream))

	// A lock whose pin of a__echo's description no longer matches: what a
	// tool that changed since it was locked looks like.
	relock := func() {
		t.Helper()
		if out, errOut, code := runJunction(t, nil, "lock", "-no-default-packs", "-config", cfg); code != 0 {
			t.Fatalf("junction lock: exit %d\n%s%s", code, out, errOut)
		}
	}
	relock()
	writeConfig(t, lock, poisonedLock(t, readFile(t, lock), "a__echo"))

	s := startReloadServer(t, "-insecure-no-auth", "-no-default-packs", "-config", cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	waitFor(t, "a__pid to be served", 15*time.Second, func() bool {
		return hasName(toolNames(t, cs), "a__pid")
	})
	if names := toolNames(t, cs); hasName(names, "a__echo") {
		t.Fatalf("a__echo is served although it drifted from the lock under drift: block: %v", names)
	}

	relock()
	good := readFile(t, lock)
	waitFor(t, "a__echo to be served after junction lock, with no SIGHUP", 15*time.Second, func() bool {
		return hasName(toolNames(t, cs), "a__echo")
	})

	mark := s.reloads()
	writeConfig(t, lock, `{"version": 1, "tools": [`) // cut short
	s.waitLine(t, mark, regexp.MustCompile(`config reload incomplete.*lock file not applied.*`+regexp.QuoteMeta(lock)))
	if names := toolNames(t, cs); !hasName(names, "a__echo") || !hasName(names, "a__pid") {
		t.Errorf("tools after a broken lock file = %v, want a__echo and a__pid still served", names)
	}

	writeConfig(t, lock, poisonedLock(t, good, "a__echo"))
	waitFor(t, "a__echo to be withheld after a lock that no longer matches", 15*time.Second, func() bool {
		names := toolNames(t, cs)
		return !hasName(names, "a__echo") && hasName(names, "a__pid")
	})
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// poisonedLock returns the lock b (written by "junction lock") with the
// description pin of tool changed.
func poisonedLock(t *testing.T, b []byte, tool string) string {
	t.Helper()
	var m struct {
		Version int              `json:"version"`
		Tools   []map[string]any `json:"tools"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("lock: %v\n%s", err, b)
	}
	found := false
	for _, pin := range m.Tools {
		if pin["name"] == tool {
			pin["description_sha256"] = "0000"
			found = true
		}
	}
	if !found {
		t.Fatalf("the lock pins no tool %q:\n%s", tool, b)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
