package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeConfig writes a config file atomically (temp file + rename, as
// editors and config managers do) and returns its path.
func writeConfig(t *testing.T, path, content string) string {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// everythingCmd returns node and the script of the real npm
// server-everything, for a config file.
func everythingCmd(t *testing.T) (node, script string) {
	node, mods := nodeTools(t)
	return node, filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-everything"), "dist", "index.js")
}

type hubStatus struct {
	Sources []struct {
		Name, Kind, State, Error string
		Tools, PID               int
	}
}

func getStatus(t *testing.T, mcpURL, token string) hubStatus {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(mcpURL, "/mcp")+"/status", nil)
	hc := httpClient(token)
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET /status: %v", err)
	}
	defer resp.Body.Close()
	var st hubStatus
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("/status: %v: %s", err, b)
	}
	return st
}

func (s hubStatus) source(name string) (state string, pid int) {
	for _, src := range s.Sources {
		if src.Name == name {
			return src.State, src.PID
		}
	}
	return "", 0
}

// waitFor polls cond every 100ms until it holds or the bound passes.
func waitFor(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", bound, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRealUpstreamsBehindServe serves the npm server-everything and
// server-filesystem through "junction serve -config" and uses their tools,
// prompts and resources, with progress and cancellation end to end.
func TestRealUpstreamsBehindServe(t *testing.T) {
	node, everything := everythingCmd(t)
	_, mods := nodeTools(t)
	fsScript := filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-filesystem"), "dist", "index.js")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the filesystem"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
  files:
    command: %q
    args: [%q, %q]
`, node, everything, node, fsScript, root))
	url := startServe(t, "-insecure-no-auth", "-config", cfg)

	var mu sync.Mutex
	var progress []float64
	client := newClient(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Progress)
		mu.Unlock()
	}})
	cs := connectHTTPClient(t, client, url, "")
	waitFor(t, "both upstreams' tools", 60*time.Second, func() bool {
		names := toolNames(t, cs)
		return hasName(names, "everything__echo") && hasName(names, "files__list_directory")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "through the hub"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through the hub") {
		t.Fatalf("everything__echo = %v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_text_file", Arguments: map[string]any{"path": filepath.Join(root, "hello.txt")}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hello from the filesystem") {
		t.Fatalf("files__read_text_file = %+v, %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_text_file", Arguments: map[string]any{"path": "/etc/passwd"}})
	if err != nil || !res.IsError {
		t.Errorf("reading outside the allowed root: %+v, %v; want the upstream's tool error passed through", res, err)
	}

	// Prompts are prefixed like tools; resources keep their URIs.
	p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything__args-prompt", Arguments: map[string]string{"city": "Lisbon"}})
	if err != nil || !strings.Contains(fmt.Sprint(p.Messages[0].Content.(*mcp.TextContent).Text), "Lisbon") {
		t.Errorf("everything__args-prompt = %v, %v", p, err)
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"})
	if err != nil || len(r.Contents) == 0 || r.Contents[0].Text == "" {
		t.Errorf("read demo resource = %v, %v", r, err)
	}

	// Progress from the upstream reaches the host, before the result.
	params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4}}
	params.SetProgressToken("long-1")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("long-running operation: %v, %v", res, err)
	}
	// go-sdk's client hands notifications to their handler from a queue
	// of their own, so the last ones may come after the result: wait for
	// them. All four arrive, in order, even when the server's roots
	// request turns the call into a bridge: the progress that comes
	// between the question and the client's retry goes with the retry.
	waitFor(t, "progress 1, 2, 3, 4 through the hub", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(progress, []float64{1, 2, 3, 4})
	})

	// Cancellation: cancel a long call; it ends at once, and the upstream
	// keeps serving other calls.
	cctx, ccancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 30, "steps": 30}})
		errc <- err
	}()
	time.Sleep(500 * time.Millisecond)
	ccancel()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("cancelled call returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled call did not return within 10s")
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("cancellation took %v", time.Since(start))
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "5") {
		t.Errorf("get-sum after a cancelled call = %v, %v", res, err)
	}
}

// TestUpstreamKilledMidCall kills an upstream's process during a call: the
// call gets an error, the hub reconnects, and the next call works.
func TestUpstreamKilledMidCall(t *testing.T) {
	node, everything := everythingCmd(t)
	cfg := writeConfig(t, filepath.Join(t.TempDir(), "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
`, node, everything))
	url := startServe(t, "-insecure-no-auth", "-config", cfg)
	cs := connectHTTP(t, url, "")
	var pid int
	waitFor(t, "the upstream to connect", 60*time.Second, func() bool {
		var state string
		state, pid = getStatus(t, url, "").source("everything")
		return state == "connected" && pid > 0
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 20, "steps": 20}})
		done <- result{res, err}
	}()
	time.Sleep(700 * time.Millisecond)
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill upstream process group %d: %v", pid, err)
	}
	select {
	case r := <-done:
		if r.err == nil && !r.res.IsError {
			t.Errorf("call whose upstream died succeeded: %+v", r.res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("call did not end within 20s of its upstream dying")
	}
	waitFor(t, "the upstream to reconnect with a new process", 60*time.Second, func() bool {
		state, newPID := getStatus(t, url, "").source("everything")
		return state == "connected" && newPID > 0 && newPID != pid
	})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "again"}})
	if err != nil || res.IsError {
		t.Errorf("call after reconnect = %v, %v", res, err)
	}
}

