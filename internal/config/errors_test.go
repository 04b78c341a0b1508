package config

import (
	"errors"
	"strings"
	"testing"
)

// TestParseErrors pins the exact message of every error path. Each row is
// a small file and the full error text Parse returns for it.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SET": "value"}
	tests := []struct {
		name   string
		format string
		in     string
		want   string
	}{
		// Syntax.
		{"yaml syntax", "yaml", "servers:\n  a: [\n", "line 2: invalid YAML: did not find expected node content"},
		{"yaml two documents", "yaml", "log: {}\n---\nlog: {}\n", "line 2: invalid YAML: more than one document in the file"},
		{"yaml duplicate key", "yaml", "servers:\n  a: {command: x}\n  a: {command: y}\n", `line 3: key "a" appears twice (first on line 2)`},
		{"yaml merge key", "yaml", "base: &b {command: x}\nservers:\n  a:\n    <<: *b\n", "line 4: YAML merge keys (<<) are not supported; repeat the settings"},
		{"json syntax", "json", "{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"\n  }\n", "line 5: invalid JSON: expected ',' or '}' after an object member, found end of file"},
		{"json duplicate key", "json", "{\"servers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}}}", `line 3: key "a" appears twice (first on line 2)`},
		{"json single quotes", "json", "{'servers': {}}", `line 1: invalid JSON: expected a double-quoted key, found character '\''`},
		{"json trailing garbage", "json", "{} {}", `line 1: invalid JSON: unexpected character '{' after the top-level value`},
		{"json bad number", "json", `{"http": {"max_request_bytes": 1.2.3}}`, `line 1: invalid JSON: bad number "1.2.3"`},
		{"json unterminated comment", "json", "{\n/* oops\n}", "line 2: invalid JSON: unterminated /* comment"},
		{"top level list", "yaml", "- a\n- b\n", "line 1: the top level must be a mapping of sections (servers, packs, ...), got a list"},

		// Unknown keys, with and without suggestions.
		{"unknown top key", "yaml", "server:\n  a: {command: x}\n", `line 1: server: unknown key (did you mean "servers"?)`},
		{"unknown server key", "yaml", "servers:\n  github:\n    command: x\n    tols: {allow: [a]}\n", `line 4: servers.github.tols: unknown key (did you mean "tools"?)`},
		{"unknown far key", "yaml", "servers:\n  github:\n    command: x\n    colour: blue\n", `line 4: servers.github.colour: unknown key`},
		{"unknown tools key", "yaml", "servers:\n  a:\n    command: x\n    tools: {allwo: [b]}\n", `line 4: servers.a.tools.allwo: unknown key (did you mean "allow"?)`},
		{"unknown http key", "yaml", "http:\n  listn: 127.0.0.1:1\n", `line 2: http.listn: unknown key (did you mean "listen"?)`},
		{"unknown mcpServers key", "json", "{\"mcpServers\": {\"a\": {\"comand\": \"x\"}}}", `line 1: mcpServers.a.comand: unknown key (did you mean "command"?)`},
		{"quoted path", "yaml", "servers:\n  my server:\n    command: x\n", `line 2: servers["my server"]: name "my server" may use only letters, digits, "_", "-" and "." (it becomes part of tool names)`},

		// Bad values.
		{"bad duration", "yaml", "servers:\n  github:\n    command: x\n    timeout: abc\n", `line 4: servers.github.timeout: invalid duration "abc" (use a number of seconds or a Go duration such as "30s" or "2m")`},
		{"duration of wrong type", "yaml", "servers:\n  a:\n    command: x\n    timeout: [1]\n", `line 4: servers.a.timeout: expected a duration, got a list`},
		{"negative timeout", "yaml", "servers:\n  a:\n    command: x\n    timeout: -1s\n", `line 4: servers.a.timeout: must not be negative (write "none" for no timeout)`},
		{"zero tool timeout", "yaml", "servers:\n  a:\n    command: x\n    tool_timeouts: {slow: 0}\n", `line 4: servers.a.tool_timeouts.slow: must be positive (write "none" for no timeout)`},
		{"negative keep_alive", "yaml", "servers:\n  a:\n    command: x\n    keep_alive: -5s\n", `line 4: servers.a.keep_alive: must not be negative`},
		{"negative withdraw_after", "yaml", "servers:\n  a:\n    command: x\n    withdraw_after: -5s\n", `line 4: servers.a.withdraw_after: must not be negative (write never to keep the tools listed)`},
		{"unknown sessions mode", "yaml", "servers:\n  a:\n    command: x\n    sessions: per-client\n", `line 4: servers.a.sessions: unknown sessions mode "per-client" (use shared or per_host)`},
		{"max_host_sessions without per_host", "yaml", "servers:\n  a:\n    command: x\n    max_host_sessions: 4\n", `line 4: servers.a.max_host_sessions: only applies with sessions: per_host or credentials: per_user`},
		{"max_host_sessions negative", "yaml", "servers:\n  a:\n    command: x\n    sessions: per_host\n    max_host_sessions: -1\n", `line 5: servers.a.max_host_sessions: must be between 0 (the default) and 1024`},
		{"withdraw_after not a duration", "yaml", "servers:\n  a:\n    command: x\n    withdraw_after: soon\n", `line 4: servers.a.withdraw_after: invalid duration "soon" (use a number of seconds or a Go duration such as "30s" or "2m")`},
		{"bool expected", "yaml", "servers:\n  a:\n    command: x\n    disabled: \"yes\"\n", `line 4: servers.a.disabled: expected true or false, got the string "yes"`},
		{"string expected", "yaml", "servers:\n  a:\n    command: {x: 1}\n", `line 3: servers.a.command: expected a string, got a mapping`},
		{"list expected", "yaml", "servers:\n  a:\n    command: x\n    args: --verbose\n", `line 4: servers.a.args: expected a list of strings, got the string "--verbose"`},
		{"list item", "json", "{\"servers\": {\"a\": {\"command\": \"x\", \"args\": [\"ok\", {}]}}}", `line 1: servers.a.args[1]: expected a string, got a mapping`},
		{"mapping expected", "yaml", "servers: [a, b]\n", `line 1: servers: expected a mapping, got a list`},
		{"bad transport", "yaml", "servers:\n  a:\n    transport: websocket\n    url: http://x\n", `line 3: servers.a.transport: unknown transport "websocket" (use stdio, sse or http)`},
		{"bad prefix", "yaml", "servers:\n  a:\n    command: x\n    prefix: sometimes\n", `line 4: servers.a.prefix: unknown prefix mode "sometimes" (use always, on-conflict, never or mcp)`},
		{"bad drift", "yaml", "servers:\n  a:\n    command: x\n    drift: ignore\n", `line 4: servers.a.drift: unknown drift policy "ignore" (use warn, block or accept)`},
		{"integer expected", "yaml", "http:\n  max_request_bytes: lots\n", `line 2: http.max_request_bytes: expected a whole number, got the string "lots"`},
		{"env name", "json", `{"servers": {"a": {"command": "x", "env": {"A=B": "c"}}}}`, `line 1: servers.a.env["A=B"]: invalid environment variable name "A=B"`},

		// Aliases.
		{"alias twice", "json", `{"servers": {"a": {"type": "stdio", "transport": "stdio", "command": "x"}}}`, `line 1: servers.a.transport: type and transport say the same thing; keep one`},
		{"deny alias and tools", "yaml", "servers:\n  a:\n    command: x\n    tools: {deny: [b]}\n    disabledTools: [c]\n", `line 5: servers.a.disabledTools: set tools.deny instead, not both disabledTools and tools`},

		// Transports.
		{"stdio needs command", "yaml", "servers:\n  a:\n    transport: stdio\n", `line 2: servers.a.command: must not be empty (a stdio server needs a command)`},
		{"http needs url", "yaml", "servers:\n  a:\n    transport: http\n", `line 2: servers.a.url: must not be empty (an http server needs a url)`},
		{"bad url", "yaml", "servers:\n  a:\n    url: ftp://x/y\n", `line 3: servers.a.url: invalid URL "ftp://x/y": must be http:// or https:// with a host`},
		{"bad sse url", "yaml", "servers:\n  a:\n    transport: sse\n    url: ftp://x/y\n", `line 4: servers.a.url: invalid URL "ftp://x/y": must be http:// or https:// with a host`},
		{"neither command nor url", "yaml", "servers:\n  a: {}\n", `line 2: servers.a: needs a command (for a stdio server) or a url (for an sse or http server)`},
		{"both command and url", "yaml", "servers:\n  a: {command: x, url: \"http://h\"}\n", `line 2: servers.a: has both command and url: set transport, or keep only one`},
		{"stdio with headers", "yaml", "servers:\n  a:\n    command: x\n    headers: {A: b}\n", `line 4: servers.a.headers: not used by a stdio server (remove it or change the transport)`},
		{"http with args", "yaml", "servers:\n  a:\n    type: http\n    url: https://h/mcp\n    args: [x]\n", `line 5: servers.a.args: not used by a http server (remove it or change the transport)`},
		{"bad header", "yaml", "servers:\n  a:\n    url: https://h\n    headers: {\"Bad Name\": x}\n", `line 4: servers.a.headers["Bad Name"]: invalid header name "Bad Name"`},

		// Names.
		{"double underscore", "yaml", "servers:\n  a__b: {command: x}\n", `line 2: servers.a__b: name must not contain "__" (it separates the source name from the tool name)`},
		{"empty name", "json", `{"servers": {"": {"command": "x"}}}`, `line 1: servers[""]: name must not be empty`},
		{"in both sections", "json", "{\"servers\": {\"a\": {\"command\": \"x\"}},\n\"mcpServers\": {\"a\": {\"command\": \"y\"}}}", `line 2: mcpServers.a: server "a" is defined in both servers and mcpServers`},
		{"server and plugin", "yaml", "servers:\n  a: {command: x}\nplugins:\n  a: {command: y}\n", `line 4: plugins.a: name already used by servers.a`},
		{"pack listed twice", "yaml", "packs: [core, core]\n", `line 1: packs[1]: pack "core" is listed twice`},

		// Filters.
		{"allow and deny", "yaml", "servers:\n  a:\n    command: x\n    tools: {allow: [b], deny: [c]}\n", `line 4: servers.a.tools: set allow or deny, not both`},
		{"empty tool name", "yaml", "servers:\n  a:\n    command: x\n    tools:\n      deny: [\"\"]\n", `line 5: servers.a.tools.deny[0]: must not be empty`},

		// Plugins.
		{"plugin neither", "yaml", "plugins:\n  p: {timeout: 1s}\n", `line 2: plugins.p: needs a command (a plugin program to run) or a url (a plugin to dial)`},
		{"plugin both", "yaml", "plugins:\n  p: {command: x, url: \"http://h\"}\n", `line 2: plugins.p: has both command and url; keep one`},
		{"plugin unknown key", "yaml", "plugins:\n  p: {command: x, transport: stdio}\n", `line 2: plugins.p.transport: unknown key`},

		// Presets and profiles.
		{"empty preset", "yaml", "presets:\n  ro: []\n", `line 2: presets.ro: must list at least one tool`},
		{"profile unknown server", "yaml", "servers:\n  github: {command: x}\nprofiles:\n  p:\n    servers: [gitub]\n", `line 5: profiles.p.servers[0]: unknown source "gitub" (did you mean "github"?)`},
		{"profile name", "yaml", "profiles:\n  a/b: {}\n", `line 2: profiles["a/b"]: profile name "a/b" may use only letters, digits, "_", "-" and "." (it becomes part of the URL /mcp/p/<name>)`},
		{"profile unknown key", "yaml", "profiles:\n  p: {tool: [x]}\n", `line 2: profiles.p.tool: unknown key (did you mean "tools"?)`},

		// HTTP, lock, log.
		{"listen", "yaml", "http:\n  listen: 7331\n", `line 2: http.listen: invalid address "7331": want host:port, such as 127.0.0.1:7331`},
		{"insecure on public address", "yaml", "http:\n  listen: 0.0.0.0:7331\n  insecure_no_auth: true\n", `line 3: http.insecure_no_auth: only allowed when http.listen is a loopback address, not "0.0.0.0"`},
		{"insecure with tokens", "yaml", "http:\n  tokens: [a]\n  insecure_no_auth: true\n", `line 3: http.insecure_no_auth: contradicts http.tokens and http.token_file; keep one`},
		{"http mode", "yaml", "http:\n  mode: sessions\n", `line 2: http.mode: unknown HTTP mode "sessions" (use dual, stateful or stateless)`},
		{"origin", "yaml", "http:\n  allowed_origins: [hub.internal]\n", `line 2: http.allowed_origins[0]: invalid origin "hub.internal": want scheme://host[:port]`},
		{"lock key", "yaml", "lock:\n  file: x.lock\n", `line 2: lock.file: unknown key`},
		{"log level", "yaml", "log:\n  level: loud\n", `line 2: log.level: unknown level "loud" (use debug, info, warn or error)`},
		{"log format", "yaml", "log: {format: xml}\n", `line 1: log.format: unknown format "xml" (use text or json)`},

		// Variables.
		{"unset variable", "yaml", "servers:\n  a:\n    command: x\n    env: {TOKEN: \"${NOPE}\"}\n", `line 4: servers.a.env.TOKEN: environment variable NOPE is not set (write ${NOPE:-} to allow it to be empty)`},
		{"unset in url", "yaml", "servers:\n  a:\n    url: https://${HOST}/mcp\n", `line 3: servers.a.url: environment variable HOST is not set (write ${HOST:-} to allow it to be empty)`},
		{"unterminated", "yaml", "servers:\n  a:\n    command: \"${SET\"\n", `line 3: servers.a.command: unterminated reference "${SET" (write $${ for a literal ${)`},
		{"bad name", "yaml", "servers:\n  a:\n    command: \"${1X}\"\n", `line 3: servers.a.command: bad reference ${1X}: use ${NAME} or ${NAME:-default}, where NAME is letters, digits and _`},
		{"vscode input", "json", `{"servers": {"a": {"command": "x", "env": {"KEY": "${input:api-key}"}}}}`, `line 1: servers.a.env.KEY: ${input:api-key} is a VS Code input prompt, which junction cannot show; use an environment variable instead, such as ${API_KEY}`},
		{"workspace without file", "json", `{"servers": {"a": {"command": "x", "cwd": "${workspaceFolder}"}}}`, `line 1: servers.a.cwd: ${workspaceFolder} is only known when the config is loaded from a file`},
		{"token variable", "yaml", "http:\n  tokens: [\"${TOK}\"]\n", `line 2: http.tokens[0]: environment variable TOK is not set (write ${TOK:-} to allow it to be empty)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(tt.in), tt.format, func(k string) string { return env[k] })
			if err == nil {
				t.Fatalf("Parse(%q) = nil error, want %q", tt.in, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Parse(%q) error =\n  %s\nwant\n  %s", tt.in, got, tt.want)
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Errorf("Parse error %T is not an Errors", err)
			}
		})
	}
}

// TestParseCollectsAllErrors checks that problems in different places are
// all reported, in file order, and that a server whose keys failed to
// decode gets no extra validation errors.
func TestParseCollectsAllErrors(t *testing.T) {
	t.Parallel()
	in := `servers:
  github:
    url: https://api.example.com/mcp
    timeout: abc
  fs:
    transport: stdio
  x__y:
    command: run
http:
  mode: nope
profiles:
  p:
    servers: [github, nope]
`
	want := `line 4: servers.github.timeout: invalid duration "abc" (use a number of seconds or a Go duration such as "30s" or "2m")
line 5: servers.fs.command: must not be empty (a stdio server needs a command)
line 7: servers.x__y: name must not contain "__" (it separates the source name from the tool name)
line 10: http.mode: unknown HTTP mode "nope" (use dual, stateful or stateless)
line 13: profiles.p.servers[1]: unknown source "nope"`
	_, err := Parse(strings.NewReader(in), "yaml", nil)
	if err == nil {
		t.Fatal("Parse = nil error")
	}
	if got := err.Error(); got != want {
		t.Errorf("Parse error =\n%s\nwant\n%s", got, want)
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != 5 {
		t.Errorf("Parse error has %d problems, want 5", len(es))
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	if _, err := Parse(strings.NewReader("{}"), "toml", nil); err == nil || err.Error() != `config: unknown format "toml" (use yaml or json)` {
		t.Errorf("Parse(format toml) = %v", err)
	}
	big := strings.Repeat("#", MaxFileSize+1)
	if _, err := Parse(strings.NewReader(big), "yaml", nil); err == nil || !strings.Contains(err.Error(), "file larger than") {
		t.Errorf("Parse(huge) = %v, want a size error", err)
	}
	// Billion laughs: aliases that expand exponentially.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i, n := range []string{"b", "c", "d", "e", "f", "g"} {
		_ = i
		bomb += n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = n
	}
	if _, err := Parse(strings.NewReader(bomb), "yaml", nil); err == nil || !strings.Contains(err.Error(), "document too large") {
		t.Errorf("Parse(alias bomb) = %v, want a size error", err)
	}
	deep := strings.Repeat("[", 500) + strings.Repeat("]", 500)
	if _, err := Parse(strings.NewReader(deep), "json", nil); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("Parse(deep) = %v, want a depth error", err)
	}
}
