package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// jsonAnswer reads resp, an answer the plane wrote as JSON, and decodes
// it.
func jsonAnswer(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" || json.Unmarshal(body, &m) != nil {
		t.Fatalf("answered as %q: %s", ct, body)
	}
	return m
}

// listedView is a view of three tools (s__a, s__b, s__c), prompts
// (p__a…), resources (file:///a…) and resource templates (tpl://a/{x}…)
// with pages of two.
func listedView(t *testing.T) *junction.View {
	t.Helper()
	hub := junction.New(&junction.Options{PageSize: 2})
	t.Cleanup(func() { hub.Close() })
	f := &rawFake{tools: []string{"c", "a", "b"}, raw: echoRaw}
	if err := hub.Add(t.Context(), "s", f, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	p := junction.NewPack("p")
	for _, n := range []string{"b", "c", "a"} {
		p.AddPrompt(&mcp.Prompt{Name: n},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		p.AddResource(&mcp.Resource{Name: n, URI: "file:///" + n},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
		p.AddResourceTemplate(&mcp.ResourceTemplate{Name: n, URITemplate: "tpl://" + n + "/{x}"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{}, nil
			})
	}
	if err := hub.Add(t.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// listedWant is what listedView's lists hold, in order, by method.
var listedWant = map[string][]string{
	"tools/list":               {"s__a", "s__b", "s__c"},
	"prompts/list":             {"p__a", "p__b", "p__c"},
	"resources/list":           {"file:///a", "file:///b", "file:///c"},
	"resources/templates/list": {"tpl://a/{x}", "tpl://b/{x}", "tpl://c/{x}"},
}

// counted is an Options.Count that keeps what it is told.
type counted struct {
	mu  sync.Mutex
	got []string
}

// count notes the requests counted (the tests count those; the host's
// notifications the plane takes, and its initialize, are counted too).
func (c *counted) count(front, method string) {
	if strings.HasPrefix(method, "notifications/") || method == "initialize" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, front+" "+method)
}

func (c *counted) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// listAll pages through a host's list, with list sending one request (its
// params) and returning the decoded result, and returns the keys listed
// (names, URIs, URI templates) and the last result.
func listAll(t *testing.T, list func(params string) map[string]any) ([]string, map[string]any) {
	t.Helper()
	var keys []string
	cursor := ""
	for range 5 {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		res := list(params)
		for _, member := range []string{"tools", "prompts", "resources", "resourceTemplates"} {
			items, _ := res[member].([]any)
			for _, it := range items {
				m := it.(map[string]any)
				switch {
				case m["uriTemplate"] != nil:
					keys = append(keys, m["uriTemplate"].(string))
				case m["uri"] != nil:
					keys = append(keys, m["uri"].(string))
				default:
					keys = append(keys, m["name"].(string))
				}
			}
		}
		next, _ := res["nextCursor"].(string)
		if next == "" {
			return keys, res
		}
		cursor = next
	}
	t.Fatalf("no last page after 5: %q", keys)
	return nil, nil
}

// withListMeta returns params, a JSON object, with modernListMeta's member.
func withListMeta(params string) string {
	params = params[:len(params)-1]
	if len(params) > 1 {
		params += ","
	}
	return params + modernListMeta + "}"
}

const modernListMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestListsOnPlane: a host's lists are answered by the plane
// (View.ListPage) wherever it takes tools/call, over stdio and HTTP, at
// 2025-11-25 and 2026-07-28: pages in key order with cursors, each
// revision's members, invalid params for a bad cursor, and counted
// through Options.Count; go-sdk's server sees none of them.
func TestListsOnPlane(t *testing.T) {
	methods := []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
	check := func(t *testing.T, what, method string, keys []string, last map[string]any, modern bool) {
		t.Helper()
		if want := listedWant[method]; !slices.Equal(keys, want) {
			t.Errorf("%s %s: listed %q, want %q", what, method, keys, want)
		}
		_, ttl := last["ttlMs"]
		if modern != ttl || modern != (last["resultType"] == "complete") {
			t.Errorf("%s %s: result %v, want 2026-07-28's members: %v", what, method, last, modern)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		v := listedView(t)
		var c counted
		h := startStdio(t, v, &Options{Count: c.count})
		id := 0
		list := func(method string, modern bool) func(string) map[string]any {
			return func(params string) map[string]any {
				id++
				if modern {
					params = withListMeta(params)
				}
				h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
				m := h.recv(t)
				res, _ := m["result"].(map[string]any)
				if res == nil {
					t.Fatalf("%s: %v", method, m)
				}
				return res
			}
		}
		// A 2026-07-28 request before any initialize stands on its own.
		for _, method := range methods {
			keys, last := listAll(t, list(method, true))
			check(t, "2026-07-28", method, keys, last, true)
		}
		h.initialize(t)
		for _, method := range methods {
			keys, last := listAll(t, list(method, false))
			check(t, "2025-11-25", method, keys, last, false)
			h.send(t, `{"jsonrpc":"2.0","id":"bad","method":"`+method+`","params":{"cursor":"zzz"}}`)
			if m := h.recv(t); m["error"] == nil || m["error"].(map[string]any)["code"] != float64(-32602) {
				t.Errorf("%s with a bad cursor: %v, want invalid params", method, m)
			}
		}
		if got := c.list(); len(got) != 4*len(methods)+len(methods) || got[0] != "stdio tools/list" {
			t.Errorf("counted %q, want %d stdio lists", got, 5*len(methods))
		}
	})

	t.Run("http", func(t *testing.T) {
		v := listedView(t)
		var c counted
		srv := httptest.NewServer(New(v, &Options{Count: c.count}).HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		decode := func(resp *http.Response) map[string]any {
			t.Helper()
			m := jsonAnswer(t, resp)
			res, _ := m["result"].(map[string]any)
			if res == nil {
				t.Fatalf("a list: %v", m)
			}
			return res
		}
		sid := rawSession(t, srv.URL)
		for _, method := range methods {
			keys, last := listAll(t, func(params string) map[string]any {
				return decode(rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":`+params+`}`))
			})
			check(t, "a 2025-11-25 session", method, keys, last, false)
			keys, last = listAll(t, func(params string) map[string]any {
				resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, method, "", "",
					`{"jsonrpc":"2.0","id":3,"method":"`+method+`","params":`+withListMeta(params)+`}`))
				if err != nil {
					t.Fatal(err)
				}
				return decode(resp)
			})
			check(t, "2026-07-28", method, keys, last, true)
			status, m := modernPost(t, srv.URL, method, "", "", `{"jsonrpc":"2.0","id":4,"method":"`+method+`","params":`+withListMeta(`{"cursor":"zzz"}`)+`}`)
			if e, _ := m["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) {
				t.Errorf("%s with a bad cursor at 2026-07-28: %d %v, want 400 and invalid params", method, status, m)
			}
		}
		if got := c.list(); len(got) != 5*len(methods) || got[0] != "http tools/list" {
			t.Errorf("counted %q, want %d http lists", got, 5*len(methods))
		}
	})

}

// TestServerRequestsOnPlane: server/discover (2026-07-28) and ping
// (before it) are answered by the plane: over stdio before any
// initialize (ping too) and after it, over HTTP without a session
// (server/discover) and on a 2025-11-25 session (ping), JSON; what the
// discover result holds is View.Discover's. The same methods in the
// other revision are go-sdk's to refuse.
func TestServerRequestsOnPlane(t *testing.T) {
	view := func(t *testing.T) *junction.View {
		t.Helper()
		v := listedView(t)
		return v
	}
	checkDiscover := func(t *testing.T, what string, m map[string]any, modern bool) {
		t.Helper()
		res, _ := m["result"].(map[string]any)
		caps, _ := res["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		versions := fmt.Sprint(res["supportedVersions"])
		if res == nil || caps["tools"] == nil || ext[junction.TasksExtension] == nil || !strings.Contains(versions, "2026-07-28") || !strings.Contains(versions, "2025-11-25") {
			t.Errorf("%s server/discover: %v, want the view's capabilities with tasks and every revision", what, m)
		}
		if modern != (res["resultType"] == "complete") || res["cacheScope"] != "public" {
			t.Errorf("%s server/discover: %v, want cacheScope public and 2026-07-28's members: %v", what, res, modern)
		}
	}
	isEmpty := func(m map[string]any) bool {
		res, ok := m["result"].(map[string]any)
		return ok && len(res) == 0
	}
	notFound := func(m map[string]any) bool {
		e, _ := m["error"].(map[string]any)
		return e != nil && e["code"] == float64(-32601)
	}
	modernMeta := `{` + modernListMeta + `}`

	t.Run("stdio", func(t *testing.T) {
		v := view(t)
		var c counted
		h := startStdio(t, v, &Options{Count: c.count})
		h.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		if m := h.recv(t); !isEmpty(m) {
			t.Errorf("ping before initialize: %v", m)
		}
		h.send(t, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":`+modernMeta+`}`)
		checkDiscover(t, "a 2026-07-28", h.recv(t), true)
		// In the other revision: go-sdk's method not found (refused before
		// its middleware; Count shows the plane did not take them).
		h.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping","params":`+modernMeta+`}`)
		if m := h.recv(t); !notFound(m) {
			t.Errorf("a 2026-07-28 ping: %v, want method not found", m)
		}
		h.send(t, `{"jsonrpc":"2.0","id":4,"method":"server/discover"}`)
		if m := h.recv(t); !notFound(m) {
			t.Errorf("an older server/discover: %v, want method not found", m)
		}
		h.initialize(t)
		h.send(t, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"progressToken":1}}}`)
		if m := h.recv(t); !isEmpty(m) {
			t.Errorf("ping on the session: %v", m)
		}
		if got := c.list(); !slices.Equal(got, []string{"stdio ping", "stdio server/discover", "stdio ping"}) {
			t.Errorf("counted %q", got)
		}
	})

	t.Run("http", func(t *testing.T) {
		v := view(t)
		var c counted
		srv := httptest.NewServer(New(v, &Options{Count: c.count}).HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, "server/discover", "", "",
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":`+modernMeta+`}`))
		if err != nil {
			t.Fatal(err)
		}
		checkDiscover(t, "a 2026-07-28", jsonAnswer(t, resp), true)
		sid := rawSession(t, srv.URL)
		if m := jsonAnswer(t, rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)); !isEmpty(m) {
			t.Errorf("ping on a session: %v", m)
		}
		if got := c.list(); !slices.Equal(got, []string{"http server/discover", "http ping"}) {
			t.Errorf("counted %q", got)
		}
	})
}

// FuzzParseRequest: what parseRequest takes is a request that
// encoding/json reads the same way (id, method, and a list's cursor and
// _meta), for one of the lists, bareMethods (no cursor) or
// requestMethods, with params that go-sdk would decode (prompts/get,
// resources/read, completion/complete).
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"cursor":"abc","_meta":{"progressToken":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"\u0041"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":null}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":3,"method":"resources/templates/list","params":{}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":4,"method":"roots/list"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p__a","arguments":{"who":"x"},"_meta":{"progressToken":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"tpl://a/1","inputResponses":{"k":{"action":"accept"}},"requestState":"s"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p__a"},"argument":{"name":"who","value":"a"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":8,"method":"prompts/get","params":{"Name":"p__a","_meta":{},"_meta":{}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"a","_meta":{"a":1,"b":2},"_m\u0065ta":{"b":3}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":10,"method":"ping","params":{"cursor":"x"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":11,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		hr, ok := parseRequest(msg)
		if !ok {
			return
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", msg, err)
		}
		if m.JSONRPC != "2.0" || m.Method != hr.method || string(m.ID) == "null" || !bytes.Equal(bytes.TrimSpace(m.ID), hr.id) {
			t.Fatalf("%q: got id %s method %q; encoding/json: %s %q", msg, hr.id, hr.method, m.ID, m.Method)
		}
		if !junction.IsListMethod(hr.method) && !isBareMethod(hr.method) {
			if !isRequestMethod(hr.method) || hr.params == nil {
				t.Fatalf("%q: taken as %q with params %v", msg, hr.method, hr.params)
			}
			// The _meta the plane reads is the one go-sdk's decoder
			// reads, a _meta given twice included.
			var meta map[string]any
			if len(hr.meta) > 0 {
				if err := json.Unmarshal(hr.meta, &meta); err != nil {
					t.Fatalf("%q: _meta %s: %v", msg, hr.meta, err)
				}
			}
			if want := hr.params.(interface{ GetMeta() map[string]any }).GetMeta(); !reflect.DeepEqual(meta, want) {
				t.Fatalf("%q: _meta %s; go-sdk reads %v", msg, hr.meta, want)
			}
			return
		}
		var p struct {
			Cursor string          `json:"cursor"`
			Meta   json.RawMessage `json:"_meta"`
		}
		if len(m.Params) > 0 && string(m.Params) != "null" {
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatalf("%q: params %v", msg, err)
			}
		}
		if p.Cursor != hr.cursor || !bytes.Equal(bytes.TrimSpace(p.Meta), bytes.TrimSpace(hr.meta)) {
			t.Fatalf("%q: got cursor %q meta %s; encoding/json: %q %s", msg, hr.cursor, hr.meta, p.Cursor, p.Meta)
		}
	})
}

