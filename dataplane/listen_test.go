package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listeningHost is a 2026-07-28 host on Plane.ServeStdio that reads every
// line (notifications included).
type listeningHost struct {
	*fastHost
	lines chan []byte
	seen  []string
}

const listenMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`

// startListenHost serves p to a listeningHost over stdio until the test
// ends.
func startListenHost(t *testing.T, p *junction.Pack) *listeningHost {
	t.Helper()
	h := &listeningHost{fastHost: startStdio(t, viewOf(t, p), nil), lines: make(chan []byte, 64)}
	go func() {
		defer close(h.lines)
		for {
			line, err := h.r.ReadBytes('\n')
			if err != nil {
				return
			}
			h.lines <- line
		}
	}()
	return h
}

// sendf sends format with the request _meta of 2026-07-28 for its %s.
func (h *listeningHost) sendf(t *testing.T, format string) {
	t.Helper()
	h.send(t, strings.ReplaceAll(format, "%s", listenMeta))
}

type listenMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  *struct {
		Code int64 `json:"code"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
	Params struct {
		Meta          map[string]json.RawMessage     `json:"_meta"`
		URI           string                         `json:"uri"`
		Notifications *mcp.NotificationSubscriptions `json:"notifications"`
	} `json:"params"`
}

func (m listenMsg) tag() string { return string(m.Params.Meta[mcp.MetaKeySubscriptionID]) }

// expect reads until a line satisfies match (up to 10 s) and returns it;
// every line read before it is kept in seen.
func (h *listeningHost) expect(t *testing.T, what string, match func(listenMsg) bool) listenMsg {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-h.lines:
			if !ok {
				t.Fatalf("output ended before %s; read:\n%s", what, strings.Join(h.seen, ""))
			}
			h.seen = append(h.seen, string(line))
			var m listenMsg
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("not JSON: %s", line)
			}
			if match(m) {
				return m
			}
		case <-timer.C:
			t.Fatalf("no %s within 10s; read:\n%s", what, strings.Join(h.seen, ""))
		}
	}
}

func isAck(tag string) func(listenMsg) bool {
	return func(m listenMsg) bool {
		return m.Method == "notifications/subscriptions/acknowledged" && m.tag() == tag
	}
}

func isAnswer(id string) func(listenMsg) bool {
	return func(m listenMsg) bool { return m.Method == "" && string(m.ID) == id }
}

// TestStdioListens: on stdio, ending one of a host's
// subscriptions/listen streams leaves the others their list_changed and
// resource subscriptions (go-sdk v1.8.0 alone drops them all); each
// notification goes to each listen that asked for it, tagged with its id.
// The plane answers the listens, and go-sdk's session is handed nothing.
func TestStdioListens(t *testing.T) {
	watchUntaken(t)
	p := junction.NewPack("p")
	p.AddResource(&mcp.Resource{URI: "r://a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	tool := func(name string) {
		p.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
	}
	tool("one")
	h := startListenHost(t, p)

	h.sendf(t, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["r://a"]},%s}}`)
	ack := h.expect(t, "listen 1 acknowledged", isAck("1"))
	if n := ack.Params.Notifications; n == nil || !n.ToolsListChanged || len(n.ResourceSubscriptions) != 1 {
		t.Errorf("listen 1 acknowledged for %+v", n)
	}
	h.sendf(t, `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["r://a"]},%s}}`)
	h.expect(t, "listen 2 acknowledged", isAck("2"))

	// Both hear of an update, each under its own id.
	p.ResourceUpdated("r://a")
	got := map[string]bool{}
	for len(got) < 2 {
		m := h.expect(t, "resources/updated", func(m listenMsg) bool { return m.Method == "notifications/resources/updated" })
		if m.Params.URI != "r://a" {
			t.Errorf("updated %q", m.Params.URI)
		}
		got[m.tag()] = true
	}
	if !got["1"] || !got["2"] {
		t.Errorf("updates tagged %v, want 1 and 2", got)
	}

	// Listen 2 ends; listen 1 keeps both its subscriptions.
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.sendf(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{%s}}`)
	h.expect(t, "the answer to tools/list", isAnswer("3"))
	p.ResourceUpdated("r://a")
	if m := h.expect(t, "resources/updated", func(m listenMsg) bool { return m.Method == "notifications/resources/updated" }); m.tag() != "1" {
		t.Errorf("update tagged %s after listen 2 ended, want 1", m.tag())
	}
	tool("two")
	if m := h.expect(t, "tools/list_changed", func(m listenMsg) bool { return m.Method == "notifications/tools/list_changed" }); m.tag() != "1" {
		t.Errorf("list_changed tagged %s after listen 2 ended, want 1", m.tag())
	}
	h.sendf(t, `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{%s}}`)
	h.expect(t, "the answer to tools/list", isAnswer("4"))
	for _, line := range h.seen {
		if strings.Contains(line, `"io.modelcontextprotocol/subscriptionId":2`) && !strings.Contains(line, "acknowledged") && !strings.Contains(line, "updated") {
			t.Errorf("for the ended listen 2: %s", line)
		}
		if strings.Contains(line, `"id":2,`) || strings.Contains(line, "\\u0000") {
			t.Errorf("an answer to the cancelled listen, or the plane's own: %s", line)
		}
	}

	// A listen for nothing is answered at once; one for a resource that
	// does not exist gets go-sdk's error.
	h.sendf(t, `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{},%s}}`)
	h.expect(t, "listen 5 acknowledged", isAck("5"))
	if m := h.expect(t, "the answer to listen 5", isAnswer("5")); m.Result == nil {
		t.Errorf("listen 5: want a result, got %s", h.seen[len(h.seen)-1])
	}
	h.sendf(t, `{"jsonrpc":"2.0","id":6,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["r://none"]},%s}}`)
	if m := h.expect(t, "the answer to listen 6", isAnswer("6")); m.Error == nil {
		t.Errorf("listen 6 for a resource that does not exist: want an error, got %s", h.seen[len(h.seen)-1])
	}
}

