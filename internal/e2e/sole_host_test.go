package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestSoleHostRootsAndLogs is a desktop host with the npm
// server-everything behind a stdio hub in its default mode (one shared
// upstream session): the server asks for roots when it starts, before
// the host has connected, and gets none; once the host has initialized
// with roots, the server is told the roots changed, asks again, and its
// roots/list reaches the host, although no call is in flight. The
// server's log message about it ("Roots updated: 1 root(s)"), sent
// outside any call, reaches the host too, and the server's
// get-roots-list tool then lists the host's root.
func TestSoleHostRootsAndLogs(t *testing.T) {
	t.Parallel()
	node, script := everythingCmd(t)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "claude_desktop_config.json"),
		fmt.Sprintf(`{"mcpServers":{"everything":{"command":%q,"args":[%q,"stdio"]}}}`, node, script))
	h := startStdioHost(t, "serve", "-config", cfg)
	h.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"e2e","version":"1"}}}`)
	h.answers("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	const root = "file:///e2e/sole-host-root"
	// Answer the hub's roots/list until the server's log message says it
	// has the root; then call the tool that lists them.
	asked, logged := 0, false
	called := false
	for {
		var line []byte
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("junction closed stdout (roots asked %d times, logged %v)", asked, logged)
			}
			line = l
		case <-h.ctx.Done():
			t.Fatalf("timed out: roots asked %d times, log message received %v, tool called %v", asked, logged, called)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("junction wrote %q: %v", line, err)
		}
		switch {
		case m.Method == "roots/list":
			asked++
			h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":%q,"name":"e2e"}]}}`, m.ID, root))
		case m.Method == "notifications/message" && strings.Contains(string(m.Params), "Roots updated: 1 root(s)"):
			logged = true
			if !called {
				called = true
				h.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"everything__get-roots-list","arguments":{}}}`)
			}
		case string(m.ID) == "3":
			if m.Error != nil || !strings.Contains(string(m.Result), root) {
				t.Fatalf("get-roots-list: %s %s; want the host's root %s", m.Result, m.Error, root)
			}
			if asked == 0 {
				t.Error("the hub never asked the host for its roots")
			}
			return
		}
	}
}
