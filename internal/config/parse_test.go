package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var ignoreUnexported = cmpopts.IgnoreUnexported(Config{})

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestShapes reads the same two servers written in every accepted shape,
// in YAML and in JSON, and checks they all give the same servers.
func TestShapes(t *testing.T) {
	t.Parallel()
	want := map[string]*Server{
		"fs": {
			Transport: TransportStdio,
			Command:   "npx",
			Args:      []string{"-y", "@modelcontextprotocol/server-filesystem", "/tmp"},
			Env:       map[string]string{"TOKEN": "secret"},
			Source:    Source{Prefix: PrefixAlways, Drift: DriftWarn},
		},
		"remote": {
			Transport: TransportHTTP,
			URL:       "https://example.com/mcp",
			Headers:   map[string]string{"Authorization": "Bearer secret"},
			Source:    Source{Prefix: PrefixAlways, Drift: DriftWarn},
		},
	}
	tests := []struct {
		name, format, shape, in string
	}{
		{"claude desktop json", "json", ShapeMCPServers, `{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"TOKEN": "${TOKEN}"}},
    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
  }
}`},
		{"claude code json with type", "json", ShapeMCPServers, `{
  "mcpServers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"TOKEN": "${TOKEN}"}},
    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
  }
}`},
		{"mcpServers yaml", "yaml", ShapeMCPServers, `
mcpServers:
  fs:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]
    env: {TOKEN: "${TOKEN}"}
  remote:
    url: https://example.com/mcp
    headers: {Authorization: "Bearer ${TOKEN}"}
`},
		{"vscode json", "json", ShapeVSCode, `{
	// comments and trailing commas, as VS Code allows
	"servers": {
		"fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"TOKEN": "${env:TOKEN}"},},
		"remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
	},
	"inputs": [],
}`},
		{"junction yaml", "yaml", ShapeJunction, `
servers:
  fs:
    transport: stdio
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]
    env:
      TOKEN: ${TOKEN}
  remote:
    transport: http
    url: https://example.com/mcp
    headers:
      Authorization: Bearer ${TOKEN}
log:
  level: info
`},
		{"junction json", "json", ShapeJunction, `{
  "servers": {
    "fs": {"transport": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"TOKEN": "${TOKEN}"}},
    "remote": {"transport": "streamable-http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
  },
  "log": {"level": "info"}
}`},
		{"sniffed json", "", ShapeMCPServers, `  {"mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"TOKEN": "${TOKEN}"}},
    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`},
		{"sniffed yaml", "", ShapeJunction, `
servers:
  fs: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", /tmp], env: {TOKEN: "${TOKEN}"}}
  remote: {url: "https://example.com/mcp", headers: {Authorization: "Bearer ${TOKEN}"}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(strings.NewReader(tt.in), tt.format, mapEnv(map[string]string{"TOKEN": "secret"}))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(want, c.Servers); diff != "" {
				t.Errorf("Parse servers mismatch (-want +got):\n%s", diff)
			}
			if c.Shape != tt.shape {
				t.Errorf("Parse shape = %q, want %q", c.Shape, tt.shape)
			}
			if c.Packs != nil {
				t.Errorf("Parse packs = %v, want nil (daemon defaults)", c.Packs)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse(strings.NewReader(""), "yaml", nil)
	if err != nil {
		t.Fatalf("Parse(empty): %v", err)
	}
	want := &Config{HTTP: HTTP{Mode: "dual"}, Log: Log{Level: "info", Format: "text"}, Shape: ShapeJunction}
	if diff := cmp.Diff(want, c, ignoreUnexported); diff != "" {
		t.Errorf("Parse(empty) mismatch (-want +got):\n%s", diff)
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("zero Config.Validate() = %v, want nil", err)
	}
}

// TestJunctionForm checks every key of junction's own form.
func TestJunctionForm(t *testing.T) {
	t.Parallel()
	in := `
servers:
  gh:
    transport: sse
    url: https://h/sse
    bearer_token: ${TOKEN}
    prefix: never
    tools: {deny: [a, b]}
    timeout: 90
    tool_timeouts: {slow: 2m, quick: 1.5, forever: none}
    drift: block
    disabled: true
    connect_timeout: 5s
    keep_alive: 30s
    stop_timeout: 1s
    protocol_version: "2025-06-18"
    withdraw_after: 5m
  local:
    timeout: none
    withdraw_after: never
    command: ./srv
    args: [--port, 8080, true]
    cwd: /srv
    env_file: .env
    env: {N: 1, GONE: null}
    prefix: on-conflict
    tools: {allow: [x]}
packs:
  core: {}
  diode:
    prefix: always
    settings:
      target: ${TARGET:-localhost:1}
      retries: 3
      ratio: 0.5
      verbose: true
      hosts: [a, "${TOKEN}"]
      nested: {k: v}
plugins:
  weather:
    command: ./weather
    args: [-v]
    env: {A: b}
    timeout: 5s
  remote:
    url: http://127.0.0.1:9000
    headers: {X-Key: k}
    bearer_token: t
presets:
  ro: [gh__a, local__x]
profiles:
  p:
    servers: [gh, diode]
    tools: [local__x]
    presets: [ro, minimal]
    deny: [gh__b]
http:
  listen: 127.0.0.1:7331
  mode: stateless
  json_response: true
  session_timeout: -1s
  session_park: 30s
  max_request_bytes: 1048576
  tokens: [one, "${TOKEN}"]
  token_file: /etc/junction/tokens
  allowed_hosts: [hub.internal]
  allowed_origins: ["https://hub.internal:8443"]
lock: junction.lock
log: {level: debug, format: json}
`
	c, err := Parse(strings.NewReader(in), "yaml", mapEnv(map[string]string{"TOKEN": "tok"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Config{
		Servers: map[string]*Server{
			"gh": {Transport: TransportSSE, URL: "https://h/sse", BearerToken: "tok", Source: Source{
				Prefix: PrefixNever, Tools: ToolFilter{Deny: []string{"a", "b"}}, Timeout: 90 * time.Second,
				ToolTimeouts: map[string]time.Duration{"slow": 2 * time.Minute, "quick": 1500 * time.Millisecond, "forever": NoTimeout},
				Drift:        DriftBlock, Disabled: true},
				ConnectTimeout: 5 * time.Second, KeepAlive: 30 * time.Second, StopTimeout: time.Second, ProtocolVersion: "2025-06-18",
				WithdrawAfter: 5 * time.Minute},
			"local": {Transport: TransportStdio, Command: "./srv", Args: []string{"--port", "8080", "true"}, Cwd: "/srv", WithdrawAfter: NoTimeout,
				EnvFile: ".env", Env: map[string]string{"N": "1"}, UnsetEnv: []string{"GONE"},
				Source: Source{Prefix: PrefixOnConflict, Tools: ToolFilter{Allow: []string{"x"}}, Drift: DriftWarn, Timeout: NoTimeout}},
		},
		Packs: map[string]*Pack{
			"core": {Source: Source{Prefix: PrefixNever, Drift: DriftWarn}},
			"diode": {Settings: map[string]any{"target": "localhost:1", "retries": int64(3), "ratio": 0.5, "verbose": true,
				"hosts": []any{"a", "tok"}, "nested": map[string]any{"k": "v"}},
				Source: Source{Prefix: PrefixAlways, Drift: DriftWarn}},
		},
		Plugins: map[string]*Plugin{
			"weather": {Command: "./weather", Args: []string{"-v"}, Env: map[string]string{"A": "b"},
				Source: Source{Prefix: PrefixAlways, Timeout: 5 * time.Second, Drift: DriftWarn}},
			"remote": {URL: "http://127.0.0.1:9000", Headers: map[string]string{"X-Key": "k"}, BearerToken: "t",
				Source: Source{Prefix: PrefixAlways, Drift: DriftWarn}},
		},
		Presets:  map[string][]string{"ro": {"gh__a", "local__x"}},
		Profiles: map[string]*Profile{"p": {Servers: []string{"gh", "diode"}, Tools: []string{"local__x"}, Presets: []string{"ro", "minimal"}, Deny: []string{"gh__b"}}},
		HTTP: HTTP{Listen: "127.0.0.1:7331", Mode: "stateless", JSONResponse: true, SessionTimeout: -time.Second, SessionPark: 30 * time.Second,
			MaxRequestBytes: 1 << 20, Tokens: []string{"one", "tok"}, TokenFile: "/etc/junction/tokens",
			AllowedHosts: []string{"hub.internal"}, AllowedOrigins: []string{"https://hub.internal:8443"}},
		Lock:  Lock{Path: "junction.lock"},
		Log:   Log{Level: "debug", Format: "json"},
		Shape: ShapeJunction,
		Warnings: []Warning{{Line: 55, Path: "profiles.p.presets[1]",
			Msg: `preset "minimal" is not in presets; it must come from a pack (checked when the hub starts)`}},
	}
	if diff := cmp.Diff(want, c, ignoreUnexported); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	if got := c.Enabled(); !cmp.Equal(got, []string{"local"}) {
		t.Errorf("Enabled() = %v, want [local]", got)
	}
}

func TestHostKeysWarn(t *testing.T) {
	t.Parallel()
	in := `{
  "mcpServers": {
    "a": {"command": "x", "autoApprove": ["t"], "alwaysAllow": [], "timeout": 60, "transportType": "stdio"},
    "b": {"serverUrl": "https://h/mcp", "disabledTools": ["t"], "oauth": {"clientId": "c"}, "headersHelper": "./h.sh"},
    "c": {"type": "http", "url": "https://h/mcp", "auth": {"CLIENT_ID": "x"}}
  },
  "globalShortcut": "Ctrl+Space"
}`
	c, err := Parse(strings.NewReader(in), "json", nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var got []string
	for _, w := range c.Warnings {
		got = append(got, w.String())
	}
	want := []string{
		"line 3: mcpServers.a.alwaysAllow: ignored (Cline/Roo Code approval list)",
		"line 3: mcpServers.a.autoApprove: ignored (Cline/Roo Code approval list)",
		"line 4: mcpServers.b.headersHelper: ignored (Claude Code header script; use headers with ${VAR} instead)",
		"line 4: mcpServers.b.oauth: ignored (Claude Code OAuth settings; use auth: oauth with oauth_client_id)",
		"line 5: mcpServers.c.auth: ignored (Cursor OAuth settings; use auth: oauth with oauth_client_id and oauth_client_secret)",
		"line 7: globalShortcut: ignored (a Claude Desktop setting)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	if s := c.Servers["a"]; s.Timeout != time.Minute || s.Transport != TransportStdio {
		t.Errorf("server a = %+v, want timeout 1m over stdio", s)
	}
	if s := c.Servers["b"]; s.URL != "https://h/mcp" || s.Transport != TransportHTTP || !cmp.Equal(s.Tools.Deny, []string{"t"}) {
		t.Errorf("server b = %+v, want url, http and deny [t]", s)
	}
	if c.Shape != ShapeMCPServers {
		t.Errorf("shape = %q, want mcpServers", c.Shape)
	}
}

func TestExpansion(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"A": "alpha", "EMPTY": "", "HOME": "/home/u"})
	tests := []struct {
		in, want string
	}{
		{"plain", "plain"},
		{"${A}", "alpha"},
		{"x-${A}-y-${A}", "x-alpha-y-alpha"},
		{"${env:A}", "alpha"},
		{"${B:-fallback}", "fallback"},
		{"${EMPTY:-fallback}", "fallback"},
		{"${A:-fallback}", "alpha"},
		{"${B:-}", ""},
		{"${B:-a b:c}", "a b:c"},
		{"$${A}", "${A}"},
		{"cost $5 and $A", "cost $5 and $A"},
		{"${userHome}/x", "/home/u/x"},
		{"a${/}b", "a/b"},
	}
	for _, tt := range tests {
		x := &expander{getenv: env}
		got, err := x.expand(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"${B}", "${EMPTY}", "${", "${A", "${}", "${A-B}", "${input:x}", "${workspaceFolder}"} {
		x := &expander{getenv: env}
		if got, err := x.expand(bad); err == nil {
			t.Errorf("expand(%q) = %q, want an error", bad, got)
		}
	}
	x := &expander{getenv: env, workspace: "/proj"}
	if got, _ := x.expand("${workspaceFolder}/a ${workspaceFolderBasename}"); got != "/proj/a proj" {
		t.Errorf("expand(workspace) = %q", got)
	}
}

// TestExpansionScope checks that only the documented fields expand.
func TestExpansionScope(t *testing.T) {
	t.Parallel()
	in := `
servers:
  a:
    command: ${A}
    tools: {allow: ["${A}"]}
    tool_timeouts: {"${A}": 1s}
presets:
  p: ["${A}"]
`
	c, err := Parse(strings.NewReader(in), "yaml", mapEnv(map[string]string{"A": "alpha"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	s := c.Servers["a"]
	if s.Command != "alpha" {
		t.Errorf("command = %q, want alpha", s.Command)
	}
	if s.Tools.Allow[0] != "${A}" || c.Presets["p"][0] != "${A}" {
		t.Errorf("tool names were expanded: %v %v", s.Tools.Allow, c.Presets["p"])
	}
	if _, ok := s.ToolTimeouts["${A}"]; !ok {
		t.Errorf("tool_timeouts keys were expanded: %v", s.ToolTimeouts)
	}
}

func TestPacksForms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in    string
		want  []string
		isNil bool
	}{
		{"log: {}", nil, true},
		{"packs:", nil, false},
		{"packs: []", nil, false},
		{"packs: [core, diode]", []string{"core", "diode"}, false},
		{"packs: {core: {}, diode: null}", []string{"core", "diode"}, false},
	} {
		c, err := Parse(strings.NewReader(tt.in), "yaml", nil)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if (c.Packs == nil) != tt.isNil {
			t.Errorf("Parse(%q).Packs == nil is %v, want %v", tt.in, c.Packs == nil, tt.isNil)
		}
		if got := sortedKeys(c.Packs); !cmp.Equal(got, tt.want, cmpopts.EquateEmpty()) {
			t.Errorf("Parse(%q) packs = %v, want %v", tt.in, got, tt.want)
		}
		for n, p := range c.Packs {
			if p.Prefix != PrefixNever {
				t.Errorf("Parse(%q) pack %s prefix = %q, want never", tt.in, n, p.Prefix)
			}
		}
	}
}

// TestTestdata loads the example files under testdata/.
func TestTestdata(t *testing.T) {
	t.Parallel()
	env := mapEnv(map[string]string{"GITHUB_TOKEN": "ghp_x", "LINEAR_API_KEY": "lin_x", "HOME": "/home/alice"})
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("claude desktop", func(t *testing.T) {
		c, err := Load("testdata/claude_desktop_config.json", env)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if c.Shape != ShapeMCPServers {
			t.Errorf("shape = %q", c.Shape)
		}
		wantNames := []string{"filesystem", "github", "legacy-sse", "linear", "memory", "puppeteer", "sqlite"}
		if got := sortedKeys(c.Servers); !cmp.Equal(got, wantNames) {
			t.Errorf("servers = %v, want %v", got, wantNames)
		}
		if got := c.Enabled(); len(got) != 6 {
			t.Errorf("Enabled() = %v, want 6 servers (puppeteer is disabled)", got)
		}
		if got := c.Servers["github"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"]; got != "ghp_x" {
			t.Errorf("github env token = %q", got)
		}
		if got := c.Servers["linear"]; got.Transport != TransportHTTP || got.Headers["Authorization"] != "Bearer lin_x" {
			t.Errorf("linear = %+v", got)
		}
		if got := c.Servers["legacy-sse"].Transport; got != TransportSSE {
			t.Errorf("legacy-sse transport = %q", got)
		}
		if len(c.Warnings) != 1 || c.Warnings[0].Path != "globalShortcut" {
			t.Errorf("warnings = %v, want one for globalShortcut", c.Warnings)
		}
	})

	t.Run("vscode", func(t *testing.T) {
		c, err := Load("testdata/.vscode/mcp.json", env)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if c.Shape != ShapeVSCode {
			t.Errorf("shape = %q", c.Shape)
		}
		mem := c.Servers["memory"]
		want := &Server{Transport: TransportStdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
			Env:      map[string]string{"MEMORY_FILE_PATH": abs + "/.memory.json", "PORT": "3000"},
			UnsetEnv: []string{"NODE_OPTIONS"}, EnvFile: abs + "/.env",
			Source: Source{Prefix: PrefixAlways, Drift: DriftWarn}}
		if diff := cmp.Diff(want, mem); diff != "" {
			t.Errorf("memory mismatch (-want +got):\n%s", diff)
		}
		if got := c.Servers["my-server"].Cwd; got != abs {
			t.Errorf("my-server cwd = %q, want %q", got, abs)
		}
		if got := c.Servers["github"].Headers["Authorization"]; got != "Bearer ghp_x" {
			t.Errorf("github Authorization = %q", got)
		}
		var paths []string
		for _, w := range c.Warnings {
			paths = append(paths, w.Path)
		}
		if want := []string{"inputs", "servers.my-server.dev"}; !cmp.Equal(paths, want) {
			t.Errorf("warning paths = %v, want %v", paths, want)
		}
	})

	t.Run("junction", func(t *testing.T) {
		c, err := Load("testdata/junction.yaml", env)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if c.Shape != ShapeJunction {
			t.Errorf("shape = %q", c.Shape)
		}
		if got := c.Lock.Path; got != abs+"/junction.lock" {
			t.Errorf("lock path = %q, want it next to the config", got)
		}
		if got := c.HTTP.TokenFile; got != abs+"/tokens.txt" {
			t.Errorf("token file = %q", got)
		}
		if got := c.Servers["everything"].Env["LOG_LEVEL"]; got != "info" {
			t.Errorf("default expansion = %q, want info", got)
		}
		if got := c.Servers["fs"].Args[2]; got != "/home/alice/src" {
			t.Errorf("fs arg = %q", got)
		}
		if got := sortedKeys(c.Profiles); !cmp.Equal(got, []string{"deployer", "reviewer"}) {
			t.Errorf("profiles = %v", got)
		}
	})

	t.Run("missing variable names the file", func(t *testing.T) {
		_, err := Load("testdata/claude_desktop_config.json", mapEnv(map[string]string{"GITHUB_TOKEN": "x"}))
		want := "testdata/claude_desktop_config.json:34: mcpServers.linear.headers.Authorization: environment variable LINEAR_API_KEY is not set (write ${LINEAR_API_KEY:-} to allow it to be empty)"
		if err == nil || err.Error() != want {
			t.Errorf("Load error = %v\nwant %s", err, want)
		}
	})

	t.Run("missing file", func(t *testing.T) {
		_, err := Load("testdata/nope.yaml", env)
		if err == nil || !os.IsNotExist(unwrapAll(err)) {
			t.Errorf("Load(missing) = %v, want a not-exist error", err)
		}
	})
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
