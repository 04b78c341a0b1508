package registry

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func have(cmds ...string) func(string) bool {
	return func(c string) bool {
		for _, x := range cmds {
			if x == c {
				return true
			}
		}
		return false
	}
}

// A server.json in the shape of the registry's seed data (airtable-mcp-server).
const airtable = `{
  "name": "io.github.domdomegg/airtable-mcp-server",
  "description": "Read and write access to Airtable database schemas, tables, and records.",
  "version": "1.7.2",
  "packages": [
    {"registryType": "mcpb", "identifier": "https://github.com/x/releases/download/v1.7.2/a.mcpb", "fileSha256": "8220de07a08ebe908f04da139ea03dbfe29758141347e945da60535fb7bcca20", "transport": {"type": "stdio"}},
    {"registryType": "npm", "identifier": "airtable-mcp-server", "version": "1.7.2", "runtimeHint": "npx", "transport": {"type": "stdio"},
     "environmentVariables": [
       {"description": "Airtable personal access token", "isRequired": true, "isSecret": true, "name": "AIRTABLE_API_KEY"},
       {"description": "log level", "name": "LOG_LEVEL"}
     ],
     "packageArguments": [
       {"type": "positional", "valueHint": "base_id", "isRequired": true, "description": "the base"},
       {"type": "named", "name": "--read-only", "format": "boolean", "default": "false"},
       {"type": "named", "name": "--mode", "value": "fast"}
     ]},
    {"registryType": "oci", "identifier": "docker.io/domdomegg/airtable-mcp-server:1.7.2", "runtimeHint": "docker", "transport": {"type": "stdio"},
     "environmentVariables": [{"description": "token", "isRequired": true, "isSecret": true, "name": "AIRTABLE_API_KEY"}]}
  ],
  "remotes": [
    {"type": "streamable-http", "url": "https://{tenant}.example.com/mcp",
     "variables": {"tenant": {"description": "your tenant", "isRequired": true}},
     "headers": [{"name": "Authorization", "description": "Bearer token", "isRequired": true, "isSecret": true}]}
  ]
}`

func parse(t *testing.T, s string) *ServerJSON {
	t.Helper()
	var sj ServerJSON
	if err := json.Unmarshal([]byte(s), &sj); err != nil {
		t.Fatal(err)
	}
	return &sj
}

