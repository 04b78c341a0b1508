package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSelfReferences(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	exe := filepath.Join(bin, "junction")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "jn")
	if err := os.Symlink(exe, link); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "claude_desktop_config.json")
	src := `{"mcpServers": {
  "bare":    {"command": "junction", "args": ["serve", "-config", "` + cfgPath + `"]},
  "byenv":   {"command": "` + link + `", "args": ["serve"], "env": {"JUNCTION_CONFIG": "` + cfgPath + `"}},
  "eqform":  {"command": "junction", "args": ["serve", "--config=` + cfgPath + `", "-pack", "core"]},
  "another": {"command": "junction", "args": ["serve", "-config", "x.yaml"]},
  "packs":   {"command": "junction", "args": ["serve", "-no-default-packs", "-pack", "conformance"]},
  "linked":  {"command": "` + link + `", "args": ["mcp", "-mcp-preset", "x"]},
  "tools":   {"command": "junction", "args": ["tools", "list"]},
  "wrapper": {"command": "/usr/bin/env", "args": ["junction", "serve"]},
  "other":   {"command": "npx", "args": ["-y", "server-everything"]},
  "remote":  {"url": "https://example.com/mcp"}
}}`
	if err := os.WriteFile(cfgPath, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": bin}
	getenv := func(k string) string { return env[k] }
	load := func() *Config {
		c, err := Load(cfgPath, getenv)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	names := func(refs []SelfRef) string {
		var n []string
		for _, r := range refs {
			n = append(n, r.Name)
		}
		return strings.Join(n, ",")
	}

	self := Self{Executable: exe, ConfigPath: cfgPath, Getenv: getenv}
	// junction on another config, serving packs, or "junction mcp" is an
	// ordinary upstream; junction on this very file is not.
	if got := names(load().SelfReferences(self)); got != "bare,byenv,eqform" {
		t.Errorf("by command path: %q, want bare,byenv,eqform", got)
	}
	// JUNCTION_CONFIG inherited from this process counts too.
	env["JUNCTION_CONFIG"] = cfgPath
	if got := names(load().SelfReferences(self)); got != "bare,byenv,eqform,packs" {
		t.Errorf("with JUNCTION_CONFIG inherited: %q, want bare,byenv,eqform,packs", got)
	}
	delete(env, "JUNCTION_CONFIG")

	// The marker: started as "wrapper" by a hub serving the same file.
	env[EnvHubConfig], env[EnvHubSource], env[EnvHubPID], env[EnvHubDepth] = cfgPath, "wrapper", "42", "1"
	c := load()
	refs := c.SkipSelf(self)
	if got := names(refs); got != "bare,byenv,eqform,wrapper" {
		t.Errorf("with the marker: %q, want bare,byenv,eqform,wrapper", got)
	}
	if !c.Servers["wrapper"].Disabled || c.Servers["other"].Disabled {
		t.Errorf("SkipSelf disabled the wrong servers")
	}
	var warned bool
	for _, w := range c.Warnings {
		if w.Path == "mcpServers.wrapper" && strings.Contains(w.Msg, "pid 42") && w.Line == 9 {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning for wrapper at line 9: %v", c.Warnings)
	}

	// The marker for another config file names another entry.
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte("{}"), 0o644)
	env[EnvHubConfig] = other
	if got := names(load().SelfReferences(self)); got != "bare,byenv,eqform" {
		t.Errorf("marker of another file: %q, want bare,byenv,eqform", got)
	}

	// Nested too deep: no stdio server starts.
	env[EnvHubDepth] = "4"
	if got := names(load().SelfReferences(Self{Getenv: getenv})); got != "another,bare,byenv,eqform,linked,other,packs,tools,wrapper" {
		t.Errorf("at depth 4: %q, want every stdio server", got)
	}
}
