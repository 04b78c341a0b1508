//go:build unix

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestQuarantineApprove: a server added from the real registry starts in
// quarantine; serve does not start it (status says quarantined, with
// the approve command); "tools list -server" starts it for the operator;
// "approve -yes" pins its tools and takes it out of quarantine, and the
// running serve then starts and serves it; putting it back in quarantine
// stops it again. The entry add writes runs "npx -y
// @modelcontextprotocol/server-everything@VERSION": npx here is a shim
// that runs the local server-everything (no network).
func TestQuarantineApprove(t *testing.T) {
	node, everything := everythingCmd(t)
	base, _ := startRegistry(t)
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "npx"), []byte("#!/bin/sh\nexec '"+node+"' '"+everything+"' stdio\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pathEnv := "PATH=" + shims + ":" + os.Getenv("PATH")
	env := []string{pathEnv, "JUNCTION_REGISTRY=" + base}
	run := func(want int, args ...string) string {
		t.Helper()
		out, errOut, code := runJunction(t, env, args...)
		if code != want {
			t.Fatalf("junction %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.json")
	if err := os.WriteFile(cfg, []byte("{\n  // the lock file serve checks\n  \"lock\": \"junction.lock.json\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const name = "server-everything"
	approve := "junction approve " + name + " -config " + cfg
	out := run(0, "add", "io.github.modelcontextprotocol/server-everything", "-config", cfg, "-yes")
	for _, want := range []string{`"quarantine": true`, "in quarantine", approve, "junction tools list -server " + name + " -config " + cfg} {
		if !strings.Contains(out, want) {
			t.Errorf("add: no %q in\n%s", want, out)
		}
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), `"quarantine": true`) || !strings.Contains(string(data), "@modelcontextprotocol/server-everything@"+refVersion) {
		t.Fatalf("the added entry:\n%s", data)
	}
	if out := run(0, "config", "check", cfg); !strings.Contains(out, "(quarantined") {
		t.Errorf("config check:\n%s", out)
	}

	// serve does not start it; status lists it as quarantined.
	srv := startServerEnv(t, []string{pathEnv}, "-insecure-no-auth", "-config", cfg)
	st := getStatus(t, srv.URL, "")
	if state, _ := st.source(name); state != "quarantined" {
		t.Fatalf("status: %s is %q, want quarantined: %+v", name, state, st)
	}
	out = run(0, "status", "-url", srv.URL)
	if !strings.Contains(out, name+"  upstream  quarantined") || !strings.Contains(out, approve) {
		t.Errorf("junction status:\n%s", out)
	}
	out = run(0, "status", "-url", srv.URL, "-o", "json")
	if !strings.Contains(out, `"approve": "`+approve+`"`) {
		t.Errorf("junction status -o json:\n%s", out)
	}
	cs := connectHTTP(t, srv.URL, "")
	if tools := listNames(t, cs); strings.Contains(tools, name+"__") {
		t.Fatalf("a quarantined server's tools are served: %s", tools)
	}
	if strings.Contains(srv.Stderr(), "source="+name) {
		t.Errorf("serve started the quarantined server:\n%s", srv.Stderr())
	}

	// The operator's view: tools list -server starts it in-process.
	out = run(0, "tools", "list", "-server", name, "-config", cfg)
	if !strings.Contains(out, name+"__echo") || strings.Contains(out, "junction_version") {
		t.Errorf("tools list -server:\n%s", out)
	}

	// approve: a dry run without a terminal, then -yes.
	before, _ := os.ReadFile(cfg)
	out = run(0, "approve", name, "-config", cfg)
	if !strings.Contains(out, name+"__echo") || !strings.Contains(out, `-      "quarantine": true,`) || !strings.Contains(out, "Nothing was written") {
		t.Errorf("approve (dry run):\n%s", out)
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatalf("the dry run changed the config")
	}
	lock := filepath.Join(dir, "junction.lock.json")
	if _, err := os.Stat(lock); err == nil {
		t.Fatalf("the dry run wrote the lock file")
	}
	out = run(0, "approve", name, "-config", cfg, "-yes")
	if !strings.Contains(out, "Approved "+name) {
		t.Errorf("approve -yes:\n%s", out)
	}
	data, _ = os.ReadFile(cfg)
	if strings.Contains(string(data), "quarantine") || !strings.Contains(string(data), "// the lock file serve checks") {
		t.Fatalf("the approved config:\n%s", data)
	}
	if lk, err := os.ReadFile(lock); err != nil || !strings.Contains(string(lk), `"name": "`+name+`__echo"`) {
		t.Fatalf("lock file: %v\n%s", err, lk)
	}
	run(1, "approve", name, "-config", cfg, "-yes") // not in quarantine any more
	if out := run(0, "selftest", "-config", cfg); !strings.HasPrefix(out, "ok:") {
		t.Errorf("selftest after approve:\n%s", out)
	}

	// The running serve picks the change up: the server starts, its
	// tools are served, without drift against the new pins.
	waitFor(t, name+" connected after approve", 60*time.Second, func() bool {
		state, _ := getStatus(t, srv.URL, "").source(name)
		return state == "connected"
	})
	waitFor(t, name+"__echo served", 30*time.Second, func() bool { return strings.Contains(listNames(t, cs), name+"__echo,") })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name + "__echo", Arguments: map[string]any{"message": "vetted"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "vetted") {
		t.Fatalf("echo after approve: %v %+v", err, res)
	}
	out = run(0, "status", "-url", srv.URL)
	if !strings.Contains(out, name+"  upstream  connected") || strings.Contains(out, "added:") {
		t.Errorf("status after approve:\n%s", out)
	}

	// Back in quarantine: the reload stops it and its tools go.
	writeConfig(t, cfg, strings.Replace(string(data), `"server-everything": {`, `"server-everything": {"quarantine": true,`, 1))
	waitFor(t, name+" quarantined again", 60*time.Second, func() bool {
		state, _ := getStatus(t, srv.URL, "").source(name)
		return state == "quarantined"
	})
	waitFor(t, name+"__echo withdrawn", 30*time.Second, func() bool { return !strings.Contains(listNames(t, cs), name+"__") })
}

// listNames lists the session's tools as "a,b,c,".
func listNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var b strings.Builder
	for _, tl := range res.Tools {
		b.WriteString(tl.Name + ",")
	}
	return b.String()
}
