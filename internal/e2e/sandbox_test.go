package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/junction-mcp/junction/internal/reaper"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// skipWithoutSandbox skips a test when the kernel cannot give junction's
// sandbox its namespaces (user namespaces switched off). Everything else
// the sandbox lacks is a failure: level strict refuses to start.
func skipWithoutSandbox(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	if err != nil {
		t.Skipf("skipping: no user namespaces on this system (%v)", err)
	}
	if strings.TrimSpace(string(b)) == "0" {
		t.Skip("skipping: user namespaces are disabled (user.max_user_namespaces = 0)")
	}
}

// buildHostile builds testdata/hostile into a directory of its own (a
// sandboxed binary may read its own directory) and returns its path.
func buildHostile(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "hostile")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	b, err := exec.CommandContext(ctx, "go", "build", "-o", out, "./testdata/hostile").CombinedOutput()
	if err != nil {
		t.Fatalf("building testdata/hostile: %v\n%s", err, b)
	}
	return out
}

// sandboxSource is what GET /status says of one source's sandbox.
type sandboxSource struct {
	Name, State, Sandbox string
	PID                  int
	SandboxEvents        []struct{ Text string } `json:"sandbox_events"`
}

func sandboxStatus(t *testing.T, mcpURL, name string) sandboxSource {
	t.Helper()
	b := httpGetBody(t, strings.TrimSuffix(mcpURL, "/mcp")+"/status", http.StatusOK)
	var st struct{ Sources []sandboxSource }
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("/status: %v: %s", err, b)
	}
	for _, s := range st.Sources {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("/status has no source %q: %s", name, b)
	return sandboxSource{}
}

// httpGetBody GETs u and fails the test unless the status is want.
func httpGetBody(t *testing.T, u string, want int) []byte {
	t.Helper()
	hc := httpClient("")
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s, want %d: %s", u, resp.Status, want, b)
	}
	return b
}

// toolText calls a tool that must succeed at the protocol level and
// returns its first text content.
func toolText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s %v: %v", name, args, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("tools/call %s %v: no content (isError=%v)", name, args, res.IsError)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("tools/call %s %v: content %T, want text", name, args, res.Content[0])
	}
	if res.IsError {
		t.Fatalf("tools/call %s %v: isError: %s", name, args, tc.Text)
	}
	return tc.Text
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func mkfile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxEscapes runs testdata/hostile, a server that tries every
// escape it knows, behind "junction serve" at level strict with one
// read-write directory, one allowed network destination (a local HTTP
// server, through the egress proxy) and tight limits, with a fake home
// holding an SSH key, a token store and a secret variable in the hub's
// environment. Every attempt must fail, the two controls (a write in the
// read-write directory, a GET of the allowed server) must work, the
// server must survive all of it in the same process, and the hub must
// serve on and report the refused connections as sandbox events.
func TestSandboxEscapes(t *testing.T) {
	skipWithoutSandbox(t)
	hostile := buildHostile(t)
	// A setuid copy beside it (the sandbox may read the binary's
	// directory): what it runs with must be no more than the server has.
	setuid := filepath.Join(filepath.Dir(hostile), "hostile-setuid")
	b, err := os.ReadFile(hostile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(setuid, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(setuid, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(setuid); err != nil || fi.Mode()&os.ModeSetuid == 0 {
		t.Fatalf("%s is not setuid: %v %v", setuid, fi, err)
	}

	tag := randomHex(t)
	home := t.TempDir()
	sshKey := filepath.Join(home, ".ssh", "id_ed25519")
	sshSecret := "SSH-PRIVATE-KEY-" + tag
	mkfile(t, sshKey, sshSecret+"\n")
	homeNote := filepath.Join(home, "notes.txt")
	homeSecret := "HOME-NOTE-" + tag
	mkfile(t, homeNote, homeSecret+"\n")
	oauthDir := filepath.Join(t.TempDir(), "oauth")
	tokens := filepath.Join(oauthDir, "tokens.enc")
	oauthSecret := "OAUTH-TOKENS-" + tag
	mkfile(t, tokens, oauthSecret+"\n")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	outsideSecret := "OUTSIDE-SECRET-" + tag
	mkfile(t, outside, outsideSecret+"\n")
	envSecret := "ENV-SECRET-" + tag
	rw := t.TempDir()

	const allowedBody = "hello from the allowed server"
	allowedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, allowedBody)
	}))
	t.Cleanup(allowedSrv.Close)
	allowedAddr := allowedSrv.Listener.Addr().String()

	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  hostile:
    command: %q
    env: {SERVER_SET: from-config}
    sandbox:
      level: strict
      read_write: [%q]
      network: [%q]
      env: [JUNCTION_E2E_DECLARED]
      limits: {procs: 64, memory: 256MiB}
