package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runHostCmd runs a command with a fake home and a fixed junction binary.
// Not parallel: it sets the package's hostGOOS and executable.
func runHostCmd(t *testing.T, goos string, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	oldGOOS, oldExe := hostGOOS, executable
	hostGOOS = goos
	executable = func() (string, error) { return "/opt/junction/bin/junction", nil }
	defer func() { hostGOOS, executable = oldGOOS, oldExe }()
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	err := RunEnv(t.Context(), e, args)
	code = ExitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestConnectDisconnectCommands(t *testing.T) {
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			home := t.TempDir()
			env := map[string]string{"HOME": home}
			rel := ".config/Claude/claude_desktop_config.json"
			if goos == "darwin" {
				rel = "Library/Application Support/Claude/claude_desktop_config.json"
			}
			hostFile := filepath.Join(home, rel)
			os.MkdirAll(filepath.Dir(hostFile), 0o755)
			orig, err := os.ReadFile("../config/testdata/claude_desktop_config.json")
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(hostFile, orig, 0o644)

			// The default is a dry run.
			out, errOut, code := runHostCmd(t, goos, env, "connect", "claude-desktop")
			if code != 0 {
				t.Fatalf("connect: exit %d: %s", code, errOut)
			}
			for _, want := range []string{"--- " + hostFile, "+    \"junction\": {", "-    \"filesystem\": {", "Nothing was changed", "junction connect claude-desktop -apply"} {
				if !strings.Contains(out, want) {
					t.Errorf("dry run output lacks %q:\n%s", want, out)
				}
			}
			if b, _ := os.ReadFile(hostFile); !bytes.Equal(b, orig) {
				t.Fatal("the dry run changed the host file")
			}

			jcfg := filepath.Join(home, "j.json")
			out, errOut, code = runHostCmd(t, goos, env, "connect", "-config", jcfg, "claude-desktop", "-apply")
			if code != 0 {
				t.Fatalf("connect -apply: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "Backup of the host's file: "+hostFile+".junction-backup-") || !strings.Contains(out, "junction disconnect claude-desktop -apply") {
				t.Errorf("connect -apply output:\n%s", out)
			}
			b, _ := os.ReadFile(hostFile)
			if !strings.Contains(string(b), `"/opt/junction/bin/junction"`) || !strings.Contains(string(b), jcfg) || strings.Contains(string(b), "filesystem") {
				t.Errorf("host file after connect:\n%s", b)
			}
			if _, errOut, code := runConfig(t, map[string]string{"GITHUB_TOKEN": "x", "LINEAR_API_KEY": "y"}, jcfg); code != 0 {
				t.Errorf("junction config check: %s", errOut)
			}

			out, errOut, code = runHostCmd(t, goos, env, "disconnect", "claude-desktop", "-apply")
			if code != 0 {
				t.Fatalf("disconnect: exit %d: %s", code, errOut)
			}
			if !strings.Contains(out, "Restored "+hostFile+" from "+hostFile+".junction-backup-") {
				t.Errorf("disconnect output:\n%s", out)
			}
			if b, _ := os.ReadFile(hostFile); !bytes.Equal(b, orig) {
				t.Errorf("disconnect did not restore the exact bytes:\n%s", b)
			}
		})
	}
}

func TestConnectRefusals(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	_, errOut, code := runHostCmd(t, "linux", env, "connect", "emacs")
	if code != 2 || !strings.Contains(errOut, `unknown host "emacs" (known hosts: claude-code, claude-desktop, cursor, vscode, windsurf)`) {
		t.Errorf("unknown host: exit %d: %s", code, errOut)
	}
	_, errOut, code = runHostCmd(t, "linux", env, "connect", "cursor")
	if code != 1 || !strings.Contains(errOut, filepath.Join(home, ".cursor", "mcp.json")+": no such file") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
	_, errOut, code = runHostCmd(t, "linux", env, "disconnect", "windsurf")
	if code != 1 || !strings.Contains(errOut, "no backup made by junction connect") {
		t.Errorf("disconnect without backup: exit %d: %s", code, errOut)
	}

	// A host file changed after connect: disconnect refuses, -force wins.
	file := filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(`{"mcpServers": {"a": {"command": "a"}}}`), 0o600)
	if _, errOut, code := runHostCmd(t, "linux", env, "connect", "windsurf", "-apply", "-config", filepath.Join(home, "j.json")); code != 0 {
		t.Fatalf("connect: %s", errOut)
	}
	b, _ := os.ReadFile(file)
	os.WriteFile(file, bytes.Replace(b, []byte(`"junction"`), []byte(`"my-edit": {"command": "x"}, "junction"`), 1), 0o600)
	out, errOut, code := runHostCmd(t, "linux", env, "disconnect", "windsurf", "-apply")
	if code != 1 || !strings.Contains(errOut, "changed since junction connect wrote it") || !strings.Contains(errOut, "-force") || !strings.Contains(out, "my-edit") {
		t.Errorf("changed host file: exit %d:\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code := runHostCmd(t, "linux", env, "disconnect", "windsurf", "-apply", "-force"); code != 0 {
		t.Errorf("-force: %s", errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != `{"mcpServers": {"a": {"command": "a"}}}` {
		t.Errorf("after -force: %s", b)
	}

	// -keep leaves a server in the host.
	os.WriteFile(file, []byte(`{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}`), 0o600)
	out, errOut, code = runHostCmd(t, "linux", env, "connect", "windsurf", "-keep", "b", "-config", filepath.Join(home, "k.json"))
	if code != 0 || !strings.Contains(out, "left in Windsurf: b") || !strings.Contains(out, "move to "+filepath.Join(home, "k.json")+": a") || !strings.Contains(out, "junction connect windsurf -apply -config "+filepath.Join(home, "k.json")+" -keep b") {
		t.Errorf("-keep: exit %d:\n%s\n%s", code, out, errOut)
	}

	// -help exits 0 with examples.
	out, _, code = runHostCmd(t, "linux", env, "connect", "-help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "-apply") {
		t.Errorf("connect -help: exit %d:\n%s", code, out)
	}
	out, _, code = runHostCmd(t, "linux", env, "disconnect", "-help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "-force") {
		t.Errorf("disconnect -help: exit %d:\n%s", code, out)
	}
}
