package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fixturesConfig writes a hub config with the conformance fixtures as
// an upstream (at the hub's default protocol, 2026-07-28, whose results
// carry resultType and the server's serverInfo), prefixing off.
func fixturesConfig(t *testing.T) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	body := fmt.Sprintf("servers:\n  fixtures:\n    command: %q\n    args: [serve, -no-default-packs, -pack, conformance]\n    prefix: never\n", junctionBin(t))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// olderHostRequests are one request of each method whose result a host
// before 2026-07-28 must get without that revision's members, by id.
var olderHostRequests = map[string]string{
	"2": `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"test_simple_prompt"}}`,
	"3": `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"test://static-text"}}`,
	"4": `{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"test_prompt_with_arguments"},"argument":{"name":"arg1","value":"a"}}}`,
	"5": `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`,
}

// checkOlderResult fails t if result (of the request with id) carries a
// member of 2026-07-28 that a 2025-11-25 host does not know.
func checkOlderResult(t *testing.T, id string, result json.RawMessage) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil || len(m) == 0 {
		t.Errorf("%s: result %s: %v", olderHostRequests[id], result, err)
		return
	}
	for _, k := range []string{"resultType", "ttlMs", "cacheScope"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s: result has %q, which a 2025-11-25 host does not know: %s", olderHostRequests[id], k, result)
		}
	}
	if strings.Contains(string(m["_meta"]), "io.modelcontextprotocol/serverInfo") {
		t.Errorf("%s: result's _meta names a serverInfo, which a 2025-11-25 host does not know: %s", olderHostRequests[id], result)
	}
}

// TestStdioQuietUntilInitialize: a stdio hub writes nothing to a host
// that has not initialized, although its upstream connects and its
// lists change meanwhile; after initialize, a 2025-11-25 host's
// prompts/get, resources/read, completion/complete and tools/call results
// come without the members 2026-07-28 added, though the upstream's carry
// them.
func TestStdioQuietUntilInitialize(t *testing.T) {
	t.Parallel()
	h := startStdioHost(t, "serve", "-config", fixturesConfig(t), "-no-default-packs")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(h.stderr.String(), "upstream connected"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the upstream did not connect within 30s")
		}
	}
	// A ping may come before initialize; its answer must be the first
	// line (the list changes that came with the upstream go to no one).
	h.send(`{"jsonrpc":"2.0","id":0,"method":"ping"}`)
	select {
	case line := <-h.lines:
		var m map[string]json.RawMessage
		if json.Unmarshal(line, &m) != nil || string(m["id"]) != "0" {
			t.Fatalf("before initialize, junction wrote %s; want nothing but the answer to ping", line)
		}
	case <-h.ctx.Done():
		t.Fatal("no answer to ping")
	}
	h.send(initializeLine)
	h.answers("1")
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// As a host would, list before reading: the upstream's log line
	// comes before the hub has put its resources in the view.
	for n, deadline := 100, time.Now().Add(30*time.Second); ; n++ {
		id := fmt.Sprint(n)
		h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"resources/list"}`)
		if strings.Contains(string(h.answers(id)[id]["result"]), "test://static-text") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the hub did not list test://static-text within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ids := make([]string, 0, len(olderHostRequests))
	for id, req := range olderHostRequests {
		h.send(req)
		ids = append(ids, id)
	}
	for id, m := range h.answers(ids...) {
		if m["error"] != nil {
			t.Errorf("%s: %s", olderHostRequests[id], m["error"])
			continue
		}
		checkOlderResult(t, id, m["result"])
	}
}

// TestHTTPOlderHostResults: the same results over HTTP, for a session
// of a 2025-11-25 host.
func TestHTTPOlderHostResults(t *testing.T) {
	t.Parallel()
	url := startServe(t, "-config", fixturesConfig(t), "-no-default-packs", "-insecure-no-auth")
	init := httpDo(t, "POST", url, "", []byte(initializeLine), "Mcp-Protocol-Version", "2025-11-25")
	if init.status != 200 || init.session == "" {
		t.Fatalf("initialize: HTTP %d, session %q: %s", init.status, init.session, init.body)
	}
	hdr := []string{"Mcp-Protocol-Version", "2025-11-25", "Mcp-Session-Id", init.session}
	httpDo(t, "POST", url, "", []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), hdr...)
	for id, req := range olderHostRequests {
		var m map[string]json.RawMessage
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r := httpDo(t, "POST", url, "", []byte(req), hdr...)
			m = nil
			if err := json.Unmarshal([]byte(lastData(r.body)), &m); err != nil {
				t.Fatalf("%s: HTTP %d %q: %v", req, r.status, r.body, err)
			}
			if m["error"] == nil || time.Now().After(deadline) {
				break // until the upstream is up, its names are unknown
			}
		}
		if m["error"] != nil {
			t.Errorf("%s: %s", req, m["error"])
			continue
		}
		checkOlderResult(t, id, m["result"])
	}
}
