package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestTasksWithFastPathOff: the tasks extension is the data plane's
// whichever path calls take: with -fast-path=false, over HTTP and over
// stdio, server/discover offers it, a tools/call that declares it becomes
// a task, and tasks/get answers it.
func TestTasksWithFastPathOff(t *testing.T) {
	t.Parallel()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":1},` + meta + `}}`
	get := func(id string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":` + quoteJSON(id) + `,` + meta + `}}`
	}
	type answer struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	check := func(t *testing.T, ask func(method, name, body string) answer) {
		d := ask("server/discover", "", discover)
		if !strings.Contains(fmt.Sprint(d.Result["capabilities"]), "io.modelcontextprotocol/tasks") {
			t.Errorf("server/discover: %v %v; want the tasks extension offered", d.Result, d.Error)
		}
		c := ask("tools/call", "slow_compute", call)
		id, _ := c.Result["taskId"].(string)
		if c.Result["resultType"] != "task" || id == "" {
			t.Fatalf("tools/call declaring tasks: %v %v; want a task", c.Result, c.Error)
		}
		g := ask("tasks/get", id, get(id))
		if g.Error != nil || g.Result["taskId"] != id {
			t.Errorf("tasks/get: %v %v; want the task", g.Result, g.Error)
		}
	}
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		url := startServe(t, "-no-default-packs", "-pack", "conformance", "-insecure-no-auth", "-fast-path=false")
		check(t, func(method, name, body string) answer {
			hdr := []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", method}
			if name != "" {
				hdr = append(hdr, "Mcp-Name", name)
			}
			r := httpDo(t, "POST", url, "", []byte(body), hdr...)
			var a answer
			if err := json.Unmarshal([]byte(lastData(r.body)), &a); err != nil {
				t.Fatalf("%s: HTTP %d %q: %v", method, r.status, r.body, err)
			}
			return a
		})
	})
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		h := startStdioHost(t, "serve", "-no-default-packs", "-pack", "conformance", "-fast-path=false")
		check(t, func(method, _, body string) answer {
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(body), &m)
			h.send(body)
			got := h.answers(string(m.ID))[string(m.ID)]
			var a answer
			json.Unmarshal(got["result"], &a.Result)
			json.Unmarshal(got["error"], &a.Error)
			return a
		})
	})
}
