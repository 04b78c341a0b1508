package hostconfig

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func envFor(goos string, vars map[string]string, dir string) Env {
	return Env{GOOS: goos, Getenv: func(k string) string { return vars[k] }, Dir: dir}
}

func TestLocateLayouts(t *testing.T) {
	mac := envFor("darwin", map[string]string{"HOME": "/Users/ann"}, "/Users/ann/src/app")
	win := envFor("windows", map[string]string{"USERPROFILE": `C:\Users\ann`, "APPDATA": `C:\Users\ann\AppData\Roaming`}, `C:\src\app`)
	lin := envFor("linux", map[string]string{"HOME": "/home/ann"}, "/home/ann/src/app")
	xdg := envFor("linux", map[string]string{"HOME": "/home/ann", "XDG_CONFIG_HOME": "/home/ann/.cfg"}, "/home/ann/src/app")
	cases := []struct {
		env         Env
		host, scope string
		want        string
	}{
		{mac, "claude-desktop", "", "/Users/ann/Library/Application Support/Claude/claude_desktop_config.json"},
		{win, "claude-desktop", "", `C:\Users\ann\AppData\Roaming\Claude\claude_desktop_config.json`},
		{lin, "claude-desktop", "", "/home/ann/.config/Claude/claude_desktop_config.json"},
		{xdg, "claude", "", "/home/ann/.cfg/Claude/claude_desktop_config.json"},

		{mac, "claude-code", "", "/Users/ann/.claude.json"},
		{win, "claude-code", "user", `C:\Users\ann\.claude.json`},
		{lin, "claude-code", "local", "/home/ann/.claude.json"},
		{lin, "claude-code", "project", "/home/ann/src/app/.mcp.json"},
		{win, "claude-code", "project", `C:\src\app\.mcp.json`},

		{mac, "cursor", "", "/Users/ann/.cursor/mcp.json"},
		{win, "cursor", "", `C:\Users\ann\.cursor\mcp.json`},
		{lin, "cursor", "project", "/home/ann/src/app/.cursor/mcp.json"},

		{mac, "vscode", "", "/Users/ann/Library/Application Support/Code/User/mcp.json"},
		{win, "code", "", `C:\Users\ann\AppData\Roaming\Code\User\mcp.json`},
		{lin, "VS Code", "", "/home/ann/.config/Code/User/mcp.json"},
		{xdg, "vscode", "project", "/home/ann/src/app/.vscode/mcp.json"},

		{mac, "windsurf", "", "/Users/ann/.codeium/windsurf/mcp_config.json"},
		{win, "windsurf", "", `C:\Users\ann\.codeium\windsurf\mcp_config.json`},
		{lin, "windsurf", "", "/home/ann/.codeium/windsurf/mcp_config.json"},
	}
	for _, c := range cases {
		h, err := Lookup(c.host)
		if err != nil {
			t.Fatal(err)
		}
		loc, err := h.Locate(c.env, c.scope, "")
		if err != nil {
			t.Errorf("%s %s on %s: %v", c.host, c.scope, c.env.GOOS, err)
			continue
		}
		if loc.File != c.want {
			t.Errorf("%s %s on %s: %s, want %s", c.host, c.scope, c.env.GOOS, loc.File, c.want)
		}
	}
	if _, err := Lookup("emacs"); err == nil || !strings.Contains(err.Error(), "claude-desktop, cursor") {
		t.Errorf("unknown host: %v", err)
	}
	h, _ := Lookup("windsurf")
	if _, err := h.Locate(lin, "project", ""); err == nil || !strings.Contains(err.Error(), `no "project" scope`) {
		t.Errorf("windsurf project scope: %v", err)
	}
	if d, _ := DefaultJunctionConfig(win, "user"); d != `C:\Users\ann\AppData\Roaming\junction\junction.json` {
		t.Errorf("default junction config on windows: %s", d)
	}
	if d, _ := DefaultJunctionConfig(mac, "user"); d != "/Users/ann/Library/Application Support/junction/junction.json" {
		t.Errorf("default junction config on macOS: %s", d)
	}
}

