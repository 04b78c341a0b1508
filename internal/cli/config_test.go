package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runConfig runs "junction config check" with buffers and a fixed
// environment.
func runConfig(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}
	err := RunEnv(t.Context(), e, append([]string{"config", "check"}, args...))
	code = ExitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestConfigCheckValid(t *testing.T) {
	t.Parallel()
	env := map[string]string{"GITHUB_TOKEN": "ghp_secret", "LINEAR_API_KEY": "lin_secret"}
	out, errOut, code := runConfig(t, env, "../config/testdata/claude_desktop_config.json")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"claude_desktop_config.json: ok, mcpServers form (Claude Desktop, Claude Code, Cursor)",
		"servers:  7 (1 disabled): stdio 4, http 1, sse 1",
		"linear      http   https://mcp.linear.app/mcp",
		"packs:    (the default packs)",
		"line 47: globalShortcut: ignored (a Claude Desktop setting)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "secret") {
		t.Errorf("output shows a secret:\n%s", out)
	}
}

func TestConfigCheckErrors(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("servers:\n  gh:\n    url: ftp://x\n    tols: []\nhttp: {mode: x}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runConfig(t, nil, path)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	want := path + `: 3 problems:
  ` + path + `:3: servers.gh.url: invalid URL "ftp://x": must be http:// or https:// with a host
  ` + path + `:4: servers.gh.tols: unknown key (did you mean "tools"?)
  ` + path + `:5: http.mode: unknown HTTP mode "x" (use dual, stateful or stateless)
`
	if errOut != want {
		t.Errorf("stderr =\n%s\nwant\n%s", errOut, want)
	}

	out, _, code = runConfig(t, nil, "-json", path)
	if code != 1 {
		t.Errorf("-json exit %d, want 1", code)
	}
	var report struct {
		Valid  bool
		Errors []checkProblem
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("-json output is not JSON: %v\n%s", err, out)
	}
	wantErrs := []checkProblem{
		{File: path, Line: 3, Path: "servers.gh.url", Message: `invalid URL "ftp://x": must be http:// or https:// with a host`},
		{File: path, Line: 4, Path: "servers.gh.tols", Message: `unknown key (did you mean "tools"?)`},
		{File: path, Line: 5, Path: "http.mode", Message: `unknown HTTP mode "x" (use dual, stateful or stateless)`},
	}
	if report.Valid {
		t.Error("-json valid = true")
	}
	if diff := cmp.Diff(wantErrs, report.Errors); diff != "" {
		t.Errorf("-json errors mismatch (-want +got):\n%s", diff)
	}
}

func TestConfigCheckJSONValid(t *testing.T) {
	t.Parallel()
	// npx, the servers' command, is on this PATH: no warning about it.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "npx"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runConfig(t, map[string]string{"GITHUB_TOKEN": "t", "HOME": "/home/u", "PATH": bin}, "-json", "../config/testdata/junction.yaml")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	var report checkReport
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if !report.Valid || report.Shape != "junction" {
		t.Errorf("valid = %v, shape = %q", report.Valid, report.Shape)
	}
	if diff := cmp.Diff(map[string]int{"stdio": 2, "http": 1}, report.Counts); diff != "" {
		t.Errorf("transports mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"core", "diode"}, report.Packs); diff != "" {
		t.Errorf("packs mismatch (-want +got):\n%s", diff)
	}
	if len(report.Warnings) != 1 {
		t.Errorf("warnings = %v, want the one about preset deploy", report.Warnings)
	}
}

func TestConfigCheckUsage(t *testing.T) {
	t.Parallel()
	if _, _, code := runConfig(t, nil); code != 2 {
		t.Errorf("no FILE: exit %d, want 2", code)
	}
	_, errOut, code := runConfig(t, nil, filepath.Join(t.TempDir(), "missing.yaml"))
	if code != 1 || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigCheckUnknownPack(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "packs.yaml")
	if err := os.WriteFile(path, []byte("packs:\n  core: {}\n  nosuchpack: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runConfig(t, nil, path)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := path + `:3: packs.nosuchpack: unknown pack "nosuchpack" (built-in packs: `; !strings.Contains(errOut, want) {
		t.Errorf("stderr = %q, want it to contain %q", errOut, want)
	}
}