func TestBuildEntryNPM(t *testing.T) {
	s := parse(t, airtable)
	e, err := BuildEntry(s, InstallOptions{LookPath: have("npx"), Args: map[string][]string{"read-only": {"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != "npm" || e.Command != "npx" || e.Pinned != "npm airtable-mcp-server@1.7.2" {
		t.Errorf("entry %+v", e)
	}
	if want := []string{"-y", "airtable-mcp-server@1.7.2", "${BASE_ID}", "--read-only", "--mode", "fast"}; !reflect.DeepEqual(e.Args, want) {
		t.Errorf("args %q, want %q", e.Args, want)
	}
	if want := map[string]string{"AIRTABLE_API_KEY": "${AIRTABLE_API_KEY}"}; !reflect.DeepEqual(e.Env, want) {
		t.Errorf("env %v, want %v", e.Env, want)
	}
	if len(e.Placeholders) != 2 || e.Placeholders[0].Var != "BASE_ID" || e.Placeholders[1].Var != "AIRTABLE_API_KEY" || !e.Placeholders[1].Secret {
		t.Errorf("placeholders %+v", e.Placeholders)
	}
	if len(e.Optional) != 1 || !strings.HasPrefix(e.Optional[0], "environment variable LOG_LEVEL") {
		t.Errorf("optional %v", e.Optional)
	}
	if len(e.Skipped) != 1 || !strings.Contains(e.Skipped[0], "cannot install mcpb packages") {
		t.Errorf("skipped %v", e.Skipped)
	}
	var cfg map[string]any
	if err := json.Unmarshal(e.Config(), &cfg); err != nil || cfg["command"] != "npx" || cfg["transport"] != nil {
		t.Errorf("config %s: %v", e.Config(), err)
	}
}

func TestBuildEntryValuesAndSecrets(t *testing.T) {
	s := parse(t, airtable)
	_, err := BuildEntry(s, InstallOptions{LookPath: have("npx"), Env: map[string]string{"AIRTABLE_API_KEY": "pat123.abc"}})
	if err == nil || !strings.Contains(err.Error(), "never writes a secret into the config in clear") || strings.Contains(err.Error(), "pat123") {
		t.Errorf("plain secret: %v", err)
	}
	e, err := BuildEntry(s, InstallOptions{LookPath: have("npx"),
		Env:  map[string]string{"AIRTABLE_API_KEY": "${MY_AIRTABLE}", "LOG_LEVEL": "debug", "EXTRA": "1"},
		Args: map[string][]string{"base_id": {"app123"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"AIRTABLE_API_KEY": "${MY_AIRTABLE}", "LOG_LEVEL": "debug", "EXTRA": "1"}; !reflect.DeepEqual(e.Env, want) {
		t.Errorf("env %v", e.Env)
	}
	if e.Args[2] != "app123" || len(e.Placeholders) != 0 {
		t.Errorf("args %q placeholders %v", e.Args, e.Placeholders)
	}
	if _, err := BuildEntry(s, InstallOptions{LookPath: have("npx"), Args: map[string][]string{"nope": {"1"}}}); err == nil || !strings.Contains(err.Error(), "-arg nope") {
		t.Errorf("unknown -arg: %v", err)
	}
}

func TestBuildEntryKinds(t *testing.T) {
	s := parse(t, airtable)
	// Nothing runnable: every reason is named.
	_, err := BuildEntry(s, InstallOptions{Package: "oci", LookPath: have()})
	if err == nil || !strings.Contains(err.Error(), "add -oci") {
		t.Errorf("oci without -oci: %v", err)
	}
	e, err := BuildEntry(s, InstallOptions{Package: "oci", AllowOCI: true, LookPath: have("docker")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"run", "-i", "--rm", "-e", "AIRTABLE_API_KEY", "docker.io/domdomegg/airtable-mcp-server:1.7.2"}; e.Command != "docker" || !reflect.DeepEqual(e.Args, want) {
		t.Errorf("oci: %s %q", e.Command, e.Args)
	}
	// No npx: the remote is used, and the npm package is listed as skipped.
	e, err = BuildEntry(s, InstallOptions{LookPath: have(), Headers: map[string]string{"Authorization": "Bearer ${AIRTABLE_TOKEN}"}, Args: map[string][]string{"tenant": {"acme"}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != "remote" || e.Transport != "http" || e.URL != "https://acme.example.com/mcp" || e.Headers["Authorization"] != "Bearer ${AIRTABLE_TOKEN}" {
		t.Errorf("remote: %+v", e)
	}
	if !strings.Contains(strings.Join(e.Skipped, "\n"), "npx is not on PATH") {
		t.Errorf("skipped %v", e.Skipped)
	}
	var cfg map[string]any
	json.Unmarshal(e.Config(), &cfg)
	if cfg["transport"] != "http" || cfg["url"] != "https://acme.example.com/mcp" {
		t.Errorf("remote config %s", e.Config())
	}
	// A remote with nothing given: placeholders, never the secret.
	e, err = BuildEntry(s, InstallOptions{Package: "remote"})
	if err != nil {
		t.Fatal(err)
	}
	if e.URL != "https://${TENANT}.example.com/mcp" || e.Headers["Authorization"] != "${AIRTABLE_MCP_SERVER_AUTHORIZATION}" {
		t.Errorf("remote placeholders: %+v", e)
	}
	// npm only, without npx: a clear error.
	_, err = BuildEntry(s, InstallOptions{Package: "npm", LookPath: have("uvx")})
	if err == nil || !strings.Contains(err.Error(), "npx is not on PATH") {
		t.Errorf("npm without npx: %v", err)
	}
	_, err = BuildEntry(s, InstallOptions{Package: "pypi"})
	if err == nil || !strings.Contains(err.Error(), "has no pypi package") {
		t.Errorf("no pypi: %v", err)
	}
}

func TestBuildEntryPyPIAndPinning(t *testing.T) {
	s := parse(t, `{"name":"io.x/py","version":"0.6.2","packages":[{"registryType":"pypi","identifier":"mcp-server-time","version":"0.6.2","transport":{"type":"stdio"},
		"runtimeArguments":[{"type":"named","name":"--python","value":"3.12"}],
		"packageArguments":[{"type":"named","name":"--local-timezone","default":"UTC","isRequired":true},{"type":"positional","value":"literal ${HOME}"}]}]}`)
	e, err := BuildEntry(s, InstallOptions{LookPath: have("uvx")})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--python", "3.12", "mcp-server-time==0.6.2", "--local-timezone", "UTC", "literal $${HOME}"}; e.Command != "uvx" || !reflect.DeepEqual(e.Args, want) {
		t.Errorf("pypi: %s %q, want %q", e.Command, e.Args, want)
	}
	for _, v := range []string{"", "latest", "^1.2.0", "~1.2", ">=1", "1.x", "1.*"} {
		s.Packages[0].Version = v
		if _, err := BuildEntry(s, InstallOptions{LookPath: have("uvx")}); err == nil || !strings.Contains(err.Error(), "no exact version") {
			t.Errorf("version %q: %v", v, err)
		}
	}
	if _, err := BuildEntry(&ServerJSON{Name: "io.x/y", Version: "1"}, InstallOptions{}); err == nil || !strings.Contains(err.Error(), "nothing to run") {
		t.Errorf("empty: %v", err)
	}
}
