package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigCheckRefusesWhatServeRefuses: every config file that stops
// "junction serve" is refused by "junction config check" too, with a
// message naming the same field; and a file serve accepts, check accepts.
func TestConfigCheckRefusesWhatServeRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badLock := write("bad.lock", "{not json")
	for _, tc := range []struct{ name, cfg, want string }{
		{"unknown pack", "packs:\n  nosuch: {}\n", `unknown pack "nosuch"`},
		{"pack setting", "packs:\n  diagram:\n    settings:\n      max_steps: -3\n", "packs.diagram.settings.max_steps: must be a whole number above zero"},
		{"dipeo setting", "packs:\n  dipeo:\n    settings:\n      max_run_timeout: soon\n", "packs.dipeo.settings.max_run_timeout"},
		{"lock file", "lock:\n  path: " + badLock + "\n", "manifest: invalid character"},
		{"token file", "http:\n  listen: 127.0.0.1:0\n  token_file: " + filepath.Join(dir, "none") + "\n", "no such file or directory"},
		{"listen", "http:\n  listen: 127.0.0.1:99999\n", `invalid port "99999"`},
		{"mode", "http:\n  mode: weird\n", `unknown HTTP mode "weird"`},
		{"audit file", "audit:\n  output: " + filepath.Join(dir, "no", "audit.jsonl") + "\n", filepath.Join(dir, "no", "audit.jsonl")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := write(strings.ReplaceAll(tc.name, " ", "_")+".yaml", tc.cfg)
			env := map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state")}
			_, serveErr, code := run(t, env, "serve", "-config", file, "-data-dir", filepath.Join(dir, "data"))
			if code == 0 || !strings.Contains(serveErr, tc.want) {
				t.Fatalf("serve: exit %d, stderr %q; want a failure with %q", code, serveErr, tc.want)
			}
			out, checkErr, code := runConfig(t, env, file)
			if code != 1 || !strings.Contains(out+checkErr, tc.want) {
				t.Errorf("config check: exit %d, output %q %q; want exit 1 with %q", code, out, checkErr, tc.want)
			}
		})
	}
	t.Run("accepted by both", func(t *testing.T) {
		file := write("good.yaml", "packs:\n  core: {}\n  diagram:\n    settings:\n      max_steps: 50\n")
		env := map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state")}
		if _, serveErr, code := run(t, env, "serve", "-config", file, "-data-dir", filepath.Join(dir, "data")); code != 0 {
			t.Errorf("serve: exit %d: %s", code, serveErr)
		}
		if out, checkErr, code := runConfig(t, env, file); code != 0 {
			t.Errorf("config check: exit %d: %s %s", code, out, checkErr)
		}
	})
}
