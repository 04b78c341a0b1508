package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// connectHome is a fake home directory for connect: HOME is home, the
// XDG directories are unset so that ~/.config is used, and commands run
// in home.
type connectHome struct {
	t    *testing.T
	home string
	env  []string
}

func newConnectHome(t *testing.T) *connectHome {
	home := t.TempDir()
	return &connectHome{t: t, home: home, env: append(childEnv(home), "HOME="+home, "XDG_CONFIG_HOME=")}
}

// write writes content to the file rel of the home, making its directory.
func (h *connectHome) write(rel, content string) string {
	h.t.Helper()
	p := filepath.Join(h.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// run runs junction ARGS and returns its combined output and exit code.
func (h *connectHome) run(args ...string) (string, int) {
	h.t.Helper()
	cmd := exec.Command(junctionBin(h.t), args...)
	cmd.Env = h.env
	cmd.Dir = h.home
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("junction %s: %v", strings.Join(args, " "), err)
	}
	return string(out), code
}

// TestConnectProjectRefusesSymlinkOut: a repository whose .mcp.json links
// to the user's ~/.cursor/mcp.json does not get "connect claude-code
// -scope project -apply" to rewrite that file or copy its secrets into
// the repository: connect names the link and where it points, and writes
// nothing.
func TestConnectProjectRefusesSymlinkOut(t *testing.T) {
	h := newConnectHome(t)
	const cursor = `{"mcpServers": {"github": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_secret"}}}}` + "\n"
	global := h.write(".cursor/mcp.json", cursor)
	repo := filepath.Join(h.home, "src", "repo")
	os.MkdirAll(repo, 0o755)
	link := filepath.Join(repo, ".mcp.json")
	if err := os.Symlink(global, link); err != nil {
		t.Fatal(err)
	}
	out, code := h.run("connect", "claude-code", "-scope", "project", "-dir", repo, "-apply")
	if code == 0 || !strings.Contains(out, link+" is a symbolic link to "+global) || !strings.Contains(out, "outside the project") {
		t.Errorf("connect through a link out of the project: exit %d\n%s\nwant a refusal naming %s and %s", code, out, link, global)
	}
	if b, _ := os.ReadFile(global); string(b) != cursor {
		t.Errorf("%s was rewritten:\n%s", global, b)
	}
	entries, _ := os.ReadDir(repo)
	for _, e := range entries {
		if e.Name() != ".mcp.json" {
			t.Errorf("connect wrote %s into the repository", e.Name())
		}
	}
	if strings.Contains(out, "ghp_secret") {
		t.Errorf("the output shows the secret of %s:\n%s", global, out)
	}
}

// TestConnectVSCodeProjectWorkspaceFolder: connect vscode -scope project
// moves a server that uses ${workspaceFolder}, which VS Code and
// junction's config both define.
func TestConnectVSCodeProjectWorkspaceFolder(t *testing.T) {
	h := newConnectHome(t)
	repo := filepath.Join(h.home, "src", "app")
	h.write("src/app/.vscode/mcp.json", `{"servers": {"fs": {"type": "stdio", "command": "fs-mcp", "args": ["${workspaceFolder}/docs"]}}}`)
	out, code := h.run("connect", "vscode", "-scope", "project", "-dir", repo, "-apply")
	if code != 0 {
		t.Fatalf("connect vscode -scope project with ${workspaceFolder}: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(repo, "junction.json"))
	if err != nil || !strings.Contains(string(b), `"${workspaceFolder}/docs"`) {
		t.Errorf("junction.json (%v):\n%s", err, b)
	}
	if out, code := h.run("config", "check", filepath.Join(repo, "junction.json")); code != 0 {
		t.Errorf("config check of the moved servers: exit %d\n%s", code, out)
	}
}

// TestConnectSameServerTwoHosts: after connect claude-desktop, connect
// claude-code with the same server plus "type": "stdio" (as Claude Code
// writes it) finds it already there; a server that really differs is
// named with the field that differs.
func TestConnectSameServerTwoHosts(t *testing.T) {
	h := newConnectHome(t)
	h.write(".config/Claude/claude_desktop_config.json", `{"mcpServers": {"gh": {"command": "gh-mcp", "args": ["stdio"], "env": {"T": "secret"}}}}`)
	h.write(".claude.json", `{"mcpServers": {"gh": {"type": "stdio", "command": "gh-mcp", "args": ["stdio"], "env": {"T": "secret"}}}}`)
	if out, code := h.run("connect", "claude-desktop", "-apply"); code != 0 {
		t.Fatalf("connect claude-desktop: exit %d\n%s", code, out)
	}
	out, code := h.run("connect", "claude-code")
	if code != 0 || !strings.Contains(out, "already in ") || !strings.Contains(out, ": gh") {
		t.Errorf("connect claude-code with the same server: exit %d\n%s\nwant gh already in junction's config", code, out)
	}

	h.write(".claude.json", `{"mcpServers": {"gh": {"type": "stdio", "command": "gh-mcp", "args": ["stdio", "--verbose"], "env": {"T": "secret"}}}}`)
	out, code = h.run("connect", "claude-code")
	if code == 0 || !strings.Contains(out, `already has a server "gh" that differs from Claude Code's in "args"`) {
		t.Errorf("connect claude-code with another gh: exit %d\n%s\nwant the differing field named", code, out)
	}
}

// TestConnectDidYouMean: a misspelt host gets a suggestion.
func TestConnectDidYouMean(t *testing.T) {
	h := newConnectHome(t)
	out, code := h.run("connect", "claud-desktop")
	if code != 2 || !strings.Contains(out, `unknown host "claud-desktop"; did you mean "claude-desktop"?`) {
		t.Errorf("connect claud-desktop: exit %d\n%s", code, out)
	}
}
