//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/junction-mcp/junction/internal/pgtest"
)

// envRegistryServer names the MCP registry server binary (the real one,
// github.com/modelcontextprotocol/registry's cmd/registry) that
// scripts/setup builds into .tools/registry/bin/registry from
// tools/registry/go.mod.
const envRegistryServer = "JUNCTION_REGISTRY_SERVER"

// registryServerBin finds the registry server: $JUNCTION_REGISTRY_SERVER,
// else where scripts/setup builds it; the test skips without it (fails
// under JUNCTION_REQUIRE_TOOLS=1).
func registryServerBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(envRegistryServer)
	if bin == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(root, ".tools", "registry", "bin", "registry")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		if os.Getenv(envRequireTools) == "1" {
			t.Fatalf("%s=1 but the MCP registry server %s is missing (%v); run scripts/setup", envRequireTools, bin, err)
		}
		t.Skipf("the MCP registry server %s is missing (%v); run scripts/setup, or set %s", bin, err, envRegistryServer)
	}
	return bin
}

// Versions of the reference servers in tools/npm/package-lock.json.
const refVersion = "2026.8.31"

const schema2025 = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// registrySeed is the registry's seed file (MCP_REGISTRY_SEED_FROM): a
// JSON array of server.json, as its data/seed.json.
func registrySeed() []map[string]any {
	npm := func(pkg string, extra map[string]any) map[string]any {
		p := map[string]any{"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org", "identifier": pkg, "version": refVersion, "transport": map[string]any{"type": "stdio"}}
		for k, v := range extra {
			p[k] = v
		}
		return p
	}
	repo := map[string]any{"url": "https://github.com/modelcontextprotocol/servers", "source": "github"}
	return []map[string]any{
		{"$schema": schema2025, "name": "io.github.modelcontextprotocol/server-everything", "description": "MCP server that exercises all the features of the MCP protocol",
			"version": refVersion, "repository": repo, "packages": []any{npm("@modelcontextprotocol/server-everything", nil)}},
		{"$schema": schema2025, "name": "io.github.modelcontextprotocol/server-filesystem", "description": "Secure file operations with configurable access controls",
			"version": refVersion, "repository": repo, "packages": []any{npm("@modelcontextprotocol/server-filesystem", map[string]any{
				"packageArguments": []any{map[string]any{"type": "positional", "valueHint": "directory", "description": "a directory the server may use", "isRequired": true, "isRepeated": true}},
			})}},
		{"$schema": schema2025, "name": "io.github.modelcontextprotocol/server-memory", "description": "Knowledge graph memory for MCP",
			"version": refVersion, "repository": repo, "packages": []any{npm("@modelcontextprotocol/server-memory", map[string]any{
				"environmentVariables": []any{map[string]any{"name": "MEMORY_FILE_PATH", "description": "where the graph is kept", "format": "filepath"}},
			})}},
		{"$schema": schema2025, "name": "io.github.junction-e2e/weather", "description": "A hosted weather server",
			"version": "1.2.0", "remotes": []any{map[string]any{"type": "streamable-http", "url": "https://weather.example.com/mcp",
				"headers": []any{map[string]any{"name": "Authorization", "description": "Bearer token", "isRequired": true, "isSecret": true}}}}},
		{"$schema": schema2025, "name": "io.github.junction-e2e/old-tool", "description": "A server its publisher deprecated",
			"version": "0.9.0", "packages": []any{map[string]any{"registryType": "npm", "identifier": "old-tool", "version": "0.9.0", "transport": map[string]any{"type": "stdio"}}}},
	}
}

// startRegistry runs the real registry server against a PostgreSQL of
// its own, seeded from registrySeed, and returns its base URL once it
// lists every seeded server.
func startRegistry(t *testing.T) (string, *pgtest.Server) {
	t.Helper()
	pg := pgtest.Start(t)
	base, _ := runRegistry(t, pg, registrySeed(), func(base string) bool {
		return len(registryList(base)) == len(registrySeed())
	})
	return base, pg
}