// TestListsWriteHTMLCharacters: the plane writes a list as go-sdk does,
// with "<", ">" and "&" as they are rather than as \u003c escapes (a
// 2,883-tool list is 250 bytes shorter so).
func TestListsWriteHTMLCharacters(t *testing.T) {
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	p := junction.NewPack("p")
	p.AddTool(&mcp.Tool{Name: "cmp", Description: "Is a < b && b > c?", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	if err := hub.Add(t.Context(), "p", p, nil); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var c counted
	h := startStdio(t, v, &Options{Count: c.count})
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	line, err := h.r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(line, []byte(`"Is a < b && b > c?"`)) || len(c.list()) != 1 {
		t.Errorf("tools/list (%d answered by the plane) wrote %s", len(c.list()), line)
	}
}

// TestListWaitsForSources: over stdio a list waits, on a goroutine of
// its own, for the sources still connecting; the connection goes on
// being read meanwhile, a cancelled list gets no answer, and the other
// gets the tools once the source is ready.
func TestListWaitsForSources(t *testing.T) {
	f := lateFake{&rawFake{tools: []string{"echo"}, raw: echoRaw}, make(chan struct{})}
	h := startStdio(t, viewOf(t, f), nil)
	h.initialize(t)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	// Lines are taken in order: once the ping is answered, both lists
	// wait.
	h.send(t, `{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m := h.recv(t); m["id"] != "p" {
		t.Fatalf("got %v before the ping's answer", m)
	}
	close(f.ready)
	for {
		m := h.recv(t)
		if m["method"] != nil {
			continue // a list_changed as the source comes in
		}
		if m["id"] != float64(2) {
			t.Fatalf("got %v, want the answer to the list not cancelled", m)
		}
		res, _ := m["result"].(map[string]any)
		tools, _ := res["tools"].([]any)
		if len(tools) != 1 || tools[0].(map[string]any)["name"] != "s__echo" {
			t.Errorf("the list after the source came in: %v", m)
		}
		break
	}
}

// requestView is a view of pack "p" (prompts greet and ask, a resource,
// a template, completions); pack "q", outside the view's selection, has
// a prompt and a resource of its own.
func requestView(t *testing.T) *junction.View {
	t.Helper()
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	p := junction.NewPack("p")
	p.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Hello <" + req.Params.Arguments["who"] + ">"}}}}, nil
		})
	// ask asks the host for a name, then greets with the answer.
	p.AddPrompt(&mcp.Prompt{Name: "ask"},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if ans, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult); ok && req.Params.RequestState == "asked" {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprint("Hello ", ans.Content["name"])}}}}, nil
			}
			return &mcp.GetPromptResult{RequestState: "asked", InputRequests: mcp.InputRequestMap{
				"name": &mcp.ElicitParams{Message: "your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
			}}, nil
		})
	// slow reports progress, on the token the request gave, then answers.
	p.AddPrompt(&mcp.Prompt{Name: "slow"},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				junction.NotifyProgress(ctx, junction.HostSession(ctx), &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2})
			}
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "done"}}}}, nil
		})
	p.AddResource(&mcp.Resource{Name: "a", URI: "file:///a", MIMEType: "text/markdown"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "# a"}}}, nil
		})
	p.AddResourceTemplate(&mcp.ResourceTemplate{Name: "t", URITemplate: "tpl://{x}", MIMEType: "text/x"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "read " + req.Params.URI}}}, nil
		})
	p.SetCompletionHandler(func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{req.Params.Ref.Name + ":" + req.Params.Argument.Value + "1"}}}, nil
	})
	q := junction.NewPack("q")
	q.AddPrompt(&mcp.Prompt{Name: "hidden"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hidden"}}}}, nil
		})
	q.AddResource(&mcp.Resource{Name: "h", URI: "file:///hidden"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{Text: "hidden"}}}, nil
		})
	q.SetCompletionHandler(func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"hidden"}}}, nil
	})
	for name, pack := range map[string]*junction.Pack{"p": p, "q": q} {
		if err := hub.Add(t.Context(), name, pack, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := hub.NewView("", junction.Selection{Sources: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// requestCase is a request to requestView and what its answer must hold.
type requestCase struct {
	method, name, params string
	want                 string // in the result's JSON, or the error's
	code                 int    // the error's code; 0: a result
}

var requestCases = []requestCase{
	{"prompts/get", "p__greet", `{"name":"p__greet","arguments":{"who":"Ada"}}`, `"text":"Hello <Ada>"`, 0},
	{"prompts/get", "q__hidden", `{"name":"q__hidden"}`, `unknown prompt \"q__hidden\"`, -32602},
	{"resources/read", "file:///a", `{"uri":"file:///a"}`, `"contents":[{"mimeType":"text/markdown","text":"# a","uri":"file:///a"}]`, 0},
	{"resources/read", "tpl://7", `{"uri":"tpl://7"}`, `"contents":[{"mimeType":"text/x","text":"read tpl://7","uri":"tpl://7"}]`, 0},
	{"resources/read", "file:///hidden", `{"uri":"file:///hidden"}`, `"message":"Resource not found"`, -32602},
	{"completion/complete", "", `{"ref":{"type":"ref/prompt","name":"p__greet"},"argument":{"name":"who","value":"A"}}`, `"values":["greet:A1"]`, 0},
	{"completion/complete", "", `{"ref":{"type":"ref/prompt","name":"q__hidden"},"argument":{"name":"who","value":"A"}}`, `"values":[]`, 0},
	{"completion/complete", "", `{"ref":{"type":"ref/resource","uri":"tpl://{x}"},"argument":{"name":"x","value":"7"}}`, `"values":[":71"]`, 0},
}

// checkRequest checks m, the answer to c.
func checkRequest(t *testing.T, what string, c requestCase, m map[string]any, modern bool) {
	t.Helper()
	var buf bytes.Buffer // keys sorted, "<" as it is
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(m)
	b := bytes.TrimSpace(buf.Bytes())
	if c.code != 0 {
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(c.code) || !bytes.Contains(b, []byte(c.want)) {
			t.Errorf("%s %s %s: %s, want error %d with %s", what, c.method, c.params, b, c.code, c.want)
		}
		return
	}
	res, _ := m["result"].(map[string]any)
	if res == nil || !bytes.Contains(b, []byte(c.want)) {
		t.Errorf("%s %s %s: %s, want %s", what, c.method, c.params, b, c.want)
		return
	}
	if modern != (res["resultType"] == "complete") {
		t.Errorf("%s %s: result %s, want 2026-07-28's members: %v", what, c.method, b, modern)
	}
	if c.method == "resources/read" && modern != (res["cacheScope"] == "public") {
		t.Errorf("%s %s: result %s, want a cacheScope of public: %v", what, c.method, b, modern)
	}
}

// TestRequestsOnPlane: prompts/get, resources/read and
// completion/complete are answered by the plane (View.GetPrompt,
// ReadResource, Complete) over stdio at 2025-11-25 and 2026-07-28, over
// HTTP without a session at 2026-07-28 and on a 2025-11-25 session: only
// what the view serves,
// a template's match and MIME type, go-sdk's errors, a question to the
// host in the result (2026-07-28) or as a request of the session, whose
// answer makes the prompt (2025-11-25); counted through Options.Count,
// and go-sdk's server sees none of them.
func TestRequestsOnPlane(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		v := requestView(t)
		var c counted
		h := startStdio(t, v, &Options{Count: c.count})
		id := 0
		send := func(method, params string, modern bool) map[string]any {
			id++
			if modern {
				params = withListMeta(params)
			}
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
			return h.recv(t)
		}
		for _, rc := range requestCases {
			checkRequest(t, "2026-07-28", rc, send(rc.method, rc.params, true), true)
		}
		if m := send("prompts/get", `{"name":"p__ask"}`, true); !strings.Contains(fmt.Sprint(m), "input_required") || !strings.Contains(fmt.Sprint(m), "your name?") {
			t.Errorf("a prompt that asks, at 2026-07-28: %v", m)
		}
		h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
		h.recv(t)
		h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, rc := range requestCases {
			checkRequest(t, "2025-11-25", rc, send(rc.method, rc.params, false), false)
		}
		// The question goes to the host as a request of its session.
		m := send("prompts/get", `{"name":"p__ask"}`, false)
		if m["method"] != "elicitation/create" {
			t.Fatalf("a prompt that asks, at 2025-11-25: %v, want elicitation/create", m)
		}
		qid, _ := json.Marshal(m["id"])
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada"}}}`, qid))
		if m := h.recv(t); !strings.Contains(fmt.Sprint(m), "Hello Ada") || strings.Contains(fmt.Sprint(m), "resultType") {
			t.Errorf("the prompt after the host's answer: %v", m)
		}
		if got := c.list(); len(got) != 2*len(requestCases)+2 || got[0] != "stdio prompts/get" {
			t.Errorf("counted %q, want %d stdio requests", got, 2*len(requestCases)+2)
		}
	})

	t.Run("http", func(t *testing.T) {
		v := requestView(t)
		var c counted
		srv := httptest.NewServer(New(v, &Options{Count: c.count}).HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		for i, rc := range requestCases {
			resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, rc.method, rc.name, "",
				fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i, rc.method, withListMeta(rc.params))))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("%s answered as %q: %s", rc.method, ct, body)
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			checkRequest(t, "2026-07-28", rc, m, true)
		}
		// Progress the request asks for comes on its response, an SSE
		// stream, before the answer.
		resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, "prompts/get", "p__slow", "",
			`{"jsonrpc":"2.0","id":"slow","method":"prompts/get","params":{"name":"p__slow","_meta":{"progressToken":"pt",`+
				`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
		if err != nil {
			t.Fatal(err)
		}
		events := readEvents(t, resp.Body)
		resp.Body.Close()
		if len(events) != 2 || !strings.Contains(events[0].data, `"notifications/progress"`) || !strings.Contains(events[1].data, `"done"`) {
			t.Errorf("a prompt that reports progress, at 2026-07-28: %s %+v", resp.Header.Get("Content-Type"), events)
		}

		// On a session of an older host: JSON answers, and the question of
		// a prompt that asks goes to the host as a request on the
		// response, which turns into an SSE stream; the host's POSTed
		// answer makes the prompt.
		resp = rawPost(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
		io.Copy(io.Discard, resp.Body)
		sid := resp.Header.Get("Mcp-Session-Id")
		io.Copy(io.Discard, rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body)
		for i, rc := range requestCases {
			resp := rawPost(t, srv.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i, rc.method, rc.params))
			body, _ := io.ReadAll(resp.Body)
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%s on a session: %v: %s", rc.method, err, body)
			}
			checkRequest(t, "a 2025-11-25 session", rc, m, false)
		}
		resp = rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":"ask","method":"prompts/get","params":{"name":"p__ask"}}`)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("a prompt that asks, on a session: answered as %q", ct)
		}
		er := newEventReader(resp.Body)
		ev, ok := er.read()
		for ok && ev.data == "" {
			ev, ok = er.read() // a priming event, of a stream that can be resumed
		}
		var ask map[string]any
		if !ok || json.Unmarshal([]byte(ev.data), &ask) != nil || ask["method"] != "elicitation/create" {
			t.Fatalf("first event of a prompt that asks: %+v, want an elicitation request", ev)
		}
		qid, _ := json.Marshal(ask["id"])
		reply := rawPost(t, srv.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"name":"Ada"}}}`, qid))
		io.Copy(io.Discard, reply.Body)
		if reply.StatusCode != http.StatusAccepted {
			t.Errorf("the host's answer: %s", reply.Status)
		}
		if ev, ok = er.read(); !ok || !strings.Contains(ev.data, "Hello Ada") || !strings.Contains(ev.data, `"id":"ask"`) {
			t.Errorf("the prompt after the host's answer: %+v", ev)
		}
		if got := c.list(); len(got) != 2*len(requestCases)+2 {
			t.Errorf("counted %q, want %d http requests", got, 2*len(requestCases)+2)
		}
	})
}

// TestRequestCancelled: a host's notifications/cancelled ends a
// prompts/get the plane is answering, over stdio and on an HTTP session:
// the source's context is cancelled and the request gets no answer
// (JSON-RPC's rule), and the connection goes on serving.
func TestRequestCancelled(t *testing.T) {
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	hub := junction.New(nil)
	t.Cleanup(func() { hub.Close() })
	p := junction.NewPack("p")
	p.AddPrompt(&mcp.Prompt{Name: "wait"}, func(ctx context.Context, _ *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	p.AddPrompt(&mcp.Prompt{Name: "now"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "now"}}}}, nil
	})
	if err := hub.Add(t.Context(), "p", p, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	waitEnded := func(t *testing.T) {
		t.Helper()
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the prompt's context ended with %v, want canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the prompt's context was not cancelled")
		}
	}

	t.Run("stdio", func(t *testing.T) {
		h := startStdio(t, v, nil)
		h.initialize(t)
		h.send(t, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p__wait"}}`)
		<-started
		h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		waitEnded(t)
		h.send(t, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p__now"}}`)
		if m := h.recv(t); m["id"] != float64(2) {
			t.Errorf("after the cancellation: %v, want only the answer to request 2", m)
		}
	})

	t.Run("http", func(t *testing.T) {
		srv := httptest.NewServer(New(v, nil).HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		sid := rawSession(t, srv.URL)
		answered := make(chan []byte, 1)
		go func() {
			resp, err := http.DefaultClient.Do(rawRequest(t, srv.URL, sid, `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p__wait"}}`))
			if err != nil {
				answered <- []byte(err.Error())
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			answered <- body
		}()
		<-started
		resp := rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("the cancellation: %s", resp.Status)
		}
		waitEnded(t)
		if body := <-answered; bytes.Contains(body, []byte(`"id":1`)) {
			t.Errorf("a cancelled request was answered: %s", body)
		}
		body, _ := io.ReadAll(rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p__now"}}`).Body)
		if !bytes.Contains(body, []byte(`"now"`)) {
			t.Errorf("after the cancellation: %s", body)
		}
	})
}

// TestMetaToolsOnPlane: in search mode, calls of the meta-tools
// (search_tools, describe_tools, and call_tool naming one of them) are
// answered by the plane through View.CallOwnTool over stdio once
// initialized, on an HTTP session, and for a 2026-07-28 call without a
// session; go-sdk's server sees none of them.
func TestMetaToolsOnPlane(t *testing.T) {
	v := viewOf(t, &rawFake{tools: []string{"list_files", "send_mail"}, raw: echoRaw})
	if err := v.SetDiscovery(junction.Discovery{Mode: junction.DiscoverySearch}); err != nil {
		t.Fatal(err)
	}
	calls := []struct{ params, want string }{
		{`{"name":"search_tools","arguments":{"query":"mail"}}`, `s__send_mail`},
		{`{"name":"describe_tools","arguments":{"names":["s__list_files","nope"]}}`, `nope`},
		{`{"name":"call_tool","arguments":{"name":"search_tools","arguments":{"query":"files"}}}`, `s__list_files`},
		{`{"name":"search_tools","arguments":{}}`, `query is required`},
	}
	check := func(t *testing.T, what, want string, m map[string]any) {
		t.Helper()
		b, _ := json.Marshal(m)
		res, _ := m["result"].(map[string]any)
		if res == nil || !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s: %s, want a result with %s", what, b, want)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		var c counted
		h := startStdio(t, v, &Options{Count: c.count})
		h.initialize(t)
		for i, call := range calls {
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, call.params))
			check(t, call.params, call.want, h.recv(t))
		}
		if got := c.list(); len(got) != len(calls) || got[0] != "stdio tools/call" {
			t.Errorf("counted %q", got)
		}
	})

	// A 2026-07-28 host over stdio never initializes: each request
	// stands alone, as one without a session does over HTTP.
	t.Run("stdio-2026", func(t *testing.T) {
		h := startStdio(t, v, nil)
		for i, call := range calls {
			params := strings.Replace(call.params, `{"name"`, `{`+modernListMeta+`,"name"`, 1)
			h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, params))
			m := h.recv(t)
			check(t, params, call.want, m)
			if res, _ := m["result"].(map[string]any); res != nil && res["resultType"] != "complete" {
				t.Errorf("%s: %v, want 2026-07-28's members", params, m)
			}
		}
	})

	t.Run("http", func(t *testing.T) {
		srv := httptest.NewServer(New(v, nil).HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		sid := rawSession(t, srv.URL)
		for i, call := range calls {
			body, _ := io.ReadAll(rawPost(t, srv.URL, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i+1, call.params)).Body)
			var m map[string]any
			json.Unmarshal(body, &m)
			check(t, call.params, call.want, m)
		}
		status, m := modernPost(t, srv.URL, "tools/call", "search_tools", "",
			`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"mail"},`+modernListMeta+`}}`)
		if status != http.StatusOK {
			t.Errorf("a 2026-07-28 search without a session: %d", status)
		}
		check(t, "a 2026-07-28 search without a session", `s__send_mail`, m)
		if m["result"].(map[string]any)["resultType"] != "complete" {
			t.Errorf("a 2026-07-28 search without a session: %v, want 2026-07-28's members", m)
		}
	})
}
