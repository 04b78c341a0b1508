package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/junction-mcp/junction"
	"github.com/junction-mcp/junction/internal/config"
)

// TestUnquarantine: approve's edit removes the server's quarantine: true
// and nothing else, in the shapes a config file has it.
func TestUnquarantine(t *testing.T) {
	for _, tc := range []struct{ name, file, in, want string }{
		{"json first member (as add writes it)", "j.json",
			"{\n  // mine\n  \"servers\": {\n    \"a\": {\n      \"quarantine\": true,\n      \"command\": \"x\"\n    },\n    \"b\": {\"quarantine\": true, \"command\": \"y\"}\n  }\n}\n",
			"{\n  // mine\n  \"servers\": {\n    \"a\": {\n      \"command\": \"x\"\n    },\n    \"b\": {\"quarantine\": true, \"command\": \"y\"}\n  }\n}\n"},
		{"json last member", "j.json",
			"{\"servers\": {\n  \"a\": {\n    \"command\": \"x\",\n    \"quarantine\": true\n  }\n}}\n",
			"{\"servers\": {\n  \"a\": {\n    \"command\": \"x\"\n  }\n}}\n"},
		{"json, two servers on one line", "j.json",
			`{"servers": {"b": {"quarantine": true, "command": "y"}, "a": {"command": "x", "quarantine": true}}}`,
			`{"servers": {"b": {"quarantine": true, "command": "y"}, "a": {"command": "x"}}}`},
		{"yaml block, with a comment", "j.yaml",
			"servers:\n  b:\n    quarantine: true\n    command: y\n  a:\n    command: x\n    quarantine: true   # not yet\n    args: [z]\n",
			"servers:\n  b:\n    quarantine: true\n    command: y\n  a:\n    command: x\n    args: [z]\n"},
		{"yaml flow, as add appends it", "j.yml",
			"log:\n  level: warn\n# added by junction add: npm p@1\nservers:\n  \"a\": {\"quarantine\":true,\"command\":\"npx\",\"args\":[\"-y\",\"p@1\"]}\n",
			"log:\n  level: warn\n# added by junction add: npm p@1\nservers:\n  \"a\": {\"command\":\"npx\",\"args\":[\"-y\",\"p@1\"]}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, func(string) string { return "" })
			if err != nil {
				t.Fatal(err)
			}
			got, err := unquarantine(path, []byte(tc.in), cfg, "a", false)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestUnquarantineAddsLock: a config that names no lock file gets
// lock: junction.lock.json with the approval, JSON and YAML.
func TestUnquarantineAddsLock(t *testing.T) {
	for _, tc := range []struct{ file, in, want string }{
		{"j.json", "{\n  \"servers\": {\"a\": {\"quarantine\": true, \"command\": \"x\"}}\n}\n",
			"{\n  \"lock\": \"junction.lock.json\",\n  \"servers\": {\"a\": {\"command\": \"x\"}}\n}\n"},
		{"j.yaml", "servers:\n  a: {quarantine: true, command: x}", "servers:\n  a: {command: x}\nlock: junction.lock.json\n"},
	} {
		path := filepath.Join(t.TempDir(), tc.file)
		if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		got, err := unquarantine(path, []byte(tc.in), cfg, "a", true)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s: got\n%s\nwant\n%s", tc.file, got, tc.want)
		}
		c, err := config.Load(path, nil)
		if os.WriteFile(path, got, 0o600) != nil || err != nil {
			t.Fatal(err)
		}
		if c, err = config.Load(path, nil); err != nil || c.Lock.Path != filepath.Join(filepath.Dir(path), "junction.lock.json") {
			t.Errorf("%s: lock %q, %v", tc.file, c.Lock.Path, err)
		}
	}
}

// TestApprovedLock: the server's pins replace its old ones, in serving
// order; the other sources' pins stay; a new lock pins everything.
func TestApprovedLock(t *testing.T) {
	tool := func(name, desc string) *mcp.Tool {
		return &mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{"type": "object"}}
	}
	served := []junction.ToolInfo{
		{Tool: tool("core_v", "v"), Source: "core"},
		{Tool: tool("a__one", "new"), Source: "a"},
		{Tool: tool("a__two", "2"), Source: "a"},
		{Tool: tool("z__x", "x"), Source: "z"},
	}
	var pins []junction.ManifestTool
	for _, t := range served[1:3] {
		pins = append(pins, junction.PinTool(t.Tool, "a"))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "junction.lock.json")

	m, whole, err := approvedLock(path, "a", pins, served)
	if err != nil || !whole || len(m.Tools) != 4 {
		t.Fatalf("no lock yet: %v, whole %v, %d tools", err, whole, len(m.Tools))
	}

	old := junction.NewManifest([]junction.ToolInfo{served[0], {Tool: tool("a__one", "old"), Source: "a"}, {Tool: tool("a__gone", "g"), Source: "a"}, served[3]})
	if err := config.WriteLockFile(path, old); err != nil {
		t.Fatal(err)
	}
	m, whole, err = approvedLock(path, "a", pins, served)
	if err != nil || whole {
		t.Fatalf("%v, whole %v", err, whole)
	}
	var names []string
	for _, mt := range m.Tools {
		names = append(names, mt.Name)
	}
	if want := []string{"core_v", "a__one", "a__two", "z__x"}; !slices.Equal(names, want) {
		t.Errorf("lock %v, want %v", names, want)
	}
	if m.Tools[1] != pins[0] {
		t.Errorf("a__one keeps its old pin: %+v", m.Tools[1])
	}
	live := junction.NewManifest(served)
	if d := m.Compare(live); !d.Empty() {
		t.Errorf("drift against the served tools: %s", d)
	}

	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, _, err := approvedLock(path, "a", pins, served); err == nil || !strings.Contains(err.Error(), "nothing was written") {
		t.Errorf("a broken lock file: %v", err)
	}
}

func TestApproveRefusals(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "junction.yaml")
	content := "servers:\n  vetted: {command: /bin/true}\n  held: {quarantine: true, command: " + filepath.Join(dir, "missing") + "}\n  off: {quarantine: true, disabled: true, command: x}\n"
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"approve"}, 2, "approve needs one NAME"},
		{[]string{"approve", "nope", "-config", cfg}, 1, `has no server "nope" (in quarantine: held)`},
		{[]string{"approve", "vetted", "-config", cfg}, 1, `server "vetted" of ` + cfg + " is not in quarantine"},
		{[]string{"approve", "off", "-config", cfg}, 1, `server "off" of ` + cfg + " is disabled"},
		{[]string{"approve", "held", "-config", cfg, "-yes"}, 1, `approve held: server "held" did not start`},
		{[]string{"tools", "list", "-server", "held", "-url", "http://127.0.0.1:1/mcp"}, 2, "-server picks a source of the hub run in-process"},
		{[]string{"tools", "list", "-server", "nope", "-config", cfg}, 2, `no server, plugin or pack "nope"`},
	} {
		_, errOut, code := run(t, map[string]string{"PATH": os.Getenv("PATH")}, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("junction %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != content {
		t.Errorf("the config changed:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, DefaultLockFile)); err == nil {
		t.Errorf("a lock file was written")
	}
}

// TestQuarantinedEntry: add writes the entry with quarantine first.
func TestQuarantinedEntry(t *testing.T) {
	for in, want := range map[string]string{
		`{"command": "npx"}`: `{"quarantine":true,"command":"npx"}`,
		"{\n}":               `{"quarantine":true}`,
	} {
		var v map[string]any
		got := quarantined(json.RawMessage(in))
		if err := json.Unmarshal(got, &v); err != nil || compactJSON(got) != want {
			t.Errorf("quarantined(%s) = %s (%v), want %s", in, got, err, want)
		}
	}
}