// registryList lists the latest version of each server of the registry
// at base (the first 100); nil when it does not answer.
func registryList(base string) []json.RawMessage {
	resp, err := http.Get(base + "/v0.1/servers?limit=100")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var list struct {
		Servers []json.RawMessage `json:"servers"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	return list.Servers
}

// runRegistry runs a registry server on pg, seeded with seed (the
// registry publishes each entry: a new version of a server it has is
// published as its latest), and returns its base URL once ready(base)
// holds, and a func that stops it (also called at the end of the test).
func runRegistry(t *testing.T, pg *pgtest.Server, seed []map[string]any, ready func(base string) bool) (string, func()) {
	t.Helper()
	bin := registryServerBin(t)
	dir := t.TempDir()
	data, _ := json.MarshalIndent(seed, "", "  ")
	seedFile := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seedFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logFile := filepath.Join(dir, "registry.log")
	logw, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logw, logw
	cmd.Env = append(os.Environ(),
		"MCP_REGISTRY_DATABASE_URL="+pg.URL,
		"MCP_REGISTRY_SERVER_ADDRESS="+addr,
		"MCP_REGISTRY_SEED_FROM="+seedFile,
		// No network here: do not ask npm whether the packages exist.
		"MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false",
		"MCP_REGISTRY_DATABASE_MIN_CONNECTIONS=1",
		"MCP_REGISTRY_DATABASE_MAX_CONNECTIONS=5",
		"MCP_REGISTRY_JWT_PRIVATE_KEY=bb2c6b424005acd5df47a9e2c87f446def86dd740c888ea3efb825b23f7ef47c",
	)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logw.Close(); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(stopTimeout):
				cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("registry server log (%s):\n%s", addr, b)
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(90 * time.Second)
	for !ready(base) {
		select {
		case <-done:
			b, _ := os.ReadFile(logFile)
			t.Fatalf("the registry server exited:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logFile)
			t.Fatalf("the registry server was not ready within 90s:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return base, stop
}

// fakeCommands makes a directory with executables of these names (they
// are only looked up on PATH, never run) and returns it.
func fakeCommands(t *testing.T, names ...string) string {
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRegistryAgainstRealServer drives "junction registry search",
// "registry show" and "add" through the binary against the real MCP
// registry server (API v0.1), seeded with the reference servers and a
// remote.
func TestRegistryAgainstRealServer(t *testing.T) {
	base, pg := startRegistry(t)
	// The publisher deprecates old-tool (the registry's PATCH .../status
	// needs a registry JWT; the test owns the database, so it is set there).
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE servers SET status = 'deprecated', status_message = 'use io.github.junction-e2e/weather instead', status_changed_at = now() WHERE server_name = 'io.github.junction-e2e/old-tool'`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	bin := fakeCommands(t, "npx", "uvx")
	env := []string{"PATH=" + bin, "JUNCTION_REGISTRY=" + base}
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := runJunction(t, env, args...)
		if code != want {
			t.Fatalf("junction %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}

	// search: a table of the matches, latest versions.
	out, _ := run(0, "registry", "search", "modelcontextprotocol/server-")
	for _, want := range []string{
		"NAME", "VERSION", "STATUS", "PACKAGES", "REMOTES",
		"io.github.modelcontextprotocol/server-everything  " + refVersion + "  active  npm",
		"io.github.modelcontextprotocol/server-filesystem", "io.github.modelcontextprotocol/server-memory",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("registry search: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "weather") {
		t.Errorf("registry search matched the remote:\n%s", out)
	}
	// -o json, every server, from the flag rather than the variable.
	out, _ = run(0, "registry", "search", "-o", "json", "-registry", base, "-limit", "0")
	var res struct {
		Registries []string `json:"registries"`
		Servers    []struct {
			Server struct {
				Name    string `json:"name"`
				Remotes []struct {
					Type, URL string
				} `json:"remotes"`
			} `json:"server"`
			Registry string `json:"registry"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Servers) != 5 || res.Registries[0] != base {
		t.Fatalf("registry search -o json: %v, %d servers\n%s", err, len(res.Servers), out)
	}
	out, _ = run(0, "registry", "search", "weather")
	if !strings.Contains(out, "io.github.junction-e2e/weather  1.2.0    active  -         streamable-http") {
		t.Errorf("registry search weather:\n%s", out)
	}

	// show: the server.json for people, and the add line.
	out, _ = run(0, "registry", "show", "io.github.modelcontextprotocol/server-filesystem")
	for _, want := range []string{
		"io.github.modelcontextprotocol/server-filesystem@" + refVersion,
		"package 1: npm @modelcontextprotocol/server-filesystem " + refVersion + " (transport stdio)",
		"arg directory (required): a directory the server may use",
		"registry:    " + base,
		"junction add io.github.modelcontextprotocol/server-filesystem@" + refVersion,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("registry show: no %q in\n%s", want, out)
		}
	}
	out, _ = run(0, "registry", "show", "io.github.junction-e2e/old-tool@0.9.0")
	if !strings.Contains(out, "status:      deprecated: use io.github.junction-e2e/weather instead") {
		t.Errorf("registry show old-tool:\n%s", out)
	}
	_, errOut := run(1, "registry", "show", "io.github.junction-e2e/nothing")
	if !strings.Contains(errOut, "io.github.junction-e2e/nothing: not found in "+base) {
		t.Errorf("registry show of a missing server: %s", errOut)
	}
	_, errOut = run(1, "registry", "show", "io.github.modelcontextprotocol/server-memory@0.0.1")
	if !strings.Contains(errOut, "version not found") {
		t.Errorf("registry show of a missing version: %s", errOut)
	}

	// add: without a terminal, a dry run that writes nothing.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.json")
	if err := os.WriteFile(cfg, []byte("{\n  // mine\n  \"servers\": {\n    \"memory\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-memory@"+refVersion+"\"]}\n  }\n}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(cfg)
	out, _ = run(0, "add", "io.github.modelcontextprotocol/server-everything", "-config", cfg)
	for _, want := range []string{
		"+    \"server-everything\": {", "\"-y\"", "\"@modelcontextprotocol/server-everything@" + refVersion + "\"",
		"runs: npm @modelcontextprotocol/server-everything@" + refVersion,
		"Nothing was written (there is no terminal to ask on)",
		"junction add io.github.modelcontextprotocol/server-everything@" + refVersion + " -config " + cfg + " -yes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("add (dry run): no %q in\n%s", want, out)
		}
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatalf("the dry run changed the config:\n%s", now)
	}
	// -yes writes, keeping the comment and the mode.
	run(0, "add", "io.github.modelcontextprotocol/server-everything@"+refVersion, "-config", cfg, "-yes")
	run(0, "add", "io.github.modelcontextprotocol/server-filesystem", "-config", cfg, "-yes", "-arg", "directory="+dir)
	out, _ = run(0, "add", "io.github.junction-e2e/weather", "-config", cfg, "-yes")
	if !strings.Contains(out, "${WEATHER_AUTHORIZATION}  header Authorization (secret): Bearer token  [not set here]") {
		t.Errorf("add weather: the placeholder note is missing:\n%s", out)
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), "// mine") {
		t.Errorf("the comment was lost:\n%s", data)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	var got struct {
		Servers map[string]struct {
			Transport string            `json:"transport"`
			Command   string            `json:"command"`
			Args      []string          `json:"args"`
			URL       string            `json:"url"`
			Headers   map[string]string `json:"headers"`
		} `json:"servers"`
	}
	clean := strings.Replace(string(data), "// mine", "", 1)
	if err := json.Unmarshal([]byte(clean), &got); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if e := got.Servers["server-everything"]; e.Command != "npx" || strings.Join(e.Args, " ") != "-y @modelcontextprotocol/server-everything@"+refVersion {
		t.Errorf("server-everything: %+v", e)
	}
	if e := got.Servers["server-filesystem"]; strings.Join(e.Args, " ") != "-y @modelcontextprotocol/server-filesystem@"+refVersion+" "+dir {
		t.Errorf("server-filesystem: %+v", e)
	}
	if e := got.Servers["weather"]; e.Transport != "http" || e.URL != "https://weather.example.com/mcp" || e.Headers["Authorization"] != "${WEATHER_AUTHORIZATION}" {
		t.Errorf("weather: %+v", e)
	}
	if len(got.Servers) != 4 {
		t.Errorf("servers: %v", got.Servers)
	}
	// The file loads, with the placeholder set.
	out, errOut, code := runJunction(t, append(env, "WEATHER_AUTHORIZATION=Bearer x"), "config", "check", cfg)
	if code != 0 {
		t.Errorf("config check: exit %d\n%s%s", code, out, errOut)
	}

	// Refusals, each leaving the file as it is.
	data, _ = os.ReadFile(cfg)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"add", "io.github.modelcontextprotocol/server-everything", "-yes"}, `already has a server "server-everything"`},
		{nil, []string{"add", "io.github.modelcontextprotocol/server-memory", "-name", "memory", "-yes"}, `already has a server "memory"`},
		{nil, []string{"add", "io.github.junction-e2e/old-tool", "-yes"}, "io.github.junction-e2e/old-tool@0.9.0 is deprecated in " + base + " (the registry says: use io.github.junction-e2e/weather instead)"},
		{[]string{"PATH=" + t.TempDir()}, []string{"add", "io.github.modelcontextprotocol/server-memory", "-yes"}, "npx is not on PATH"},
		{nil, []string{"add", "io.github.junction-e2e/weather", "-name", "weather2", "-header", "Authorization=Bearer sekrit", "-yes"}, "never writes a secret into the config in clear"},
		{nil, []string{"add", "io.github.junction-e2e/nothing", "-yes"}, "not found"},
	} {
		out, errOut, code := runJunction(t, append(append(append([]string(nil), env...), tc.env...), "JUNCTION_CONFIG="+cfg), tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut+out, "sekrit") {
			t.Errorf("junction %s: exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", strings.Join(tc.args, " "), code, tc.want, out, errOut)
		}
		if now, _ := os.ReadFile(cfg); string(now) != string(data) {
			t.Fatalf("junction %s changed the config", strings.Join(tc.args, " "))
		}
	}

	// A YAML file without servers gets a section appended.
	yamlCfg := filepath.Join(dir, "junction.yaml")
	os.WriteFile(yamlCfg, []byte("log:\n  level: warn\n"), 0o600)
	run(0, "add", "io.github.modelcontextprotocol/server-memory", "-config", yamlCfg, "-yes")
	if b, _ := os.ReadFile(yamlCfg); !strings.HasPrefix(string(b), "log:\n  level: warn\n# added by junction add: npm @modelcontextprotocol/server-memory@"+refVersion+"\nservers:\n  \"server-memory\": {") {
		t.Errorf("YAML config:\n%s", b)
	}

	// A new file is made, 0600; -o json reports the entry.
	fresh := filepath.Join(dir, "sub", "new.json")
	out, _ = run(0, "add", "io.github.modelcontextprotocol/server-memory", "-config", fresh, "-yes", "-o", "json", "-env", "MEMORY_FILE_PATH="+dir+"/graph.json")
	var rep struct {
		Written bool `json:"written"`
		Entry   struct {
			Env map[string]string `json:"env"`
		} `json:"entry"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Written || rep.Entry.Env["MEMORY_FILE_PATH"] != dir+"/graph.json" {
		t.Errorf("add -o json: %v\n%s", err, out)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("new config: %v, %v", fi, err)
	}
}
