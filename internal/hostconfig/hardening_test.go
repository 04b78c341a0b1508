package hostconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linkedProject is a home with a user-wide Cursor file holding a secret,
// and a project (home/src/app) for a repository to put links in.
func linkedProject(t *testing.T) (env Env, home, proj, global string) {
	t.Helper()
	const cursor = `{"mcpServers": {"github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_secret"}}}}` + "\n"
	env, home = fakeHome(t, filepath.Join(".cursor", "mcp.json"), cursor, 0o600)
	return env, home, env.Dir, filepath.Join(home, ".cursor", "mcp.json")
}

func unchanged(t *testing.T, path, want string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Errorf("%s changed: %q (%v)", path, b, err)
	}
}

// TestConnectRefusesLinkOutOfProject: a repository's .mcp.json that
// links to the user's Cursor file is refused, by name and with where it
// points, for connect and disconnect, and nothing outside the project is
// written or read into it. The same for a linked directory (.vscode) and
// a linked junction.json.
func TestConnectRefusesLinkOutOfProject(t *testing.T) {
	env, home, proj, global := linkedProject(t)
	orig, _ := os.ReadFile(global)
	link := filepath.Join(proj, ".mcp.json")
	if err := os.Symlink(global, link); err != nil {
		t.Fatal(err)
	}
	cc, _ := Lookup("claude-code")
	loc, err := cc.Locate(env, ScopeProject, "")
	if err != nil {
		t.Fatal(err)
	}
	jcfg := filepath.Join(proj, "junction.json")
	_, err = PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err == nil {
		t.Fatal("connect -scope project followed .mcp.json out of the project")
	}
	for _, want := range []string{link + " is a symbolic link to " + global, "outside the project " + proj, "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	unchanged(t, global, string(orig))
	if _, err := os.Stat(jcfg); err == nil {
		t.Errorf("%s was written", jcfg)
	}
	if _, err := PlanDisconnect(loc, ""); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("disconnect through the link: %v", err)
	}

	// A link inside the project is fine.
	os.Remove(link)
	inside := filepath.Join(proj, "config", "mcp.json")
	os.MkdirAll(filepath.Dir(inside), 0o755)
	os.WriteFile(inside, orig, 0o600)
	os.Symlink(filepath.Join("config", "mcp.json"), link)
	if _, err := PlanConnect(loc, jcfg, junctionFor(jcfg)); err != nil {
		t.Errorf("a link that stays in the project: %v", err)
	}

	// A linked directory: .vscode -> the user's VS Code directory.
	vsUser := filepath.Join(home, ".config", "Code", "User")
	os.MkdirAll(vsUser, 0o755)
	vsOrig := `{"servers": {"github": {"type": "stdio", "command": "gh-mcp"}}}`
	os.WriteFile(filepath.Join(vsUser, "mcp.json"), []byte(vsOrig), 0o600)
	os.Symlink(vsUser, filepath.Join(proj, ".vscode"))
	vs, _ := Lookup("vscode")
	vloc, _ := vs.Locate(env, ScopeProject, "")
	if _, err := PlanConnect(vloc, jcfg, junctionFor(jcfg)); err == nil || !strings.Contains(err.Error(), filepath.Join(proj, ".vscode")+" is a symbolic link to "+vsUser) {
		t.Errorf("a linked .vscode: %v", err)
	}

	// A linked junction.json, even one that does not exist yet: the
	// project's servers would go into the user's junction config.
	userJunction := filepath.Join(home, ".config", "junction", "junction.json")
	os.Symlink(userJunction, jcfg)
	if _, err := PlanConnect(loc, jcfg, junctionFor(jcfg)); err == nil || !strings.Contains(err.Error(), jcfg+" is a symbolic link to "+userJunction) {
		t.Errorf("a dangling junction.json link out of the project: %v", err)
	}
	if _, err := os.Lstat(userJunction); err == nil {
		t.Errorf("%s was created", userJunction)
	}
}

// TestConnectLocalScopeFollowsUserLink: in the local scope the host's
// file is the user's ~/.claude.json, which may be a link into a dotfiles
// checkout even when the project is the home directory itself.
func TestConnectLocalScopeFollowsUserLink(t *testing.T) {
	home := t.TempDir()
	dotfiles := t.TempDir()
	real := filepath.Join(dotfiles, "claude.json")
	os.WriteFile(real, []byte(`{"projects": {"`+home+`": {"mcpServers": {"gh": {"command": "gh-mcp"}}}}}`), 0o600)
	if err := os.Symlink(real, filepath.Join(home, ".claude.json")); err != nil {
		t.Fatal(err)
	}
	env := envFor("linux", map[string]string{"HOME": home}, home)
	cc, _ := Lookup("claude-code")
	loc, _ := cc.Locate(env, ScopeLocal, "")
	jcfg, _ := DefaultJunctionConfig(env, ScopeLocal)
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatalf("local scope with ~/.claude.json a link out of the project (home): %v", err)
	}
	if _, err := plan.Apply(time.Now()); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(home, ".claude.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("~/.claude.json is no longer a link (%v)", err)
	}
}

