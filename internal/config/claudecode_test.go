package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const claudeJSON = `{
  "numStartups": 42,
  "theme": "dark",
  "tipsHistory": {"new-user-warmup": 7},
  "mcpServers": {
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}},
    "shared": {"command": "user-version"}
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
        "sentry": {"type": "http", "url": "https://mcp.sentry.dev/mcp", "headers": {"X-Org": "acme"}},
        "shared": {"command": "local-version"}
      },
      "hasTrustDialogAccepted": true
    }
  },
  "userID": "abc"
}
`

func TestClaudeCodeFile(t *testing.T) {
	home := t.TempDir()
	proj := filepath.Join(home, "src", "app")
	os.MkdirAll(proj, 0o755)
	file := filepath.Join(home, ".claude.json")
	os.WriteFile(file, []byte(strings.Replace(claudeJSON, "PROJ", proj, 1)), 0o600)

	t.Chdir(proj)
	c, err := Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Shape != ShapeClaudeCode {
		t.Errorf("shape %q", c.Shape)
	}
	if got := strings.Join(sortedKeys(c.Servers), ","); got != "memory,sentry,shared" {
		t.Errorf("servers in the project: %s, want memory,sentry,shared", got)
	}
	if c.Servers["shared"].Command != "local-version" {
		t.Errorf("the local scope does not win: %q", c.Servers["shared"].Command)
	}
	if s := c.Servers["sentry"]; s.Transport != TransportHTTP || s.Headers["X-Org"] != "acme" {
		t.Errorf("sentry: %+v", s)
	}
	if line := c.Line(c.FieldPath("server", "sentry")); line != 18 {
		t.Errorf("sentry at line %d, want 18", line)
	}

	// Elsewhere: only the user's servers.
	t.Chdir(home)
	c, err = Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sortedKeys(c.Servers), ","); got != "memory,shared" {
		t.Errorf("servers outside the project: %s", got)
	}

	// Under another name, recognised by its keys.
	other := filepath.Join(home, "copy.json")
	os.WriteFile(other, []byte(claudeJSON), 0o600)
	if c, err := Load(other, nil); err != nil || c.Shape != ShapeClaudeCode {
		t.Errorf("a copy of ~/.claude.json: %v", err)
	}
	// A bad server is still an error, with its path.
	os.WriteFile(file, []byte(`{"numStartups": 1, "mcpServers": {"bad": {"command": "x", "url": "http://y"}}}`), 0o600)
	if _, err := Load(file, nil); err == nil || !strings.Contains(err.Error(), "mcpServers.bad") {
		t.Errorf("bad server: %v", err)
	}
}

func TestClaudeCodeFileLarge(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".claude.json")
	pad := strings.Repeat("x", MaxFileSize)
	os.WriteFile(file, []byte(`{"numStartups": 1, "cachedHistory": "`+pad+`", "mcpServers": {"a": {"command": "a"}}}`), 0o600)
	c, err := Load(file, nil)
	if err != nil || c.Servers["a"] == nil {
		t.Fatalf("a ~/.claude.json over %d bytes: %v", MaxFileSize, err)
	}
}
