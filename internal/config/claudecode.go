package config

import (
	"os"
	"path/filepath"
)

// ShapeClaudeCode is Claude Code's ~/.claude.json: its user-scope servers
// at the top level, each project's local-scope servers under
// projects[DIR].mcpServers, and many settings of Claude Code's own.
const ShapeClaudeCode = "claude-code"

// MaxClaudeCodeFileSize is the largest ~/.claude.json Load reads: Claude
// Code keeps each project's history in it, so it grows past MaxFileSize.
const MaxClaudeCodeFileSize = 64 << 20

// claudeCodeKeys are top-level keys only Claude Code's ~/.claude.json has;
// with "projects", one of them marks the file when it is not read through
// Load under its usual name.
var claudeCodeKeys = []string{"numStartups", "userID", "firstStartTime", "installMethod", "autoUpdates", "tipsHistory", "oauthAccount", "hasCompletedOnboarding"}

// isClaudeCode reports whether root is Claude Code's ~/.claude.json: the
// file has that name, or it has "projects" and a key only Claude Code
// writes.
func (d *decoder) isClaudeCode(root *node) bool {
	if root.kind != mapNode {
		return false
	}
	if d.x.claudeCode {
		return true
	}
	projects, marked := false, false
	for _, e := range root.entries {
		if e.key == "projects" && e.val.kind == mapNode {
			projects = true
		}
		for _, k := range claudeCodeKeys {
			marked = marked || e.key == k
		}
	}
	return projects && marked
}

// claudeCode reads ~/.claude.json as Claude Code does in the project
// directory d.x.project: the top-level mcpServers (user scope), then that
// project's mcpServers (local scope), which win on a name in both. Every
// other key, and the other projects, are Claude Code's and ignored.
func (d *decoder) claudeCode(root *node) *Config {
	c := &Config{
		HTTP:  HTTP{Mode: "dual"},
		Log:   Log{Level: "info", Format: "text"},
		Shape: ShapeClaudeCode,
	}
	c.lines = d.lines
	var local *node
	localPath := ""
	for _, e := range root.entries {
		switch e.key {
		case "mcpServers":
			d.lines["mcpServers"] = e.line
			d.servers(c, e.val, "mcpServers")
		case "projects":
			if d.x.project == "" || e.val.kind != mapNode {
				continue
			}
			for _, p := range e.val.entries {
				if !sameDir(p.key, d.x.project) || p.val.kind != mapNode {
					continue
				}
				for _, f := range p.val.entries {
					if f.key == "mcpServers" {
						local, localPath = f.val, join(join("projects", p.key), "mcpServers")
						d.lines[localPath] = f.line
					}
				}
			}
		}
	}
	if local != nil {
		for _, e := range d.mapping(local, localPath) {
			delete(c.Servers, e.key) // local scope wins over user scope
		}
		d.servers(c, local, localPath)
	}
	if c.Servers == nil {
		c.Servers = map[string]*Server{}
	}
	return c
}

func sameDir(a, b string) bool {
	if filepath.Clean(filepath.FromSlash(a)) == filepath.Clean(filepath.FromSlash(b)) {
		return true
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}
