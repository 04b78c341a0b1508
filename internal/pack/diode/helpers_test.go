package diode

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/dataplane"
	"github.com/junction-mcp/junction/internal/files"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect serves a pack built from opts (with sel narrowing the view) to
// an in-memory go-sdk client; copts may set client handlers.
func connect(t *testing.T, opts *Options, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	hub := junction.New(&junction.Options{Name: ServerName, Title: ServerTitle})
	if err := hub.Add(ctx, Name, New(opts), &junction.SourceOptions{Prefix: junction.PrefixNever}); err != nil {
		t.Fatal(err)
	}
	view, err := hub.NewView("", junction.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, copts).Connect(ctx, dataplane.New(view, nil).Transport(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		hub.Close()
	})
	return cs
}

// env is a Getenv over a map.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// call calls a tool and returns its error text ("" on success) and its
// structured output decoded into a map.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, map[string]any) {
	t.Helper()
	return callCtx(t.Context(), t, cs, name, args)
}

func callCtx(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args any) (string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return "", out
}

// listener starts a files.Listener on a fresh root (127.0.0.1) and
// returns its port and root.
func listener(t *testing.T) (int, string) {
	t.Helper()
	root := t.TempDir()
	l, err := files.NewListener(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(l)
	t.Cleanup(func() { srv.Close(); l.Close() })
	return portOf(t, srv.URL), root
}

func portOf(t *testing.T, u string) int {
	t.Helper()
	p, err := strconv.Atoi(u[strings.LastIndex(u, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
