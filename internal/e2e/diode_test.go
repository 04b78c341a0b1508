package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	socks5 "github.com/armon/go-socks5"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const diodeUUID = "0b6f7c1e-1234-4abc-9def-0123456789ab"

// startListenerProc runs "junction ARGS" (files serve or deploy-host on
// 127.0.0.1:0) and returns the host:port from its banner. It is stopped
// with SIGTERM at cleanup and must exit cleanly.
func startListenerProc(t *testing.T, banner string, args ...string) string {
	t.Helper()
	return startListener(t, nil, banner, args...).Addr
}

// startListener is [startListenerProc] with extra environment, returning
// the process (Addr set), for tests that read its stderr.
func startListener(t *testing.T, env []string, banner string, args ...string) *serveProc {
	t.Helper()
	prefix := "junction: " + banner + " listening on http://"
	cmd := exec.Command(junctionBin(t), args...)
	cmd.Env = append(childEnv(t.TempDir()), env...)
	w := newLineWatcher(prefix)
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = stopTimeout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{stderr: w, cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.stop(t) })
	select {
	case line := <-w.found:
		p.Addr, _, _ = strings.Cut(strings.TrimPrefix(line, prefix), "/")
		return p
	case <-p.exited:
		t.Fatalf("junction %v exited: %v\n%s", args, p.err, w.String())
	case <-time.After(startTimeout):
		t.Fatalf("junction %v did not listen within %v\n%s", args, startTimeout, w.String())
	}
	return nil
}

// connectMCP spawns "junction mcp ARGS" with extra environment and
// connects a go-sdk client over stdio.
func connectMCP(t *testing.T, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(junctionBin(t), append([]string{"mcp"}, args...)...)
	cmd.Env = append(childEnv(t.TempDir()), env...)
	stderr := newOutput()
	cmd.Stderr = stderr
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil)
	if err != nil {
		t.Fatalf("connecting to junction mcp %v: %v\n%s", args, err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("junction mcp stderr:\n%s", stderr.String())
		}
	})
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error %s", name, args, res.Content[0].(*mcp.TextContent).Text)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &out)
	return out
}

func deployTarball(t *testing.T, path string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := "<h1>deployed</h1>"
	tw.WriteHeader(&tar.Header{Name: "site/", Typeflag: tar.TypeDir, Mode: 0o755})
	tw.WriteHeader(&tar.Header{Name: "site/index.html", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))})
	tw.Write([]byte(body))
	tw.Close()
	zw.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// runDiodeWorkflow pushes, pulls (inline, to a directory, to a file) and
