//go:build unix

package toolbox

import (
	"bufio"
	"context"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/toolbox/plugin"
	toolboxv1 "github.com/junction-mcp/junction/toolbox/v1"
)

// servePlugin serves p in process (as its own binary would) and returns
// the handshake. It stops p at cleanup.
func servePlugin(t *testing.T, p *plugin.Plugin, token string) plugin.Handshake {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- p.Serve(ctx, &plugin.ServeOptions{Stdout: w, Getenv: func(k string) string {
			if k == plugin.EnvToken {
				return token
			}
			return ""
		}})
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the handshake: %v", err)
	}
	go io.Copy(io.Discard, r)
	hs, err := plugin.ParseHandshake(line)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func TestWatchForwardsChanges(t *testing.T) {
	p := plugin.New(plugin.Info{Name: "dyn", Version: "1"})
	plugin.AddTool(p, &toolboxv1.Tool{Name: "first"}, func(context.Context, *plugin.Call, struct{}) (*toolboxv1.CallToolResult, error) {
		return plugin.TextResult("1"), nil
	})
	p.AddResource(&toolboxv1.Resource{Uri: "dyn://r", Name: "r"}, func(_ context.Context, uri string) ([]*toolboxv1.ResourceContents, error) {
		return []*toolboxv1.ResourceContents{{Uri: uri, Body: &toolboxv1.ResourceContents_Text{Text: "r"}}}, nil
	})
	hs := servePlugin(t, p, "tok")
	src, err := NewURL("http://"+hs.Address, &Options{Name: "dyn", Protocol: hs.Protocol, Token: "tok", MinBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	hub := junction.New(nil)
	defer hub.Close()
	if err := hub.Add(ctx, "dyn", src, nil); err != nil {
		t.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var updated []string
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updated = append(updated, req.Params.URI)
			mu.Unlock()
		},
	})
	cs, err := client.Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	toolNames := func() []string {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("ListTools: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	if got := toolNames(); !slices.Equal(got, []string{"dyn__first"}) {
		t.Fatalf("tools = %v", got)
	}
	// Watch is a stream the plugin starts serving asynchronously; keep
	// adding until the hub reports the change.
	plugin.AddTool(p, &toolboxv1.Tool{Name: "second"}, func(context.Context, *plugin.Call, struct{}) (*toolboxv1.CallToolResult, error) {
		return plugin.TextResult("2"), nil
	})
	waitFor(t, 10*time.Second, "the new tool to be listed", func() bool {
		if slices.Contains(toolNames(), "dyn__second") {
			return true
		}
		p.NotifyCatalogChanged()
		return false
	})

	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "dyn://r"}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	waitFor(t, 10*time.Second, "resources/updated", func() bool {
		p.NotifyResourceUpdated("dyn://r")
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(updated, "dyn://r")
	})
}

func TestMetaReachesPlugin(t *testing.T) {
	p := plugin.New(plugin.Info{Name: "meta", Version: "1"})
	p.HandleTool(&toolboxv1.Tool{Name: "meta"}, func(ctx context.Context, call *plugin.Call) (*toolboxv1.CallToolResult, error) {
		return plugin.TextResult(string(call.Meta)), nil
	})
	hs := servePlugin(t, p, "")
	src, err := NewURL("http://"+hs.Address, &Options{Name: "meta", Protocol: hs.Protocol})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	params := &mcp.CallToolParamsRaw{Name: "meta", Meta: mcp.Meta{"trace": "abc", "progressToken": "p"}}
	res, err := src.CallTool(t.Context(), &mcp.CallToolRequest{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"trace":"abc"}` {
		t.Errorf("meta seen by the plugin = %s, want {\"trace\":\"abc\"}", got)
	}
}
