package dataplane

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskSource is a pack with one tool that runs as a task and waits for a
// signal, and one that never does.
func taskSource(release <-chan struct{}) *junction.Pack {
	p := junction.NewPack("tasks")
	job := &mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)}
	junction.SetTaskSupport(job, junction.TaskOptional)
	p.AddTool(job, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !junction.StartTask(ctx) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sync"}}}, nil
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "job done"}}}, nil
	})
	routed := &mcp.Tool{Name: "routed", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}
	junction.SetTaskSupport(routed, junction.TaskOptional)
	p.AddTool(routed, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		junction.StartTask(ctx)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "routed"}}}, nil
	})
	p.AddTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}}, nil
	})
	return p
}

const (
	tasksMeta   = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	noTasksMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
)

// modernRequest makes a 2026-07-28 request (no session) with the
// routing headers given.
func modernRequest(t *testing.T, url, method, name, token, body string, headers ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// modernPost POSTs a 2026-07-28 request (no session) with the routing
// headers given, and returns the status and the decoded answer.
func modernPost(t *testing.T, url, method, name, token, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(modernRequest(t, url, method, name, token, body, headers...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// go-sdk's answer: the last data line holds it.
		for line := range strings.SplitSeq(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				b = []byte(data)
			}
		}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: answer %q: %v", method, name, b, err)
	}
	return resp.StatusCode, m
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func TestHTTPTasks(t *testing.T) {
	release := make(chan struct{})
	v := viewOf(t, taskSource(release))
	srv := httptest.NewServer(bearerUser(New(v, nil).HTTPHandler(&HTTPOptions{})))
	t.Cleanup(srv.Close)
	call := func(tool, meta string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{},` + meta + `}}`
	}

	// A tool that binds an argument to a header: its header is checked
	// on the plane, as for a plain call (TestParamHeadersOnPlane).
	routed := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__routed","arguments":{"region":"eu"},` + tasksMeta + `}}`
	if _, m := modernPost(t, srv.URL, "tools/call", "s__routed", "a", routed, "Mcp-Param-Region", "eu"); m["result"].(map[string]any)["resultType"] != "task" {
		t.Errorf("a task of a tool with a header-bound argument: %v, want a task", m)
	}
	if status, m := modernPost(t, srv.URL, "tools/call", "s__routed", "a", routed, "Mcp-Param-Region", "us"); status != 400 || errCode(m) != -32020 {
		t.Errorf("the same with another Mcp-Param-Region: HTTP %d, %v; want 400 and -32020", status, m)
	}
	get := func(id, meta string) string {
		return `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"` + id + `",` + meta + `}}`
	}

	_, m := modernPost(t, srv.URL, "tools/call", "s__job", "a", call("s__job", noTasksMeta))
	if res, _ := m["result"].(map[string]any); res["resultType"] != "complete" {
		t.Fatalf("without the extension: %v, want a plain result", m)
	}
	_, m = modernPost(t, srv.URL, "tools/call", "s__plain", "a", call("s__plain", tasksMeta))
	if res, _ := m["result"].(map[string]any); res["resultType"] != "complete" {
		t.Fatalf("a tool without task support: %v, want a plain result", m)
	}
	_, m = modernPost(t, srv.URL, "tools/call", "s__job", "a", call("s__job", tasksMeta))
	res, _ := m["result"].(map[string]any)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("with the extension: %v, want a task", m)
	}

	for _, c := range []struct {
		what         string
		method, name string
		token, body  string
		status       int
		code         float64
	}{
		{"mismatched Mcp-Name", "tasks/get", "other", "a", get(id, tasksMeta), 400, -32020},
		{"mismatched Mcp-Method", "tools/call", id, "a", get(id, tasksMeta), 400, -32020},
		{"no extension", "tasks/get", id, "a", get(id, noTasksMeta), 400, -32021},
		{"another user", "tasks/get", id, "b", get(id, tasksMeta), 200, -32602},
		{"unknown task", "tasks/get", "nope", "a", get("nope", tasksMeta), 200, -32602},
	} {
		status, m := modernPost(t, srv.URL, c.method, c.name, c.token, c.body)
		if status != c.status || errCode(m) != c.code {
			t.Errorf("%s: HTTP %d, %v; want %d and %v", c.what, status, m, c.status, c.code)
		}
	}
	if _, m := modernPost(t, srv.URL, "tasks/result", "", "a", `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"x",`+tasksMeta+`}}`); errCode(m) != -32601 {
		t.Errorf("tasks/result: %v, want -32601", m)
	}

	_, m = modernPost(t, srv.URL, "tasks/get", id, "a", get(id, tasksMeta))
	if res, _ := m["result"].(map[string]any); res["status"] != "working" || res["resultType"] != "complete" {
		t.Fatalf("tasks/get: %v, want working", m)
	}
	// The owner is the user, not the headers: the same user with other
	// headers beside the credential gets the task.
	_, m = modernPost(t, srv.URL, "tasks/get", id, "a", get(id, tasksMeta), "X-API-Key", "junk")
	if res, _ := m["result"].(map[string]any); res["status"] != "working" {
		t.Errorf("tasks/get by the same user with a junk X-API-Key: %v, want the task", m)
	}
	close(release)
	for {
		_, m = modernPost(t, srv.URL, "tasks/get", id, "a", get(id, tasksMeta))
		res, _ := m["result"].(map[string]any)
		if res["status"] == "completed" {
			if !strings.Contains(string(mustMarshal(t, res["result"])), "job done") {
				t.Errorf("completed: %v", res)
			}
			break
		}
		if res["status"] != "working" {
			t.Fatalf("tasks/get: %v", m)
		}
	}
}

func TestStdioTasks(t *testing.T) {
	release := make(chan struct{})
	h := startFast(t, taskSource(release), junction.Selection{})
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"s__job","arguments":{},`+tasksMeta+`}}`)
	m := h.recv(t)
	res, _ := m["result"].(map[string]any)
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call: %v, want a task", m)
	}
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"`+id+`",`+noTasksMeta+`}}`)
	if m := h.recv(t); errCode(m) != -32021 {
		t.Errorf("tasks/get without the extension: %v, want -32021", m)
	}
	close(release)
	// The status change comes as notifications/tasks.
	for {
		line, err := h.r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var n struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
		}
		json.Unmarshal(line, &n)
		if n.Method == "notifications/tasks" && n.Params["taskId"] == id && n.Params["status"] == "completed" {
			break
		}
	}
	h.send(t, `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"`+id+`",`+tasksMeta+`}}`)
	if m := h.recv(t); m["error"] != nil {
		t.Errorf("tasks/cancel of a finished task: %v", m)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
