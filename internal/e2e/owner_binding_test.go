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

// modernCall is the body of a 2026-07-28 tools/call of name with
// arguments args (a JSON object) and extra params members (each a
// `"key":value` string), from a host that declares elicitation and the
// tasks extension.
func modernCall(id int, name, args string, extra ...string) []byte {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"e2e","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	params := append([]string{`"name":` + quoteJSON(name), `"arguments":` + args}, extra...)
	params = append(params, meta)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s}}`, id, strings.Join(params, ","))
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// modernPost sends a 2026-07-28 tools/call of name to the hub at url
// with token, and returns the answer's result and error members.
func modernPost(t *testing.T, url, token, name string, body []byte, headers ...string) (result, rpcErr map[string]any) {
	t.Helper()
	headers = append([]string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", name}, headers...)
	r := httpDo(t, "POST", url, token, body, headers...)
	var m struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(lastData(r.body)), &m); err != nil || m.Result == nil && m.Error == nil {
		t.Fatalf("tools/call %s with token %q: HTTP %d %q: %v", name, token, r.status, r.body, err)
	}
	return m.Result, m.Error
}

// lastData is body's JSON: the last data line of an event stream, or
// body itself.
func lastData(body string) string {
	out := body
	for line := range strings.SplitSeq(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = d
		}
	}
	return out
}

// TestQuestionStateBoundToUser: a 2026-07-28 host's question from a
// 2025-11-25 upstream (an elicitation the hub turns into an
// input-required result) comes with a requestState that only the user
// who got it can answer: another token's retry with that state and its
// own answer is refused with -32602, and the first user's retry gets
// the result with its own answer.
func TestQuestionStateBoundToUser(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	body := fmt.Sprintf("servers:\n  fixtures:\n    command: %q\n    args: [serve, -no-default-packs, -pack, conformance]\n    prefix: never\n    protocol_version: \"2025-11-25\"\n"+
		"http:\n  tokens: [token-of-ann, token-of-eve]\n", junctionBin(t))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServe(t, "-config", cfg)
	const tool = "test_elicitation"
	var res, rpcErr map[string]any
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, rpcErr = modernPost(t, url, "token-of-ann", tool, modernCall(1, tool, `{"message":"Who are you?"}`))
		if rpcErr == nil || time.Now().After(deadline) {
			break // the upstream is up (until then the tool is unknown)
		}
	}
	if rpcErr != nil {
		t.Fatalf("first call: %v", rpcErr)
	}
	state, _ := res["requestState"].(string)
	asks, _ := res["inputRequests"].(map[string]any)
	if state == "" || len(asks) != 1 {
		t.Fatalf("first call: %v; want one input request and a requestState", res)
	}
	var id string
	for id = range asks {
	}
	retry := func(user string) []byte {
		answer := fmt.Sprintf(`"inputResponses":{%s:{"action":"accept","content":{"username":%s,"email":"%s@example.com"}}}`, quoteJSON(id), quoteJSON(user), user)
		return modernCall(2, tool, `{"message":"Who are you?"}`, answer, `"requestState":`+quoteJSON(state))
	}
	if res, rpcErr := modernPost(t, url, "token-of-eve", tool, retry("eve")); rpcErr == nil || rpcErr["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(rpcErr["message"]), "requestState") {
		t.Fatalf("another token's retry with ann's state: result %v, error %v; want -32602 naming requestState", res, rpcErr)
	}
	res, rpcErr = modernPost(t, url, "token-of-ann", tool, retry("ann"))
	if rpcErr != nil || !strings.Contains(fmt.Sprint(res["content"]), "ann") || strings.Contains(fmt.Sprint(res["content"]), "eve") {
		t.Fatalf("ann's retry: result %v, error %v; want the result with ann's answer", res, rpcErr)
	}
}

// TestTaskOwnerIsUser: over HTTP, a task belongs to the user whose
// credential created it, not to the request's headers: the same token
// with a junk Authorization header beside its X-API-Key still sees it,
// and another token does not.
func TestTaskOwnerIsUser(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "junction.yaml")
	if err := os.WriteFile(cfg, []byte("packs: [conformance]\nhttp:\n  tokens: [token-of-ann, token-of-eve]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := startServe(t, "-config", cfg, "-no-default-packs")
	res, rpcErr := modernPost(t, url, "", "slow_compute", modernCall(1, "slow_compute", `{"seconds":2}`), "X-API-Key", "token-of-ann", "Authorization", "Bearer junk-1")
	if rpcErr != nil || res["resultType"] != "task" {
		t.Fatalf("slow_compute as a task: result %v, error %v", res, rpcErr)
	}
	id, _ := res["taskId"].(string)
	get := func(key, junk string) (map[string]any, map[string]any) {
		body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":%s,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`, quoteJSON(id))
		r := httpDo(t, "POST", url, "", body, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tasks/get", "Mcp-Name", id, "X-API-Key", key, "Authorization", "Bearer "+junk)
		var m struct {
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if err := json.Unmarshal([]byte(lastData(r.body)), &m); err != nil {
			t.Fatalf("tasks/get: HTTP %d %q: %v", r.status, r.body, err)
		}
		return m.Result, m.Error
	}
	if res, rpcErr := get("token-of-ann", "junk-2"); rpcErr != nil || res["status"] != "working" {
		t.Errorf("tasks/get by ann with another junk Authorization: %v, %v; want the task, working", res, rpcErr)
	}
	if res, rpcErr := get("token-of-eve", "junk-1"); rpcErr == nil || rpcErr["code"] != float64(-32602) {
		t.Errorf("tasks/get by eve: %v, %v; want -32602 (unknown task)", res, rpcErr)
	}
}