// TestReloadUnderLoad changes the config file while a client keeps calling
// an unchanged upstream: servers are added, changed and removed, the
// unchanged one keeps its process, no call fails, and a broken file
// changes nothing.
func TestReloadUnderLoad(t *testing.T) {
	bin := junctionBin(t)
	dir := t.TempDir()
	server := func(name string, extra ...string) string {
		args := append([]string{"serve", "-log-level", "warn"}, extra...)
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		return fmt.Sprintf("  %s:\n    command: %q\n    args: [%s]\n", name, bin, strings.Join(quoted, ", "))
	}
	path := filepath.Join(dir, "junction.yaml")
	writeConfig(t, path, "servers:\n"+server("stay")+server("change")+server("gone"))
	url := startServe(t, "-insecure-no-auth", "-config", path)
	cs := connectHTTP(t, url, "")
	waitFor(t, "three upstreams", 30*time.Second, func() bool {
		n := toolNames(t, cs)
		return hasName(n, "stay__junction_version") && hasName(n, "change__junction_version") && hasName(n, "gone__junction_version")
	})
	_, stayPID := getStatus(t, url, "").source("stay")
	_, changePID := getStatus(t, url, "").source("change")

	// Load on the unchanged server for the whole test.
	var calls, failures atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stay__junction_version"})
				cancel()
				calls.Add(1)
				if err != nil || res.IsError {
					failures.Add(1)
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()

	writeConfig(t, path, "servers:\n"+server("stay")+server("change", "-no-default-packs", "-pack", "core")+server("added"))
	waitFor(t, "the reload", 30*time.Second, func() bool {
		n := toolNames(t, cs)
		return hasName(n, "added__junction_version") && !hasName(n, "gone__junction_version")
	})
	waitFor(t, "the changed server to restart", 30*time.Second, func() bool {
		state, pid := getStatus(t, url, "").source("change")
		return state == "connected" && pid != changePID
	})
	if _, pid := getStatus(t, url, "").source("stay"); pid != stayPID {
		t.Errorf("unchanged upstream was restarted: pid %d -> %d", stayPID, pid)
	}

	// A broken file changes nothing.
	writeConfig(t, path, "servers:\n  bad: {command: \n")
	time.Sleep(1500 * time.Millisecond)
	n := toolNames(t, cs)
	if !hasName(n, "added__junction_version") || !hasName(n, "stay__junction_version") {
		t.Errorf("tools after a broken config: %v", n)
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if calls.Load() < 10 {
		t.Errorf("only %d calls made during the reloads", calls.Load())
	}
	if f := failures.Load(); f != 0 {
		t.Errorf("%d of %d calls to the unchanged upstream failed during reloads", f, calls.Load())
	}
}

// TestProfilesAndStatusCommand serves two profiles and checks each sees
// only its part, by path and by header, and that "junction status" reads
// a running hub.
func TestProfilesAndStatusCommand(t *testing.T) {
	bin := junctionBin(t)
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  one:
    command: %q
    args: [serve, -log-level, warn]
  two:
    command: %q
    args: [serve, -log-level, warn]
profiles:
  onlyone:
    servers: [one]
  picked:
    tools: [two__junction_version, junction_version]
`, bin, bin))
	const token = "profile-token"
	url := startServe(t, "-token", token, "-config", cfg)
	all := connectHTTP(t, url, token)
	waitFor(t, "both upstreams", 30*time.Second, func() bool {
		n := toolNames(t, all)
		return hasName(n, "one__junction_version") && hasName(n, "two__junction_version")
	})
	base := strings.TrimSuffix(url, "/mcp")
	onlyone := toolNames(t, connectHTTP(t, base+"/mcp/p/onlyone", token))
	if len(onlyone) != 1 || onlyone[0] != "one__junction_version" {
		t.Errorf("profile onlyone serves %v, want only one__junction_version", onlyone)
	}
	picked := toolNames(t, connectHTTP(t, base+"/mcp/p/picked", token))
	if len(picked) != 2 || !hasName(picked, "two__junction_version") || !hasName(picked, "junction_version") {
		t.Errorf("profile picked serves %v", picked)
	}
	resp, _ := post(t, url, token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, map[string]string{"X-Junction-Profile": "nosuch"})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown profile by header: HTTP %d, want 404", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := connectHTTP(t, base+"/mcp/p/onlyone", token).CallTool(ctx, &mcp.CallToolParams{Name: "two__junction_version"}); err == nil {
		t.Error("profile onlyone let a call to two__junction_version through")
	}

	out, errOut, code := runJunction(t, []string{"JUNCTION_TOKEN=" + token}, "status", "-url", url)
	if code != 0 || !strings.Contains(out, "one") || !strings.Contains(out, "connected") || !strings.Contains(out, "profiles: onlyone, picked") {
		t.Errorf("junction status: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSIGHUPRereadsLock runs the re-lock workflow through the binary: a
// lock whose pin no longer matches withholds the tool under drift: block
// once SIGHUP makes junction re-read it, and "junction lock" followed by
// SIGHUP serves it again.
func TestSIGHUPRereadsLock(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "junction.lock.json")
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf("lock: %s\npacks:\n  core: {drift: block}\n", lock))
	srv := startServer(t, "-insecure-no-auth", "-config", cfg)
	cs := connectHTTP(t, srv.URL, "")
	if !hasName(toolNames(t, cs), "junction_version") {
		t.Fatal("junction_version not served before any lock exists")
	}
	// A lock that pins another description: what a poisoned tool looks like.
	if out, errOut, code := runJunction(t, nil, "lock", "-config", cfg); code != 0 {
		t.Fatalf("junction lock: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	m["tools"].([]any)[0].(map[string]any)["description_sha256"] = "0000"
	b, _ = json.Marshal(m)
	writeConfig(t, lock, string(b))
	srv.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the drifted tool to be withheld after SIGHUP", 15*time.Second, func() bool {
		return !hasName(toolNames(t, cs), "junction_version")
	})
	if out, errOut, code := runJunction(t, nil, "lock", "-config", cfg); code != 0 {
		t.Fatalf("junction lock: exit %d\n%s%s", code, out, errOut)
	}
	srv.cmd.Process.Signal(syscall.SIGHUP)
	waitFor(t, "the tool to come back after re-locking and SIGHUP", 15*time.Second, func() bool {
		return hasName(toolNames(t, cs), "junction_version")
	})
}
