package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAnnotationsVerbatim: the real server-filesystem annotates its tools
// with some hints only ({"readOnlyHint": true, "openWorldHint": false}).
// Listed through a hub (a stdio upstream), and through a second hub in
// front of the first (an HTTP upstream), every tool's annotations are
// the server's own bytes: no hint added, none reordered.
func TestAnnotationsVerbatim(t *testing.T) {
	node, mods := nodeTools(t)
	fsScript := filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-filesystem"), "dist", "index.js")
	root := t.TempDir()
	direct := stdioToolAnnotations(t, node, fsScript, root)
	if len(direct) < 5 {
		t.Fatalf("server-filesystem listed %d annotated tools directly: %v", len(direct), direct)
	}
	dir := t.TempDir()
	cfgA := writeConfig(t, filepath.Join(dir, "a.yaml"), fmt.Sprintf("servers:\n  files:\n    command: %q\n    args: [%q, %q]\n", node, fsScript, root))
	urlA := startServe(t, "-insecure-no-auth", "-no-default-packs", "-config", cfgA)
	cfgB := writeConfig(t, filepath.Join(dir, "b.yaml"), fmt.Sprintf("servers:\n  a:\n    url: %q\n", urlA))
	urlB := startServe(t, "-insecure-no-auth", "-no-default-packs", "-config", cfgB)

	for _, hub := range []struct{ name, url, prefix string }{{"stdio upstream", urlA, "files__"}, {"HTTP upstream", urlB, "a__files__"}} {
		var listed map[string]string
		waitFor(t, hub.name+": the files tools listed", 60*time.Second, func() bool {
			listed = httpToolAnnotations(t, hub.url)
			return len(listed) >= len(direct)
		})
		for name, want := range direct {
			if got, ok := listed[hub.prefix+name]; !ok {
				t.Errorf("%s: %s%s not listed (listed: %v)", hub.name, hub.prefix, name, listed)
			} else if got != want {
				t.Errorf("%s: %s%s annotations = %s, want the server's %s", hub.name, hub.prefix, name, got, want)
			}
		}
	}
}

// toolAnnotations returns the compacted annotations of each annotated
// tool of a raw tools/list result.
func toolAnnotations(t *testing.T, result json.RawMessage) map[string]string {
	t.Helper()
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			Annotations json.RawMessage `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("tools/list result: %v: %s", err, result)
	}
	out := make(map[string]string)
	for _, tool := range r.Tools {
		if tool.Annotations != nil {
			var b bytes.Buffer
			json.Compact(&b, tool.Annotations)
			out[tool.Name] = b.String()
		}
	}
	return out
}

// stdioToolAnnotations lists the tools of a stdio server, speaking to it
// directly, line by line.
func stdioToolAnnotations(t *testing.T, command string, args ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Env = childEnv(t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`+"\n")
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 16<<20)
	for lines.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(lines.Bytes(), &m) == nil && string(m.ID) == "2" {
			return toolAnnotations(t, m.Result)
		}
	}
	t.Fatalf("%s ended without answering tools/list", command)
	return nil
}

// httpToolAnnotations lists a hub's tools over HTTP in a session of its
// own, from the raw response.
func httpToolAnnotations(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, _ := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, nil)
	h := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	post(t, url, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, h)
	_, body := post(t, url, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, h)
	if !strings.HasPrefix(strings.TrimSpace(body), "{") { // an event stream: the event that holds the answer
		for line := range strings.Lines(body) {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && strings.HasPrefix(data, "{") {
				body = data
			}
		}
	}
	var m struct{ Result json.RawMessage }
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Result == nil {
		t.Fatalf("tools/list from %s: %v: %s", url, err, body)
	}
	return toolAnnotations(t, m.Result)
}