`, hostile, rw, allowedAddr))
	// The hub's own temporary directory, where its boxes' directories go.
	tmp := t.TempDir()
	hubEnv := []string{
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"JUNCTION_OAUTH_DIR=" + oauthDir,
		"JUNCTION_E2E_SANDBOX_SECRET=" + envSecret,
		"JUNCTION_E2E_DECLARED=declared-" + tag,
	}
	hub := startServerEnv(t, hubEnv, "-insecure-no-auth", "-config", cfg)
	hubPID := hub.cmd.Process.Pid
	_, hubPort, _ := net.SplitHostPort(hub.Addr)
	cs := connectHTTP(t, hub.URL, "")
	waitFor(t, "the hostile server's tools", 60*time.Second, func() bool {
		return hasName(toolNames(t, cs), "hostile__env")
	})
	before := sandboxStatus(t, hub.URL, "hostile")
	if before.PID == 0 {
		t.Fatalf("/status: hostile has no pid: %+v", before)
	}

	secrets := []string{sshSecret, homeSecret, oauthSecret, outsideSecret, envSecret}
	call := func(tool string, args map[string]any) string {
		t.Helper()
		text := toolText(t, cs, "hostile__"+tool, args)
		t.Logf("%s %v:\n    %s", tool, args, text)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("ESCAPE: %s %v returned the secret %q: %s", tool, args, s, text)
			}
		}
		return text
	}
	// expect calls tool and fails unless the answer starts with want
	// ("denied:" for an attempt, "ALLOWED:" for a control).
	expect := func(want, tool string, args map[string]any) string {
		t.Helper()
		text := call(tool, args)
		if !strings.HasPrefix(text, want) {
			t.Errorf("ESCAPE or broken control: %s %v = %q, want %q...", tool, args, text, want)
		}
		return text
	}

	t.Run("files", func(t *testing.T) {
		for _, p := range []string{sshKey, filepath.Dir(sshKey), homeNote, home, tokens, oauthDir, outside, cfg, "/etc/hostname", fmt.Sprintf("/proc/%d/environ", hubPID)} {
			expect("denied:", "read_file", map[string]any{"path": p})
		}
		escapes := map[string]string{ // written path -> what it held before ("" for none)
			filepath.Join(home, ".ssh", "authorized_keys"):  "",
			filepath.Join(home, ".bashrc"):                  "",
			filepath.Join(filepath.Dir(outside), "new.txt"): "",
			tokens: oauthSecret + "\n",
			filepath.Join(os.TempDir(), "junction-e2e-hostile-"+tag): "",
			filepath.Join(filepath.Dir(hostile), "planted"):          "",
		}
		for p, was := range escapes {
			expect("denied:", "write_file", map[string]any{"path": p})
			got, err := os.ReadFile(p)
			switch {
			case was == "" && err == nil:
				os.Remove(p)
				t.Errorf("ESCAPE: %s exists after the denied write: %q", p, got)
			case was != "" && string(got) != was:
				t.Errorf("ESCAPE: %s changed: %q, was %q", p, got, was)
			}
		}
		// Control: the read-write directory.
		inside := filepath.Join(rw, "inside.txt")
		expect("ALLOWED:", "write_file", map[string]any{"path": inside, "content": "written from the sandbox"})
		if got, err := os.ReadFile(inside); err != nil || string(got) != "written from the sandbox" {
			t.Errorf("control: %s after the sandboxed write = %q, %v", inside, got, err)
		}
		expect("ALLOWED:", "read_file", map[string]any{"path": inside})
	})

	t.Run("proc", func(t *testing.T) {
		expect("denied:", "proc_root", map[string]any{"path": outside})
		expect("denied:", "proc_root", map[string]any{"path": sshKey})
		expect("denied:", "proc_fd", map[string]any{"path": outside})
		expect("denied:", "proc_fd", map[string]any{"path": sshKey})
		expect("denied:", "proc_fd", map[string]any{"path": tokens})
	})

	t.Run("symlinks", func(t *testing.T) {
		for _, target := range []string{outside, sshKey, tokens} {
			text := expect("denied:", "symlink_race", map[string]any{"dir": rw, "target": target, "rounds": 2000})
			if !strings.Contains(text, "leaked=0") {
				t.Errorf("ESCAPE: symlink race on %s: %s", target, text)
			}
		}
	})

	t.Run("network", func(t *testing.T) {
		// Direct connections: the server's network namespace has only
		// its own loopback.
		for _, addr := range []string{hub.Addr, allowedAddr, "1.1.1.1:443", "[::1]:" + hubPort} {
			expect("denied:", "connect", map[string]any{"addr": addr})
		}
		// No DNS, so no exfiltration through it either.
		for _, name := range []string{"example.com", "exfil-" + tag + ".example.com"} {
			expect("denied:", "resolve", map[string]any{"name": name})
		}
		// Control: the allowed destination, through the egress proxy.
		if text := expect("ALLOWED:", "http_get", map[string]any{"url": "http://" + allowedAddr + "/"}); !strings.Contains(text, allowedBody) {
			t.Errorf("control: GET of the allowed server through the proxy = %q, want its body %q", text, allowedBody)
		}
		// Through the proxy, anything else is refused: the hub's own port
		// (plain HTTP and CONNECT), a name resolving to loopback, a host
		// not listed.
		for _, u := range []string{
			"http://" + hub.Addr + "/healthz",
			"https://" + hub.Addr + "/healthz",
			"http://localhost:" + hubPort + "/healthz",
			"http://example.com/",
		} {
			expect("denied:", "http_get", map[string]any{"url": u})
		}
	})

	t.Run("processes", func(t *testing.T) {
		text := call("pids", nil)
		m := regexp.MustCompile(`^pid=(\d+) ppid=(\d+) count=(\d+) procs=(.*)$`).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("pids = %q", text)
		}
		ppid, _ := strconv.Atoi(m[2])
		count, _ := strconv.Atoi(m[3])
		if ppid != 1 {
			t.Errorf("the server's parent is pid %d, want 1 (the sandbox's init)", ppid)
		}
		var visible []string
		for _, pc := range strings.Split(m[4], ",") {
			pid, comm, _ := strings.Cut(pc, ":")
			visible = append(visible, pid)
			if pid != "1" && pid != m[1] {
				t.Errorf("ESCAPE: the sandbox sees process %s (%s), neither its init (1) nor itself (%s): %s", pid, comm, m[1], text)
			}
		}
		if count > 2 || slices.Contains(visible, strconv.Itoa(hubPID)) {
			t.Errorf("ESCAPE: the sandbox sees %d processes (%v), want only its init and itself; the hub is pid %d", count, visible, hubPID)
		}

		for _, pid := range []int{hubPID, 1} {
			expect("denied:", "ptrace", map[string]any{"pid": pid})
			expect("denied:", "kill", map[string]any{"pid": pid})
		}
		expect("denied:", "exec_setuid", map[string]any{"path": setuid})

		// procs: 64 bounds tasks; run as root, RLIMIT_NPROC may not bind
		// and the documented bound is the PID namespace's pid_max,
		// max(procs, 300).
		bound := 64
		if os.Getuid() == 0 {
			bound = 300
		}
		text = expect("denied:", "fork_bomb", map[string]any{"max": 2000})
		if n := intField(t, text, "started"); n >= bound {
			t.Errorf("fork bomb started %d children, want fewer than %d (limits.procs 64): %s", n, bound, text)
		}
		text = expect("denied:", "mem_bomb", map[string]any{"mb": 2048})
		if n := intField(t, text, "allocated"); n >= 256 {
			t.Errorf("memory bomb allocated %d MiB, want less than the 256 MiB limit: %s", n, text)
		}
	})

	t.Run("env", func(t *testing.T) {
		text := call("env", nil)
		vars := map[string]string{}
		for _, kv := range strings.Split(text, "\n") {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		permitted := []string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "NO_PROXY",
			"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
			"JUNCTION_HUB_PID", "JUNCTION_HUB_CONFIG", "JUNCTION_HUB_SOURCE", "JUNCTION_HUB_DEPTH",
			"SERVER_SET", "JUNCTION_E2E_DECLARED", "GIT_CONFIG_GLOBAL"}
		for k := range vars {
			if !slices.Contains(permitted, k) {
				t.Errorf("ESCAPE: the server's environment has %s, which is neither a base, a sandbox nor a declared variable", k)
			}
		}
		for k, want := range map[string]string{"SERVER_SET": "from-config", "JUNCTION_E2E_DECLARED": "declared-" + tag, "HOME": home} {
			if vars[k] != want {
				t.Errorf("the server's %s = %q, want %q", k, vars[k], want)
			}
		}
		if _, ok := vars["JUNCTION_E2E_SANDBOX_SECRET"]; ok {
			t.Errorf("ESCAPE: the undeclared JUNCTION_E2E_SANDBOX_SECRET reached the server")
		}
	})

	// The hub serves on: its own tool, the hostile server's (the same
	// process: nothing above crashed it), /healthz.
	callVersion(t, cs)
	call("pids", nil)
	httpGetBody(t, strings.TrimSuffix(hub.URL, "/mcp")+"/healthz", http.StatusOK)
	after := sandboxStatus(t, hub.URL, "hostile")
	if after.PID != before.PID || after.State != "connected" {
		t.Errorf("the hostile server went from pid %d to %d (state %s): something ended it", before.PID, after.PID, after.State)
	}
	if after.Sandbox != "strict" {
		t.Errorf(`/status: hostile's sandbox = %q, want "strict"`, after.Sandbox)
	}
	var events []string
	for _, ev := range after.SandboxEvents {
		events = append(events, ev.Text)
	}
	t.Logf("sandbox events:\n    %s", strings.Join(events, "\n    "))
	for _, want := range []string{"127.0.0.1:" + hubPort, "localhost:" + hubPort, "example.com:80"} {
		if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, want) && strings.Contains(e, "denied") }) {
			t.Errorf("/status: no sandbox event of the refused connection to %s in %q", want, events)
		}
	}
	if slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, allowedAddr) }) {
		t.Errorf("/status: the allowed connection to %s is a sandbox event: %q", allowedAddr, events)
	}

	// Killed outright, the hub leaves nothing behind: the sandbox's init
	// (Pdeathsig) and with it the server.
	sandboxed := append([]int{after.PID}, childPIDs(after.PID)...)
	if len(sandboxed) < 2 {
		t.Errorf("the sandbox's init (pid %d) has no child: %v", after.PID, sandboxed)
	}
	hub.killed = true
	hub.cmd.Process.Kill()
	<-hub.exited
	waitFor(t, fmt.Sprintf("the sandbox's processes %v to end after the hub was killed", sandboxed), 10*time.Second, func() bool {
		return !slices.ContainsFunc(sandboxed, reaper.Alive)
	})

	// What a killed hub cannot remove, its box's directories (the
	// private temporary one and the egress proxy's), the next hub's first
	// box does.
	if left := boxDirs(t, tmp, hubPID); len(left) != 2 {
		t.Errorf("the killed hub (pid %d) left %q in %s; want its two box directories", hubPID, left, tmp)
	}
	again := startServerEnv(t, hubEnv, "-insecure-no-auth", "-config", cfg)
	cs = connectHTTP(t, again.URL, "")
	waitFor(t, "the hostile server's tools, from a hub started again", 60*time.Second, func() bool {
		return hasName(toolNames(t, cs), "hostile__env")
	})
	if left := boxDirs(t, tmp, hubPID); len(left) > 0 {
		t.Errorf("the killed hub's box directories %q are still in %s after another hub started a sandboxed server", left, tmp)
	}
	if made := boxDirs(t, tmp, again.cmd.Process.Pid); len(made) != 2 {
		t.Errorf("the hub started again has %q in %s; want its two box directories", made, tmp)
	}
}