// fakeHome makes a Linux home in a temp dir with the file at rel.
func fakeHome(t *testing.T, rel, content string, mode os.FileMode) (Env, string) {
	t.Helper()
	home := t.TempDir()
	path := filepath.Join(home, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(home, "src", "app")
	os.MkdirAll(proj, 0o755)
	return envFor("linux", map[string]string{"HOME": home}, proj), home
}

var testJunction = Junction{Name: "junction", Command: "/opt/junction/bin/junction", Args: []string{"serve", "-config", "JCFG"}}

func junctionFor(cfg string) Junction {
	j := testJunction
	j.Args = []string{"serve", "-config", cfg}
	return j
}

const claudeDesktop = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/alice/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" }
    },
    "linear": {
      "type": "http",
      "url": "https://mcp.linear.app/mcp",
      "headers": { "Authorization": "Bearer ${LINEAR_API_KEY}" }
    }
  },
  "globalShortcut": "Ctrl+Space"
}
`

func golden(t *testing.T, name, got, home string) {
	t.Helper()
	got = strings.ReplaceAll(got, home, "$HOME")
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

func TestConnectClaudeDesktopRoundTrip(t *testing.T) {
	env, home := fakeHome(t, ".config/Claude/claude_desktop_config.json", claudeDesktop, 0o640)
	h, _ := Lookup("claude-desktop")
	loc, err := h.Locate(env, "", "")
	if err != nil {
		t.Fatal(err)
	}
	jcfg, _ := DefaultJunctionConfig(env, loc.Scope)
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Moved, ","); got != "filesystem,github,linear" {
		t.Errorf("moved %s", got)
	}
	golden(t, "claude-desktop.diff", plan.Diff(), home)

	// A plan writes nothing.
	if b, _ := os.ReadFile(loc.File); string(b) != claudeDesktop {
		t.Fatal("planning changed the host file")
	}
	if _, err := os.Stat(jcfg); err == nil {
		t.Fatal("planning wrote junction's config")
	}

	now := time.Date(2026, 11, 23, 4, 5, 6, 0, time.UTC)
	backup, err := plan.Apply(now)
	if err != nil {
		t.Fatal(err)
	}
	if want := loc.File + ".junction-backup-20261123T040506000Z"; backup != want {
		t.Errorf("backup %s, want %s", backup, want)
	}
	assertFile(t, backup, claudeDesktop, 0o640)
	fi, _ := os.Stat(loc.File)
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("host file mode %v, want 0640 kept", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(jcfg); fi.Mode().Perm() != 0o600 {
		t.Errorf("junction config mode %v, want 0600", fi.Mode().Perm())
	}
	if tmp, _ := filepath.Glob(filepath.Join(filepath.Dir(loc.File), ".*tmp-*")); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}

	// Connecting again: nothing to move.
	if _, err := PlanConnect(loc, jcfg, junctionFor(jcfg)); err == nil || !strings.Contains(err.Error(), "already runs only junction") {
		t.Errorf("second connect: %v", err)
	}

	d, err := PlanDisconnect(loc, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Backup != backup || d.Changed {
		t.Errorf("disconnect plan: backup %s changed %v", d.Backup, d.Changed)
	}
	golden(t, "claude-desktop-disconnect.diff", d.Diff(), home)
	if err := d.Apply(); err != nil {
		t.Fatal(err)
	}
	assertFile(t, loc.File, claudeDesktop, 0o640)
}

func assertFile(t *testing.T, path, want string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", path, b, want)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != mode {
		t.Errorf("%s mode %v, want %v", path, fi.Mode().Perm(), mode)
	}
}

func TestDisconnectRefusesChangedFile(t *testing.T) {
	env, _ := fakeHome(t, ".cursor/mcp.json", `{"mcpServers":{"a":{"command":"a"}}}`, 0o644)
	h, _ := Lookup("cursor")
	loc, _ := h.Locate(env, "", "")
	jcfg := filepath.Join(t.TempDir(), "j.json")
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(loc.File)
	os.WriteFile(loc.File, bytes.Replace(b, []byte(`"args"`), []byte(`"env": {"X": "1"}, "args"`), 1), 0o644)
	d, err := PlanDisconnect(loc, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Changed {
		t.Error("a host file edited after connect is not reported as changed")
	}
}

const claudeJSON = `{
  "numStartups": 42,
  "theme": "dark",
  "tipsHistory": {"new-user-warmup": 7},
  "mcpServers": {
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}}
  },
  "projects": {
    "/elsewhere": {
      "allowedTools": [],
      "mcpServers": {"x": {"command": "x"}}
    },
    "PROJ": {
      "allowedTools": ["Bash(ls)"],
      "history": [{"display": "hi", "pastedContents": {}}],
      "mcpServers": {
        "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp", "headers": {"X-Org": "acme"}}
      },
      "hasTrustDialogAccepted": true
    }
  },
  "userID": "abc"
}
`

func TestConnectClaudeCodeScopes(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "src", "app")
	os.MkdirAll(proj, 0o755)
	orig := strings.Replace(claudeJSON, "PROJ", proj, 1)
	file := filepath.Join(home, ".claude.json")
	os.WriteFile(file, []byte(orig), 0o600)
	env := envFor("linux", map[string]string{"HOME": home}, proj)
	h, _ := Lookup("claude-code")

	// User scope: the top-level mcpServers.
	loc, _ := h.Locate(env, "user", "")
	jcfg := filepath.Join(home, "junction.json")
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(plan.Moved, ",") != "memory" {
		t.Errorf("user scope moved %v", plan.Moved)
	}
	golden(t, "claude-code-user.diff", strings.ReplaceAll(plan.Diff(), proj, "$PROJ"), home)

	// Local scope: this project's entry under projects; other projects and
	// keys untouched.
	loc, _ = h.Locate(env, "local", "")
	if loc.Describe() != `projects["`+proj+`"].mcpServers` {
		t.Errorf("describe: %s", loc.Describe())
	}
	plan, err = PlanConnect(loc, filepath.Join(proj, "junction.json"), junctionFor(filepath.Join(proj, "junction.json")))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(plan.Moved, ",") != "sentry" {
		t.Errorf("local scope moved %v", plan.Moved)
	}
	after := string(plan.HostAfter)
	for _, keep := range []string{`"numStartups": 42`, `"history": [{"display": "hi", "pastedContents": {}}]`, `"/elsewhere": {` + "\n" + `      "allowedTools": [],` + "\n" + `      "mcpServers": {"x": {"command": "x"}}`, `"userID": "abc"`, `"memory": {"type": "stdio"`} {
		if !strings.Contains(after, keep) {
			t.Errorf("local connect lost %q:\n%s", keep, after)
		}
	}
	if _, err := plan.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	d, err := PlanDisconnect(loc, "")
	if err != nil || d.Changed {
		t.Fatalf("disconnect: %v changed=%v", err, d != nil && d.Changed)
	}
	if err := d.Apply(); err != nil {
		t.Fatal(err)
	}
	assertFile(t, file, orig, 0o600)

	// A project without servers in ~/.claude.json.
	env.Dir = filepath.Join(home, "nowhere")
	loc, _ = h.Locate(env, "local", "")
	if _, err := PlanConnect(loc, jcfg, junctionFor(jcfg)); err == nil || !strings.Contains(err.Error(), "no servers for this project") {
		t.Errorf("unknown project: %v", err)
	}
}

func TestConnectVSCodeJSONC(t *testing.T) {
	src := `// my servers
{
	"servers": {
		// the everything server
		"everything": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],},
	},
	"inputs": [],
}
`
	env, home := fakeHome(t, ".vscode-proj/.vscode/mcp.json", src, 0o644)
	env.Dir = filepath.Join(home, ".vscode-proj")
	h, _ := Lookup("vscode")
	loc, err := h.Locate(env, "project", "")
	if err != nil {
		t.Fatal(err)
	}
	jcfg, _ := DefaultJunctionConfig(env, "project")
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "vscode-project.diff", plan.Diff(), home)
}

func TestConnectErrors(t *testing.T) {
	h, _ := Lookup("claude-desktop")
	env, home := fakeHome(t, "x", "", 0o644)
	loc, _ := h.Locate(env, "", "")
	if _, err := PlanConnect(loc, "j.json", testJunction); err == nil || !strings.Contains(err.Error(), loc.File+": no such file") {
		t.Errorf("missing file: %v", err)
	}
	bad := filepath.Join(home, "bad.json")
	os.WriteFile(bad, []byte("{\"mcpServers\": {\"a\": {\"command\": \"a\"}\n"), 0o644)
	loc, _ = h.Locate(env, "", bad)
	if _, err := PlanConnect(loc, "j.json", testJunction); err == nil || !strings.Contains(err.Error(), bad+": line 2") || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("bad JSON: %v", err)
	}
	empty := filepath.Join(home, "empty.json")
	os.WriteFile(empty, []byte(`{"globalShortcut": ""}`), 0o644)
	loc, _ = h.Locate(env, "", empty)
	if _, err := PlanConnect(loc, "j.json", testJunction); err == nil || !strings.Contains(err.Error(), "has no MCP servers") {
		t.Errorf("no servers: %v", err)
	}

	// A name junction's config already has, defined differently.
	good := filepath.Join(home, "good.json")
	os.WriteFile(good, []byte(`{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}`), 0o644)
	jcfg := filepath.Join(home, "junction.json")
	os.WriteFile(jcfg, []byte(`{"servers": {"a": {"command": "other"}}, "packs": ["core"]}`), 0o644)
	loc, _ = h.Locate(env, "", good)
	if _, err := PlanConnect(loc, jcfg, junctionFor(jcfg)); err == nil || !strings.Contains(err.Error(), `already has a server "a"`) {
		t.Errorf("clash: %v", err)
	}
	// The same definition is not a clash.
	os.WriteFile(jcfg, []byte("{\n  \"servers\": {\n    \"a\": {\"command\": \"a\"}\n  },\n  \"packs\": [\"core\"]\n}\n"), 0o644)
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(plan.Same, ",") != "a" || strings.Join(plan.Moved, ",") != "b" {
		t.Errorf("same %v moved %v", plan.Same, plan.Moved)
	}
	want := "{\n  \"servers\": {\n    \"a\": {\"command\": \"a\"},\n    \"b\": {\n      \"command\": \"b\"\n    }\n  },\n  \"packs\": [\"core\"]\n}\n"
	if string(plan.JunctionAfter) != want {
		t.Errorf("junction config:\n%s\nwant:\n%s", plan.JunctionAfter, want)
	}

	// A YAML junction config gets a servers section appended.
	ycfg := filepath.Join(home, "junction.yaml")
	os.WriteFile(ycfg, []byte("packs: [core]\n"), 0o644)
	plan, err = PlanConnect(loc, ycfg, junctionFor(ycfg))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(plan.JunctionAfter, []byte("servers:\n  \"a\": {\"command\":\"a\"}\n  \"b\": {\"command\":\"b\"}\n")) {
		t.Errorf("yaml junction config:\n%s", plan.JunctionAfter)
	}
}

func TestUnified(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n"
	want := `--- a
