package dataplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
)

// listedView is a view of three tools (s__a, s__b, s__c) with pages of
// two, and a count of the tools/list requests that reached its go-sdk
// server.
func listedView(t *testing.T) (*junction.View, *atomic.Int64) {
	t.Helper()
	hub := junction.New(&junction.Options{PageSize: 2})
	t.Cleanup(func() { hub.Close() })
	f := &rawFake{tools: []string{"c", "a", "b"}, raw: echoRaw}
	if err := hub.Add(t.Context(), "s", f, &junction.SourceOptions{Prefix: junction.PrefixAlways}); err != nil {
		t.Fatal(err)
	}
	v, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var sdk atomic.Int64
	v.Server().AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				sdk.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	return v, &sdk
}

// counted is an Options.Count that keeps what it is told.
type counted struct {
	mu  sync.Mutex
	got []string
}

func (c *counted) count(front, method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, front+" "+method)
}

func (c *counted) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// listAll pages through a host's tools/list with list, which sends one
// request (its params) and returns the decoded result, and returns the
// names listed and the last result.
func listAll(t *testing.T, list func(params string) map[string]any) ([]string, map[string]any) {
	t.Helper()
	var names []string
	cursor := ""
	for range 5 {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		res := list(params)
		tools, _ := res["tools"].([]any)
		for _, tool := range tools {
			names = append(names, tool.(map[string]any)["name"].(string))
		}
		next, _ := res["nextCursor"].(string)
		if next == "" {
			return names, res
		}
		cursor = next
	}
	t.Fatalf("no last page after 5: %q", names)
	return nil, nil
}

const modernListMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// TestToolsListOnPlane: a host's tools/list is answered by the plane
// (View.ToolsPage) wherever it takes tools/call, over stdio and HTTP, at
// 2025-11-25 and 2026-07-28: pages in name order with cursors, each
// revision's members, invalid params for a bad cursor, and counted
// through Options.Count; go-sdk's server sees none of them.
func TestToolsListOnPlane(t *testing.T) {
	want := []string{"s__a", "s__b", "s__c"}
	check := func(t *testing.T, what string, names []string, last map[string]any, modern bool) {
		t.Helper()
		if !slices.Equal(names, want) {
			t.Errorf("%s: listed %q, want %q", what, names, want)
		}
		_, ttl := last["ttlMs"]
		if modern != ttl || modern != (last["resultType"] == "complete") {
			t.Errorf("%s: result %v, want 2026-07-28's members: %v", what, last, modern)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		v, sdk := listedView(t)
		var c counted
		h := startStdio(t, v, &Options{Count: c.count})
		// A 2026-07-28 request before any initialize stands on its own.
		id := 0
		list := func(meta string) func(string) map[string]any {
			return func(params string) map[string]any {
				id++
				if meta != "" {
					params = params[:len(params)-1]
					if len(params) > 1 {
						params += ","
					}
					params += meta + "}"
				}
				h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, id, params))
				m := h.recv(t)
				res, _ := m["result"].(map[string]any)
				if res == nil {
					t.Fatalf("tools/list: %v", m)
				}
				return res
			}
		}
		names, last := listAll(t, list(modernListMeta))
		check(t, "2026-07-28", names, last, true)
		h.initialize(t)
		names, last = listAll(t, list(""))
		check(t, "2025-11-25", names, last, false)
		h.send(t, `{"jsonrpc":"2.0","id":"bad","method":"tools/list","params":{"cursor":"zzz"}}`)
		if m := h.recv(t); m["error"] == nil || m["error"].(map[string]any)["code"] != float64(-32602) {
			t.Errorf("a bad cursor: %v, want invalid params", m)
		}
		if n := sdk.Load(); n != 0 {
			t.Errorf("go-sdk's server answered %d tools/list", n)
		}
		if got := c.list(); len(got) != 5 || got[0] != "stdio tools/list" {
			t.Errorf("counted %q, want 5 stdio tools/list", got)
		}
	})

	t.Run("http", func(t *testing.T) {
		v, sdk := listedView(t)
		var c counted
		srv := httptest.NewServer(New(v, &Options{Count: c.count}).HTTPHandler(&HTTPOptions{}))
		t.Cleanup(srv.Close)
		decode := func(resp *http.Response) map[string]any {
			t.Helper()
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("tools/list answered as %q: %s", ct, body)
			}
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			res, _ := m["result"].(map[string]any)
			if res == nil {
				t.Fatalf("tools/list: %s", body)
			}
			return res
		}
		sid := rawSession(t, srv.URL)
		names, last := listAll(t, func(params string) map[string]any {
			return decode(rawPost(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":`+params+`}`))
		})
		check(t, "a 2025-11-25 session", names, last, false)
		names, last = listAll(t, func(params string) map[string]any {
			params = params[:len(params)-1]
			if len(params) > 1 {
				params += ","
			}
			resp, err := http.DefaultClient.Do(modernRequest(t, srv.URL, "tools/list", "", "",
				`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":`+params+modernListMeta+`}}`))
			if err != nil {
				t.Fatal(err)
			}
			return decode(resp)
		})
		check(t, "2026-07-28", names, last, true)
		status, m := modernPost(t, srv.URL, "tools/list", "", "", `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"zzz",`+modernListMeta+`}}`)
		if e, _ := m["error"].(map[string]any); status != http.StatusBadRequest || e == nil || e["code"] != float64(-32602) {
			t.Errorf("a bad cursor at 2026-07-28: %d %v, want 400 and invalid params", status, m)
		}
		if n := sdk.Load(); n != 0 {
			t.Errorf("go-sdk's server answered %d tools/list", n)
		}
		if got := c.list(); len(got) != 5 || got[0] != "http tools/list" {
			t.Errorf("counted %q, want 5 http tools/list", got)
		}
	})
}

// FuzzParseToolsList: what parseToolsList takes is a tools/list request
// that encoding/json reads the same way (id, cursor, _meta).
func FuzzParseToolsList(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{"cursor":"abc","_meta":{"progressToken":1}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"\u0041"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"tools/list","params":null}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		lr, ok := parseToolsList(msg)
		if !ok {
			return
		}
		var m struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Method  string          `json:"method"`
			Params  *struct {
				Cursor string          `json:"cursor"`
				Meta   json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", msg, err)
		}
		var cursor string
		var meta json.RawMessage
		if m.Params != nil {
			cursor, meta = m.Params.Cursor, m.Params.Meta
		}
		if m.JSONRPC != "2.0" || m.Method != "tools/list" || string(m.ID) == "null" || !bytes.Equal(bytes.TrimSpace(m.ID), lr.id) ||
			cursor != lr.cursor || !bytes.Equal(bytes.TrimSpace(meta), bytes.TrimSpace(lr.meta)) {
			t.Fatalf("%q: got id %s cursor %q meta %s; encoding/json: %s %q %s", msg, lr.id, lr.cursor, lr.meta, m.ID, cursor, meta)
		}
	})
}