// boxDirs lists the box directories of the junction process pid in dir.
func boxDirs(t *testing.T, dir string, pid int) []string {
	t.Helper()
	var out []string
	for _, prefix := range []string{"junction-sandbox-tmp-", "junction-egress-"} {
		m, err := filepath.Glob(filepath.Join(dir, prefix+strconv.Itoa(pid)+"-*"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	return out
}

// childPIDs lists pid's children (all its threads').
func childPIDs(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// intField reads "name=N" from a tool's answer.
func intField(t *testing.T, text, name string) int {
	t.Helper()
	m := regexp.MustCompile(`\b` + name + `=(\d+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %s=N in %q", name, text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestSandboxRealServers runs the npm reference servers at level
// strict: server-everything answers echo, server-filesystem writes and
// reads in its root (its read-write directory) and refuses a path
// outside, server-memory keeps its graph in a file of its read-write
// directory.
func TestSandboxRealServers(t *testing.T) {
	skipWithoutSandbox(t)
	node, everything := everythingCmd(t)
	_, mods := nodeTools(t)
	fsScript := filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-filesystem"), "dist", "index.js")
	memScript := filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-memory"), "dist", "index.js")
	gitScript := filepath.Join(npmPackageDir(t, mods, "@cyanheads/git-mcp-server"), "dist", "index.js")
	home := t.TempDir()
	// A git repository with one commit, made by the test; the home's
	// .gitconfig is junction's user's, which the sandbox does not show.
	repo := t.TempDir()
	gitRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	mkfile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Home Identity\n\temail = home@example.com\n")
	gitRun("init", "-q", "-b", "main")
	mkfile(t, filepath.Join(repo, "a.txt"), "one\n")
	gitRun("add", "a.txt")
	gitRun("commit", "-qm", "first")
	root := t.TempDir()
	memDir := t.TempDir()
	memFile := filepath.Join(memDir, "memory.jsonl")
	tag := randomHex(t)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	mkfile(t, outside, "OUTSIDE-SECRET-"+tag+"\n")
	dir := t.TempDir()
	cfg := writeConfig(t, filepath.Join(dir, "junction.yaml"), fmt.Sprintf(`
servers:
  everything:
    command: %q
    args: [%q, stdio]
    sandbox: strict
  files:
    command: %q
    args: [%q, %q]
    sandbox: {level: strict, read_write: [%q]}
  memory:
    command: %q
    args: [%q]
    env: {MEMORY_FILE_PATH: %q}
    sandbox: {level: strict, read_write: [%q]}
  git:
    command: %q
    args: [%q]
    env: {MCP_TRANSPORT_TYPE: stdio, MCP_LOG_LEVEL: error, GIT_COMMITTER_NAME: Sandboxed, GIT_COMMITTER_EMAIL: sandbox@example.com}
    sandbox: {level: strict, read_write: [%q]}
`, node, everything, node, fsScript, root, root, node, memScript, memFile, memDir, node, gitScript, repo))
	hub := startServerEnv(t, []string{"HOME=" + home}, "-insecure-no-auth", "-config", cfg)
	cs := connectHTTP(t, hub.URL, "")
	waitFor(t, "the four servers' tools", 90*time.Second, func() bool {
		names := toolNames(t, cs)
		return hasName(names, "everything__echo") && hasName(names, "files__write_file") && hasName(names, "memory__read_graph") && hasName(names, "git__git_commit")
	})
	for _, name := range []string{"everything", "files", "memory", "git"} {
		if s := sandboxStatus(t, hub.URL, name); s.Sandbox != "strict" || s.State != "connected" {
			t.Errorf("/status: %s is %s with sandbox %q, want connected and strict", name, s.State, s.Sandbox)
		}
	}

	if text := toolText(t, cs, "everything__echo", map[string]any{"message": "from a sandbox"}); !strings.Contains(text, "from a sandbox") {
		t.Errorf("everything__echo = %q", text)
	}

	inRoot := filepath.Join(root, "note.txt")
	toolText(t, cs, "files__write_file", map[string]any{"path": inRoot, "content": "written by server-filesystem"})
	if got, err := os.ReadFile(inRoot); err != nil || string(got) != "written by server-filesystem" {
		t.Errorf("%s after files__write_file = %q, %v", inRoot, got, err)
	}
	if text := toolText(t, cs, "files__read_text_file", map[string]any{"path": inRoot}); !strings.Contains(text, "written by server-filesystem") {
		t.Errorf("files__read_text_file = %q", text)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "files__read_text_file", Arguments: map[string]any{"path": outside}})
	switch {
	case err != nil:
		t.Logf("files__read_text_file outside its root: %v", err)
	case !res.IsError:
		t.Errorf("files__read_text_file of %s outside its root succeeded: %+v", outside, res.Content)
	default:
		text := res.Content[0].(*mcp.TextContent).Text
		t.Logf("files__read_text_file outside its root: %s", text)
		if strings.Contains(text, tag) {
			t.Errorf("server-filesystem returned the secret outside its root: %s", text)
		}
	}

	entity := "sandbox-entity-" + tag
	toolText(t, cs, "memory__create_entities", map[string]any{"entities": []any{
		map[string]any{"name": entity, "entityType": "test", "observations": []any{"kept in " + memFile}},
	}})
	if text := toolText(t, cs, "memory__read_graph", nil); !strings.Contains(text, entity) {
		t.Errorf("memory__read_graph = %q, want %s in it", text, entity)
	}
	if got, err := os.ReadFile(memFile); err != nil || !strings.Contains(string(got), entity) {
		t.Errorf("%s after create_entities = %q, %v; want the entity in it", memFile, got, err)
	}

	// The git server reads the repository's history, and commits a new
	// file into it, as the author the call names (the user's .gitconfig
	// is out of its reach).
	if text := toolText(t, cs, "git__git_log", map[string]any{"path": repo}); !strings.Contains(text, "first") {
		t.Errorf("git__git_log = %q, want the first commit", text)
	}
	mkfile(t, filepath.Join(repo, "b.txt"), "two\n")
	toolText(t, cs, "git__git_add", map[string]any{"path": repo, "paths": []any{"b.txt"}})
	toolText(t, cs, "git__git_commit", map[string]any{"path": repo, "message": "second, from a sandbox",
		"author": map[string]any{"name": "Sandboxed", "email": "sandbox@example.com"}})
	if log := gitRun("log", "--format=%an %s"); !strings.Contains(log, "Sandboxed second, from a sandbox") {
		t.Errorf("git log after git__git_commit:\n%s", log)
	}
}