// deploys through a "junction mcp" session whose file tools reach the
// listeners at filesHost / deployHost.
func runDiodeWorkflow(t *testing.T, cs *mcp.ClientSession, filesHost, filesPort string, fileRoot, deployRoot string) {
	t.Helper()
	work := t.TempDir()
	port := atoi(t, filesPort)
	local := filepath.Join(work, "report.txt")
	os.WriteFile(local, []byte(strings.Repeat("line\n", 1000)), 0o600)
	out := callTool(t, cs, "diode_file_push", map[string]any{"peer_host": filesHost, "port": port, "remote_path": "in/report v1.txt", "local_file_path": local})
	if out["status_code"] != 204.0 {
		t.Errorf("push = %v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(fileRoot, "in", "report v1.txt")); len(b) != 5000 {
		t.Errorf("pushed file has %d bytes, want 5000", len(b))
	}
	out = callTool(t, cs, "diode_file_pull", map[string]any{"peer_host": filesHost, "port": port, "remote_path": "in/report v1.txt"})
	if b, _ := base64.StdEncoding.DecodeString(out["content_base64"].(string)); len(b) != 5000 || out["message"] != "inline content, 5000 bytes" {
		t.Errorf("inline pull = %v", out["message"])
	}
	for _, tc := range []struct{ local, want string }{
		{filepath.Join(work, "dl") + "/", filepath.Join(work, "dl", "report v1.txt")},
		{work, filepath.Join(work, "report v1.txt")},
		{filepath.Join(work, "copy.txt"), filepath.Join(work, "copy.txt")},
	} {
		out = callTool(t, cs, "diode_file_pull", map[string]any{"peer_host": filesHost, "port": port, "remote_path": "in/report v1.txt", "local_path": tc.local})
		if out["local_path_written"] != tc.want || out["message"] != "wrote 5000 bytes" {
			t.Errorf("pull to %s = %v", tc.local, out)
		}
	}

	pkg := filepath.Join(work, "site.tar.gz")
	deployTarball(t, pkg)
	out = callTool(t, cs, "diode_deploy", map[string]any{"package_path": pkg})
	if out["status_code"] != 204.0 || out["log_status_code"] != 200.0 || out["local_path"] != filepath.Join(work, diodeUUID+".tar.gz") {
		t.Fatalf("deploy = %v", out)
	}
	if log := out["log_content"].(string); !strings.Contains(log, "unpack: 1 files, 1 directories") || !strings.HasSuffix(log, "result: ok\n") {
		t.Errorf("deploy log:\n%s", log)
	}
	if b, _ := os.ReadFile(filepath.Join(deployRoot, diodeUUID, "site", "index.html")); string(b) != "<h1>deployed</h1>" {
		t.Errorf("deployed index.html = %q", b)
	}
	// The full log through diode_file_pull, as the instructions suggest.
	out = callTool(t, cs, "diode_file_pull", map[string]any{"peer_host": out["log_peer_host"], "port": out["log_port"], "remote_path": out["log_remote_path"]})
	if out["status_code"] != 200.0 {
		t.Errorf("log pull = %v", out)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a port: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestDiodeMCPEndToEnd(t *testing.T) {
	t.Parallel()
	fileRoot, deployRoot := t.TempDir(), t.TempDir()
	filesAddr := startListenerProc(t, "files", "files", "serve", "-fileroot", fileRoot, "-insecure-no-auth", "127.0.0.1:0")
	deployAddr := startListenerProc(t, "deploy host", "deploy-host", "-root", deployRoot, "-insecure-no-auth", "127.0.0.1:0")
	filesHost, filesPort, _ := net.SplitHostPort(filesAddr)

	env := []string{"DIODE_MCP_DEPLOY_TARGET=diode://" + deployAddr, "DIODE_MCP_DEPLOY_UUID=" + strings.ToUpper(diodeUUID)}
	cs := connectMCP(t, env, "-mcp-preset", "deploy", "--mcp-tool=diode_file_push")
	init := cs.InitializeResult()
	if init.ServerInfo.Name != "diode" || init.ServerInfo.Title != "Diode Network Client" || !strings.HasSuffix(init.Instructions, "This server exposes a subset of tools (see -mcp-preset / -mcp-tools / DIODE_MCP_TOOLS).") {
		t.Errorf("initialize = %+v, instructions %q", init.ServerInfo, init.Instructions)
	}
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"diode_deploy", "diode_file_pull", "diode_file_push", "diode_get_client_info", "diode_get_version"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	runDiodeWorkflow(t, cs, filesHost, filesPort, fileRoot, deployRoot)
}

// TestDiodeMCPThroughSOCKS5 runs the same workflow with Diode host names,
// reached through a real SOCKS5 server (armon/go-socks5) that resolves
// them to 127.0.0.1, as a Diode client's socksd would route them.
func TestDiodeMCPThroughSOCKS5(t *testing.T) {
	t.Parallel()
	var lookups atomic.Int64
	srv, err := socks5.New(&socks5.Config{Resolver: resolverFunc(func(ctx context.Context, name string) (context.Context, net.IP, error) {
		lookups.Add(1)
		return ctx, net.IPv4(127, 0, 0, 1), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	t.Cleanup(func() { ln.Close(); <-done })

	fileRoot, deployRoot := t.TempDir(), t.TempDir()
	filesAddr := startListenerProc(t, "files", "files", "serve", "-fileroot", fileRoot, "-insecure-no-auth", "127.0.0.1:0")
	deployAddr := startListenerProc(t, "deploy host", "deploy-host", "-root", deployRoot, "-insecure-no-auth", "127.0.0.1:0")
	_, filesPort, _ := net.SplitHostPort(filesAddr)
	_, deployPort, _ := net.SplitHostPort(deployAddr)
	env := []string{
		"DIODE_MCP_DEPLOY_TARGET=diode://myapp-deploy.diode.link:" + deployPort,
		"DIODE_MCP_DEPLOY_UUID=" + diodeUUID,
		"DIODE_SOCKS5=" + ln.Addr().String(),
	}
	cs := connectMCP(t, env, "-mcp-tools", "diode_file_push,diode_file_pull,diode_deploy")
	runDiodeWorkflow(t, cs, "0x"+strings.Repeat("ab", 20), filesPort, fileRoot, deployRoot)
	if lookups.Load() < 7 {
		t.Errorf("SOCKS5 server saw %d connections, want every transfer (7+)", lookups.Load())
	}
}

type resolverFunc func(ctx context.Context, name string) (context.Context, net.IP, error)

func (f resolverFunc) Resolve(ctx context.Context, name string) (context.Context, net.IP, error) {
	return f(ctx, name)
}

func TestDiodeMCPUnknownNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-mcp-preset", "nope"}, "", `junction: unknown -mcp-preset "nope" (use minimal, chain, files, deploy, all)`},
		{[]string{"--mcp-tool", "diode_nope"}, "", `junction: -mcp-tool: unknown MCP tool "diode_nope" (known: diode_deploy, diode_file_pull, diode_file_push, diode_get_client_info, diode_get_version, diode_query_address)`},
		{nil, "DIODE_MCP_TOOLS=x", `junction: DIODE_MCP_TOOLS: unknown MCP tool "x"`},
		{[]string{"-mcp-tools", " , "}, "", "junction: MCP tool selection is empty (check -mcp-preset, -mcp-tools, -mcp-tool, DIODE_MCP_TOOLS)"},
	} {
		cmd := exec.Command(junctionBin(t), append([]string{"mcp"}, tc.args...)...)
		cmd.Env = childEnv(t.TempDir())
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}` + "\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = stopTimeout
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("junction mcp %v: %v, want exit status 1", tc.args, err)
		}
		if stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), tc.want) {
			t.Errorf("junction mcp %v: stdout %q, stderr %q; want nothing served and %q", tc.args, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestPushPullCommands runs "junction push" and "junction pull" against a
// real listener; stderr is not a terminal, so no progress bar is drawn.
func TestPushPullCommands(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	addr := startListenerProc(t, "files", "files", "serve", "-fileroot", root, "-token", "s3cret", "127.0.0.1:0")
	local := filepath.Join(work, "data.bin")
	os.WriteFile(local, bytes.Repeat([]byte{7}, 3<<20), 0o600)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(junctionBin(t), args...)
		cmd.Env = append(childEnv(t.TempDir()), "JUNCTION_FILES_TOKEN=s3cret")
		cmd.Dir = work
		cmd.WaitDelay = stopTimeout
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("push", local, addr+":dir/d.bin"); err != nil || out != "push ok: "+local+" -> http://"+addr+"/dir/d.bin\n" {
		t.Errorf("push = %q, %v", out, err)
	}
	if out, err := run("push", local, addr); err != nil || !strings.HasPrefix(out, "push ok: ") {
		t.Errorf("push without remote = %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(root, "data.bin")); err != nil {
		t.Errorf("push without remote did not keep the base name: %v", err)
	}
	if out, err := run("pull", addr+":dir/d.bin", "got/"); err != nil || !strings.HasPrefix(out, "pull ok: ") {
		t.Errorf("pull = %q, %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "got", "d.bin")); len(b) != 3<<20 {
		t.Errorf("pulled %d bytes", len(b))
	}
	if out, err := run("pull", addr+":missing"); err == nil || out != "junction: pull failed: HTTP 404: 404 page not found\n" {
		t.Errorf("pull missing = %q, %v", out, err)
	}
	small := startListenerProc(t, "files", "files", "serve", "-fileroot", t.TempDir(), "-token", "s3cret", "-max-body", "1048576", "127.0.0.1:0")
	want := "junction: push failed: HTTP 413: request body too large: this listener takes at most 1048576 bytes (1 MiB); send a smaller file or raise files serve -max-body\n"
	if out, err := run("push", local, small+":big.bin"); err == nil || out != want {
		t.Errorf("push over the listener's limit = %q, %v; want %q", out, err, want)
	}
	if out, _ := run("push", local, "a", "b"); out != "junction: too many arguments (quote <peer>:<port>:<remote-path> as one token)\n" {
		t.Errorf("push with 3 arguments = %q", out)
	}
	if out, _ := run("push", local, "[::1]8080"); out != "junction: expected :port:path after IPv6\n" {
		t.Errorf("push [::1]8080 = %q", out)
	}
	if out, _ := run("pull", "host:99999:x"); out != "junction: invalid port\n" {
		t.Errorf("pull bad port = %q", out)
	}
	if out, _ := run("pull", "hostonly"); out != "junction: expected host:port:remote_path (use [ipv6]:port:path for IPv6)\n" {
		t.Errorf("pull hostonly = %q", out)
	}
}

// TestInspectorCLIDiode lists and calls the diode tools with the official
// MCP inspector CLI.
func TestInspectorCLIDiode(t *testing.T) {
	t.Parallel()
	node, modules := nodeTools(t)
	pkg := npmPackageDir(t, modules, "@modelcontextprotocol/inspector-cli")
	inspect := func(args ...string) string {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(pkg, "build", "index.js")}, args...)...)
		// index.js looks for its package.json relative to the working
		// directory.
		cmd.Dir = filepath.Join(pkg, "build")
		cmd.Env = childEnv(t.TempDir())
		cmd.WaitDelay = stopTimeout
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("inspector-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := inspect(junctionBin(t), "mcp", "-mcp-preset", "deploy", "--method", "tools/list")
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Tools) != 4 {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	out = inspect(junctionBin(t), "mcp", "-mcp-preset", "deploy", "--method", "tools/call", "--tool-name", "diode_deploy", "--tool-arg", "package_path=/nonexistent/x.tar.gz")
	if !strings.Contains(out, "deploy_token is required when DIODE_MCP_DEPLOY_UUID is not set") || !strings.Contains(out, `"isError": true`) {
		t.Errorf("tools/call diode_deploy:\n%s", out)
	}
}

// TestServeDiodePack checks the same pack inside "junction serve", with
// the hub's own preset selection.
func TestServeDiodePack(t *testing.T) {
	t.Parallel()
	cs := connectStdio(t, "-pack", "diode", "-preset", "minimal")
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"diode_get_client_info", "diode_get_version"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "diode_get_client_info"})
	if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "not connected to the Diode network" {
		t.Errorf("diode_get_client_info = %v, %v", res, err)
	}
}
