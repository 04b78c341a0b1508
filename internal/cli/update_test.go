package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/config"
	"github.com/junction-mcp/junction/internal/registry"
)

// TestMovedConfig: update changes the pin and registry.version and
// nothing else, in YAML and JSON, even where another server runs the
// same package at the same version.
func TestMovedConfig(t *testing.T) {
	for _, tc := range []struct{ file, in, want string }{
		{"j.yaml", `# mine
servers:
  other: {command: npx, args: [-y, "@x/mem@1.0.0"]}
  mem:
    command: npx
    args: [-y, "@x/mem@1.0.0", --flag]   # pinned
    registry:
      name: io.github.x/mem
      version: 1.0.0
`, `# mine
servers:
  other: {command: npx, args: [-y, "@x/mem@1.0.0"]}
  mem:
    command: npx
    args: [-y, "@x/mem@1.1.0", --flag]   # pinned
    registry:
      name: io.github.x/mem
      version: 1.1.0
`},
		{"j.json", `{
  "servers": {
    "mem": {"command": "npx", "args": ["-y", "@x/mem@1.0.0"], "registry": {"name": "io.github.x/mem", "version": "1.0.0"}},
    "other": {"command": "npx", "args": ["-y", "@x/mem@1.0.0"], "registry": {"name": "io.github.x/mem", "version": "1.0.0"}}
  }
}
`, `{
  "servers": {
    "mem": {"command": "npx", "args": ["-y", "@x/mem@1.1.0"], "registry": {"name": "io.github.x/mem", "version": "1.1.0"}},
    "other": {"command": "npx", "args": ["-y", "@x/mem@1.0.0"], "registry": {"name": "io.github.x/mem", "version": "1.0.0"}}
  }
}
`},
	} {
		path := filepath.Join(t.TempDir(), tc.file)
		if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		next := &registry.ServerJSON{Name: "io.github.x/mem", Version: "1.1.0", Description: "d",
			Packages: []registry.Package{{RegistryType: "npm", Identifier: "@x/mem", Version: "1.1.0", Transport: registry.Transport{Type: "stdio"}}}}
		m, err := pinMove(cfg.Servers["mem"], next)
		if err != nil {
			t.Fatalf("%s: pinMove: %v", tc.file, err)
		}
		got, err := movedConfig(path, []byte(tc.in), "mem", m, "1.1.0")
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tc.file, got, tc.want)
		}
	}
}

func TestPinMoveRefusals(t *testing.T) {
	s := &config.Server{Transport: config.TransportStdio, Command: "npx", Args: []string{"-y", "@x/mem@1.0.0"}, Env: map[string]string{}}
	pkg := func(id string, env ...registry.KeyValueInput) *registry.ServerJSON {
		return &registry.ServerJSON{Name: "io.github.x/mem", Version: "1.1.0", Description: "d",
			Packages: []registry.Package{{RegistryType: "npm", Identifier: id, Version: "1.1.0", Transport: registry.Transport{Type: "stdio"}, EnvironmentVariables: env}}}
	}
	for _, tc := range []struct {
		s    *config.Server
		next *registry.ServerJSON
		want string
	}{
		{s, pkg("@x/memory"), "pin none of its npm packages (@x/memory)"},
		{s, pkg("@x/mem", registry.KeyValueInput{Name: "MEM_TOKEN", Input: registry.Input{IsRequired: true, Description: "a token"}}), "needs the environment variable MEM_TOKEN (a token)"},
		{&config.Server{Transport: config.TransportStdio, Command: "node", Args: []string{"x.js"}}, pkg("@x/mem"), `runs "node", not npx, uvx or docker`},
		{&config.Server{Transport: config.TransportHTTP, URL: "https://a.example/mcp"}, pkg("@x/mem"), "has no streamable-http remote"},
	} {
		if _, err := pinMove(tc.s, tc.next); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("pinMove: %v, want %q", err, tc.want)
		}
	}
}