// TestStdioListenBesideOwnSubscription: over stdio a host that
// subscribes to a resource itself (resources/subscribe) and also names
// it in a listen hears of each update once untagged and once for the
// listen; ending either leaves the other its updates, and the hub is
// told to unsubscribe only when both have ended.
func TestStdioListenBesideOwnSubscription(t *testing.T) {
	p := junction.NewPack("p")
	p.AddResource(&mcp.Resource{URI: "r://a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	h := startListenHost(t, p)
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	h.expect(t, "the answer to initialize", isAnswer("0"))
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"r://a"}}`)
	h.expect(t, "the answer to resources/subscribe", isAnswer("1"))
	h.sendf(t, `{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["r://a"]},%s}}`)
	h.expect(t, "listen 2 acknowledged", isAck("2"))

	// updates sends an update (written before ResourceUpdated returns),
	// then a ping, and returns the tags the update came with before the
	// ping's answer ("" untagged).
	round := 10
	updates := func() []string {
		t.Helper()
		p.ResourceUpdated("r://a")
		round++
		id := fmt.Sprint(round)
		h.send(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		var tags []string
		h.expect(t, "the ping's answer", func(m listenMsg) bool {
			if m.Method == "notifications/resources/updated" {
				tags = append(tags, m.tag())
			}
			return isAnswer(id)(m)
		})
		slices.Sort(tags)
		return tags
	}
	if got := updates(); !slices.Equal(got, []string{"", "2"}) {
		t.Errorf("subscribed and listening: updates tagged %q; want one untagged and one for listen 2", got)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	h.sendf(t, `{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`)
	h.expect(t, "listen 3 acknowledged", isAck("3")) // listen 2's end is set up before it
	if got := updates(); !slices.Equal(got, []string{""}) {
		t.Errorf("subscribed, listen ended: updates tagged %q; want one untagged", got)
	}
	h.sendf(t, `{"jsonrpc":"2.0","id":4,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["r://a"]},%s}}`)
	h.expect(t, "listen 4 acknowledged", isAck("4"))
	h.send(t, `{"jsonrpc":"2.0","id":5,"method":"resources/unsubscribe","params":{"uri":"r://a"}}`)
	h.expect(t, "the answer to resources/unsubscribe", isAnswer("5"))
	if got := updates(); !slices.Equal(got, []string{"4"}) {
		t.Errorf("unsubscribed, listening: updates tagged %q; want one for listen 4", got)
	}
}
