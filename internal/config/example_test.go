package config_test

import (
	"fmt"
	"strings"

	"github.com/junction-mcp/junction/internal/config"
)

func ExampleParse() {
	const file = `{
  "mcpServers": {
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    },
    "linear": {"type": "http", "url": "https://mcp.linear.app/mcp"}
  }
}`
	getenv := func(name string) string { return map[string]string{"GITHUB_TOKEN": "ghp_example"}[name] }
	c, err := config.Parse(strings.NewReader(file), "json", getenv)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range c.Enabled() {
		s := c.Servers[name]
		fmt.Println(name, s.Transport, s.Prefix)
	}
	// Output:
	// github stdio always
	// linear http always
}

func ExampleParse_errors() {
	const file = `
servers:
  github:
    url: https://api.githubcopilot.com/mcp/
    timeout: abc
    tols: {deny: [delete_repository]}
`
	_, err := config.Parse(strings.NewReader(file), "yaml", nil)
	fmt.Println(err)
	// Output:
	// line 5: servers.github.timeout: invalid duration "abc" (use a number of seconds or a Go duration such as "30s" or "2m")
	// line 6: servers.github.tols: unknown key (did you mean "tools"?)
}

func ExampleDiff() {
	parse := func(s string) *config.Config {
		c, err := config.Parse(strings.NewReader(s), "yaml", nil)
		if err != nil {
			panic(err)
		}
		return c
	}
	old := parse("servers:\n  a: {command: x}\n  b: {command: y}\n  c: {command: z}\n")
	new := parse("servers:\n  a: {command: x}\n  b: {command: y, timeout: 5s}\n  d: {command: w}\n")
	d := config.Diff(old, new)
	fmt.Println("start:", d.Servers.Added, "stop:", d.Servers.Removed,
		"retune:", d.Servers.Updated, "keep:", d.Servers.Unchanged)
	// Output:
	// start: [d] stop: [c] retune: [b] keep: [a]
}