+++ b
@@ -2,9 +2,10 @@
 2
 3
 4
-5
+five
 6
 7
 8
 9
 10
+11
`
	if got := Unified("a", "b", []byte(a), []byte(b)); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if Unified("a", "b", []byte(a), []byte(a)) != "" {
		t.Error("equal files have a diff")
	}
}

func TestConnectReplacesJunctionOnItself(t *testing.T) {
	home := t.TempDir()
	host := filepath.Join(home, "claude_desktop_config.json")
	jcfg := filepath.Join(home, "junction.json")
	os.WriteFile(host, []byte(`{"mcpServers": {
  "loop": {"command": "/usr/local/bin/junction", "args": ["serve", "-config", "`+host+`"]},
  "old": {"command": "junction", "args": ["serve", "--config=`+jcfg+`"]},
  "bare": {"command": "junction.exe", "args": ["serve"]},
  "nested": {"command": "junction", "args": ["serve", "-config", "/etc/team.yaml"]},
  "diode": {"command": "junction", "args": ["mcp"]},
  "fs": {"command": "npx", "args": ["server-filesystem"]}
}}`), 0o644)
	h, _ := Lookup("claude-desktop")
	loc, _ := h.Locate(Env{GOOS: "linux"}, "", host)
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.Replaced, ","); got != "bare,loop,old" {
		t.Errorf("replaced %s, want bare,loop,old", got)
	}
	if got := strings.Join(plan.Moved, ","); got != "diode,fs,nested" {
		t.Errorf("moved %s, want diode,fs,nested", got)
	}
}

// Claude Code rewrites ~/.claude.json all the time: disconnect keeps what
// it changed and puts back only the servers.
func TestDisconnectKeepsOtherChanges(t *testing.T) {
	env, home := fakeHome(t, ".claude.json", claudeJSON, 0o600)
	h, _ := Lookup("claude-code")
	loc, _ := h.Locate(env, "user", "")
	jcfg := filepath.Join(home, "j.json")
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Apply(time.Now()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(loc.File)
	os.WriteFile(loc.File, bytes.Replace(b, []byte(`"numStartups": 42`), []byte(`"numStartups": 43`), 1), 0o600)
	d, err := PlanDisconnect(loc, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Changed || !d.ServersOnly {
		t.Fatalf("changed=%v serversOnly=%v", d.Changed, d.ServersOnly)
	}
	if err := d.Apply(); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(claudeJSON, `"numStartups": 42`, `"numStartups": 43`, 1)
	assertFile(t, loc.File, want, 0o600)

	// A server added in the host since connect would be lost: refused.
	if _, err := PlanConnect(loc, filepath.Join(home, "k.json"), junctionFor(filepath.Join(home, "k.json"))); err != nil {
		t.Fatal(err)
	}
	plan, _ = PlanConnect(loc, filepath.Join(home, "k.json"), junctionFor(filepath.Join(home, "k.json")))
	if _, err := plan.Apply(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(loc.File)
	os.WriteFile(loc.File, bytes.Replace(b, []byte(`"junction": {`), []byte(`"added": {"command": "a"}, "junction": {`), 1), 0o600)
	d, err = PlanDisconnect(loc, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Changed || d.ServersOnly {
		t.Errorf("a server added since: changed=%v serversOnly=%v", d.Changed, d.ServersOnly)
	}
}

func TestConnectKeep(t *testing.T) {
	env, home := fakeHome(t, ".config/Claude/claude_desktop_config.json", claudeDesktop, 0o644)
	h, _ := Lookup("claude-desktop")
	loc, _ := h.Locate(env, "", "")
	jcfg := filepath.Join(home, "j.json")
	j := junctionFor(jcfg)
	for _, keep := range [][]string{{"github"}, {"filesystem"}, {"linear"}, {"filesystem", "linear"}} {
		j.Keep = keep
		plan, err := PlanConnect(loc, jcfg, j)
		if err != nil {
			t.Fatalf("keep %v: %v", keep, err)
		}
		if strings.Join(plan.Kept, ",") != strings.Join(keep, ",") {
			t.Errorf("kept %v, want %v", plan.Kept, keep)
		}
		root, err := parseJSONC(plan.HostAfter)
		if err != nil {
			t.Fatalf("keep %v: the host file is not JSON: %v\n%s", keep, err, plan.HostAfter)
		}
		var names []string
		for _, m := range root.get("mcpServers").members {
			names = append(names, m.key)
		}
		if want := strings.Join(append(append([]string(nil), keep...), "junction"), ","); strings.Join(names, ",") != want {
			t.Errorf("keep %v: host servers %v, want %s", keep, names, want)
		}
		for _, k := range keep { // kept byte for byte
			v := root.get("mcpServers").get(k)
			orig, _ := parseJSONC([]byte(claudeDesktop))
			ov := orig.get("mcpServers").get(k)
			if string(plan.HostAfter[v.start:v.end]) != claudeDesktop[ov.start:ov.end] {
				t.Errorf("keep %v: %s changed", keep, k)
			}
		}
		if keep[0] == "github" {
			golden(t, "claude-desktop-keep.diff", Unified(loc.File, loc.File, plan.HostBefore, plan.HostAfter), home)
		}
	}
	j.Keep = []string{"nope"}
	if _, err := PlanConnect(loc, jcfg, j); err == nil || !strings.Contains(err.Error(), `has no server "nope"`) {
		t.Errorf("keep unknown: %v", err)
	}
}
