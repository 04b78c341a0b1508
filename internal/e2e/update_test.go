//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestRegistryCheckUpdate: a server added from the real registry, with
// the registry named by the config's registries: key, is approved; the
// publisher then publishes a newer version: "registry check" reports it,
// "update" shows the new version's tools as a drift diff against the
// lock's pins and, with -yes, moves the pin in the config (every other
// byte kept) and replaces the pins; a deprecated version is reported and
// refused. npx here is a shim: the old version runs the local
// server-everything, the new one the local server-memory, so the tools
// really change.
func TestRegistryCheckUpdate(t *testing.T) {
	node, everything := everythingCmd(t)
	_, mods := nodeTools(t)
	memory := filepath.Join(npmPackageDir(t, mods, "@modelcontextprotocol/server-memory"), "dist", "index.js")
	base, pg := startRegistry(t)

	const newVersion = "2099.1.0"
	const name = "server-everything"
	const regName = "io.github.modelcontextprotocol/server-everything"
	dir := t.TempDir()
	shims := t.TempDir()
	shim := "#!/bin/sh\ncase \"$2\" in\n*@" + newVersion + ") MEMORY_FILE_PATH='" + filepath.Join(dir, "memory.jsonl") + "' exec '" + node + "' '" + memory + "' ;;\n*) exec '" + node + "' '" + everything + "' stdio ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(shims, "npx"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	// No JUNCTION_REGISTRY: the config's registries: names the registry.
	env := []string{"PATH=" + shims + ":" + os.Getenv("PATH"), "JUNCTION_REGISTRY="}
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := runJunction(t, env, args...)
		if code != want {
			t.Fatalf("junction %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out, errOut
	}

	cfg := filepath.Join(dir, "junction.json")
	if err := os.WriteFile(cfg, []byte("{\n  // the company's registry\n  \"registries\": [\""+base+"\"],\n  \"lock\": \"junction.lock.json\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "junction.lock.json")
	run(0, "add", regName, "-config", cfg, "-yes")
	data, _ := os.ReadFile(cfg)
	for _, want := range []string{`"registry": {`, `"name": "` + regName + `"`, `"version": "` + refVersion + `"`, `"url": "` + base + `"`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("the added entry has no %s:\n%s", want, data)
		}
	}
	run(0, "approve", name, "-config", cfg, "-yes")
	out, _ := run(0, "registry", "check", "-config", cfg)
	if !strings.Contains(out, name+"  "+regName+"@"+refVersion+"  active  "+refVersion) {
		t.Errorf("registry check, all current:\n%s", out)
	}
	out, _ = run(0, "update", name, "-config", cfg)
	if !strings.Contains(out, "is at "+regName+"@"+refVersion+" already") {
		t.Errorf("update with nothing newer:\n%s", out)
	}

	// The publisher publishes a newer version (a second registry process
	// on the same database publishes its seed).
	seed := registrySeed()[0]
	seed["version"] = newVersion
	pkg := seed["packages"].([]any)[0].(map[string]any)
	pkg["version"] = newVersion
	_, stop := runRegistry(t, pg, []map[string]any{seed}, func(string) bool {
		resp, err := http.Get(base + "/v0.1/servers/" + strings.ReplaceAll(regName, "/", "%2F") + "/versions/latest")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var r struct {
			Server struct{ Version string } `json:"server"`
		}
		json.NewDecoder(resp.Body).Decode(&r)
		return r.Server.Version == newVersion
	})
	stop()

	out, errOut := run(1, "registry", "check", "-config", cfg)
	if !strings.Contains(out, newVersion+" (newer)") || !strings.Contains(out, "junction update "+name+" -config "+cfg) || !strings.Contains(errOut, "1 of 1 servers need attention") {
		t.Errorf("registry check, newer out:\n%s\n%s", out, errOut)
	}
	out, _ = run(1, "registry", "check", "-config", cfg, "-o", "json")
	var report struct {
		OK      bool
		Servers []struct {
			Server, Status, Latest string
			Newer                  bool
		}
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil || report.OK || len(report.Servers) != 1 || !report.Servers[0].Newer || report.Servers[0].Latest != newVersion {
		t.Errorf("registry check -o json: %v\n%s", err, out)
	}

	// update: a dry run shows the drift against the lock's pins.
	before, _ := os.ReadFile(cfg)
	lockBefore, _ := os.ReadFile(lock)
	out, _ = run(0, "update", name, "-config", cfg)
	for _, want := range []string{
		name + ": " + regName + " " + refVersion + " -> " + newVersion,
		"npx … @modelcontextprotocol/server-everything@" + newVersion,
		`+        "@modelcontextprotocol/server-everything@` + newVersion + `"`,
		`+        "version": "` + newVersion + `",`,
		"against the pins in " + lock,
		"added:", name + "__create_entities", "removed:", name + "__echo",
		"Nothing was written",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("update (dry run): no %q in\n%s", want, out)
		}
	}
	if now, _ := os.ReadFile(cfg); string(now) != string(before) {
		t.Fatal("the dry run changed the config")
	}
	if now, _ := os.ReadFile(lock); string(now) != string(lockBefore) {
		t.Fatal("the dry run changed the lock file")
	}
	out, _ = run(0, "update", name, "-config", cfg, "-yes")
	if !strings.Contains(out, "Updated "+name+" to "+newVersion) {
		t.Errorf("update -yes:\n%s", out)
	}
	after, _ := os.ReadFile(cfg)
	want := strings.Replace(strings.Replace(string(before), "server-everything@"+refVersion, "server-everything@"+newVersion, 1), `"version": "`+refVersion+`"`, `"version": "`+newVersion+`"`, 1)
	if string(after) != want {
		t.Fatalf("the updated config:\n%s\nwant:\n%s", after, want)
	}
	if lk, _ := os.ReadFile(lock); !strings.Contains(string(lk), name+"__create_entities") || strings.Contains(string(lk), name+"__echo") {
		t.Fatalf("the lock file after update:\n%s", lk)
	}
	if out, _ := run(0, "selftest", "-config", cfg); !strings.HasPrefix(out, "ok:") {
		t.Errorf("selftest after update:\n%s", out)
	}
	out, _ = run(0, "registry", "check", "-config", cfg)
	if !strings.Contains(out, regName+"@"+newVersion+"  active  "+newVersion) {
		t.Errorf("registry check after update:\n%s", out)
	}

	// The publisher deprecates the old version: update refuses to go back
	// to it, and check reports a deprecated pin.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deprecate := func(version string) {
		t.Helper()
		if _, err := conn.Exec(ctx, `UPDATE servers SET status = 'deprecated', status_message = 'a bug eats your data', status_changed_at = now() WHERE server_name = $1 AND version = $2`, regName, version); err != nil {
			t.Fatal(err)
		}
	}
	deprecate(refVersion)
	_, errOut = run(1, "update", name+"@"+refVersion, "-config", cfg, "-yes")
	if !strings.Contains(errOut, regName+"@"+refVersion+" is deprecated in "+base+" (the registry says: a bug eats your data); update does not move to it") {
		t.Errorf("update to a deprecated version:\n%s", errOut)
	}
	deprecate(newVersion)
	out, _ = run(1, "registry", "check", "-config", cfg)
	if !strings.Contains(out, "deprecated: a bug eats your data") || !strings.Contains(out, "the pinned version is deprecated") {
		t.Errorf("registry check, deprecated pin:\n%s", out)
	}

	// Bad input, nothing written.
	now, _ := os.ReadFile(cfg)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"update", "nope", "-config", cfg}, `has no server "nope"`},
		{[]string{"update", name + "@0.0.1", "-config", cfg}, "0.0.1"},
	} {
		_, errOut := run(1, c.args...)
		if !strings.Contains(errOut, c.want) {
			t.Errorf("junction %s: no %q in\n%s", strings.Join(c.args, " "), c.want, errOut)
		}
	}
	hand := filepath.Join(dir, "hand.json")
	os.WriteFile(hand, []byte(`{"servers": {"mine": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@`+refVersion+`"]}}}`), 0o600)
	if _, errOut := run(1, "update", "mine", "-config", hand); !strings.Contains(errOut, "did not come from a registry") {
		t.Errorf("update of a server not from a registry:\n%s", errOut)
	}
	if again, _ := os.ReadFile(cfg); string(again) != string(now) {
		t.Fatal("a refused update changed the config")
	}
}