// TestConnectApplyRechecksLinks: a link put in place between the plan
// and -apply is refused too, and the file it points to is not written.
func TestConnectApplyRechecksLinks(t *testing.T) {
	env, _, proj, global := linkedProject(t)
	orig, _ := os.ReadFile(global)
	host := filepath.Join(proj, ".mcp.json")
	os.WriteFile(host, orig, 0o644)
	cc, _ := Lookup("claude-code")
	loc, _ := cc.Locate(env, ScopeProject, "")
	jcfg := filepath.Join(proj, "junction.json")
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(host)
	os.Symlink(global, host)
	if _, err := plan.Apply(time.Now()); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("apply through a new link: %v", err)
	}
	unchanged(t, global, string(orig))
}

// TestConnectSameServerAsClaudeCode: the server Claude Desktop moved
// (no type) and the one Claude Code has ("type": "stdio") are the same;
// a real difference is named by its field, without the values.
func TestConnectSameServerAsClaudeCode(t *testing.T) {
	env, home := fakeHome(t, ".claude.json", `{"mcpServers": {"gh": {"type": "stdio", "command": "gh-mcp", "args": ["serve"], "env": {"T": "secret"}}}}`, 0o600)
	jcfg := filepath.Join(home, "junction.json")
	os.WriteFile(jcfg, []byte(`{"servers": {"gh": {"command": "gh-mcp", "env": {"T": "secret"}, "args": ["serve"]}}}`+"\n"), 0o600)
	cc, _ := Lookup("claude-code")
	loc, _ := cc.Locate(env, ScopeUser, "")
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatalf("the same server with \"type\": \"stdio\": %v", err)
	}
	if strings.Join(plan.Same, ",") != "gh" || len(plan.Moved) != 0 {
		t.Errorf("same %v, moved %v; want gh the same", plan.Same, plan.Moved)
	}

	os.WriteFile(jcfg, []byte(`{"servers": {"gh": {"command": "gh-mcp", "env": {"T": "other"}, "args": ["serve", "-v"]}}}`+"\n"), 0o600)
	_, err = PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err == nil || !strings.Contains(err.Error(), `differs from Claude Code's in "args" and "env"`) {
		t.Errorf("a server that differs: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows an env value: %v", err)
	}
}

// TestConnectVSCodeWorkspaceFolder: ${workspaceFolder}, which VS Code
// defines and junction's config accepts, moves into DIR/junction.json,
// where it still names the project.
func TestConnectVSCodeWorkspaceFolder(t *testing.T) {
	env, _ := fakeHome(t, "x", "", 0o600)
	proj := env.Dir
	os.MkdirAll(filepath.Join(proj, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(proj, ".vscode", "mcp.json"), []byte(`{"servers": {"fs": {"type": "stdio", "command": "fs-mcp", "args": ["${workspaceFolder}/docs"]}}}`), 0o644)
	vs, _ := Lookup("vscode")
	loc, _ := vs.Locate(env, ScopeProject, "")
	jcfg, _ := DefaultJunctionConfig(env, ScopeProject)
	plan, err := PlanConnect(loc, jcfg, junctionFor(jcfg))
	if err != nil {
		t.Fatalf("connect vscode -scope project with ${workspaceFolder}: %v", err)
	}
	if !strings.Contains(string(plan.JunctionAfter), `"${workspaceFolder}/docs"`) {
		t.Errorf("junction config:\n%s", plan.JunctionAfter)
	}
}

// TestLookupDidYouMean: a misspelt host gets a suggestion.
func TestLookupDidYouMean(t *testing.T) {
	for in, want := range map[string]string{"claud-desktop": "claude-desktop", "cursr": "cursor", "vscod": "vscode", "claudecod": "claude-code"} {
		_, err := Lookup(in)
		if err == nil || !strings.Contains(err.Error(), `did you mean "`+want+`"?`) {
			t.Errorf("Lookup(%q): %v, want a hint for %s", in, err, want)
		}
	}
	if _, err := Lookup("emacs"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Lookup(emacs): %v, want no hint", err)
	}
}
