package diagram

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	reaper.RunIfReaper() // the reapers of command nodes run this binary
	goleak.VerifyTestMain(m)
}

// testEnv is a hub with an in-test "text" pack and the diagram pack,
// and a go-sdk client connected to it over in-memory transports.
type testEnv struct {
	hub     *junction.Hub
	pack    *Pack
	cs      *mcp.ClientSession
	dir     string
	counter *atomic.Int64
	closed  bool
}

type textIn struct {
	Text string `json:"text"`
}

type textOut struct {
	Text string `json:"text"`
}

type countOut struct {
	N int64 `json:"n"`
}

type slowIn struct {
	Seconds float64 `json:"seconds"`
}

type bigIn struct {
	Bytes int `json:"bytes"`
}

// textPack is a second source for tool nodes: shout, count, slow, big.
func textPack(counter *atomic.Int64) *junction.Pack {
	p := junction.NewPack("text")
	junction.AddTool(p, &mcp.Tool{Name: "shout", Description: "upper-case text"}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, textOut, error) {
		return nil, textOut{Text: strings.ToUpper(in.Text) + "!"}, nil
	})
	junction.AddTool(p, &mcp.Tool{Name: "count", Description: "count calls"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, countOut, error) {
		return nil, countOut{N: counter.Add(1)}, nil
	})
	junction.AddTool(p, &mcp.Tool{Name: "slow", Description: "wait, or until cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, textOut, error) {
		select {
		case <-time.After(time.Duration(in.Seconds * float64(time.Second))):
			return nil, textOut{Text: "slept"}, nil
		case <-ctx.Done():
			return nil, textOut{}, ctx.Err()
		}
	})
	junction.AddTool(p, &mcp.Tool{Name: "big", Description: "return a big text"}, func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, textOut, error) {
		return nil, textOut{Text: strings.Repeat("x", in.Bytes)}, nil
	})
	junction.AddTool(p, &mcp.Tool{Name: "fail", Description: "always fails"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, textOut, error) {
		return nil, textOut{}, errBoom
	})
	return p
}

var errBoom = &boomError{}

type boomError struct{}

func (*boomError) Error() string { return "boom" }

// newEnv builds the test hub over dir (t.TempDir() when empty). tweak, if
// non-nil, adjusts the pack options.
func newEnv(t *testing.T, dir string, tweak func(*Options)) *testEnv {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	ctx := t.Context()
	hub := junction.New(nil)
	e := &testEnv{hub: hub, dir: dir, counter: new(atomic.Int64)}
	if err := hub.Add(ctx, "text", textPack(e.counter), &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	opts := Options{Hub: hub, DataDir: dir}
	if tweak != nil {
		tweak(&opts)
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.pack = p
	if err := hub.Add(ctx, Name, p.Pack, &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.cs = cs
	t.Cleanup(func() {
		cs.Close()
		e.close(t)
	})
	return e
}

// close stops the hub and the pack, as a daemon shutting down does.
func (e *testEnv) close(t *testing.T) {
	if e.closed {
		return
	}
	e.closed = true
	e.hub.Close()
	if err := e.pack.Close(); err != nil {
		t.Errorf("pack.Close: %v", err)
	}
}

// call calls a tool over MCP and decodes its JSON text into a map.
func (e *testEnv) call(t *testing.T, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := e.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("CallTool(%s): %d content blocks, want 1", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("CallTool(%s): result is not a JSON object: %v\n%s", name, err, text)
	}
	return out, res.IsError
}

// poll calls see_result until the run is no longer running.
func (e *testEnv) poll(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := e.call(t, "see_result", map[string]any{"session_id": id})
		if out["status"] != StatusRunning {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still running after 10s: %v", id, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitRunning waits until the run has executed node, so a test can act
// while a later node is in progress.
func (e *testEnv) waitExecuted(t *testing.T, id, node string) {
	t.Helper()
	if err := e.pack.waitStore(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := e.pack.store.Run(t.Context(), id)
		if err == nil {
			for _, n := range r.ExecutedNodes {
				if n == node {
					return
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s did not execute %s within 10s", id, node)
}
