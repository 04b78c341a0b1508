package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run runs the CLI with buffers and an environment map.
func run(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &Env{
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &errb,
		Getenv: func(k string) string { return env[k] },
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	err := RunEnv(ctx, e, args)
	code = ExitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestHelpAndUsageErrors(t *testing.T) {
	out, _, code := run(t, nil, "help")
	if code != 0 || !strings.Contains(out, "tools call") || !strings.Contains(out, "serve") {
		t.Errorf("help: exit %d, output %q", code, out)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no command given"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"tools"}, 2, "needs a subcommand"},
		{[]string{"serve", "-no-such-flag"}, 2, "flag provided but not defined: -no-such-flag"},
		{[]string{"serve", "extra"}, 2, "serve takes no arguments"},
		{[]string{"serve", "-fast-path=false"}, 2, "-fast-path is gone: junction has one call path"},
		{[]string{"serve", "--fast-path"}, 2, "remove the flag"},
		{[]string{"serve", "-token", "x"}, 2, "only apply with -http"},
		{[]string{"tools", "call"}, 2, "exactly one tool name"},
		{[]string{"tools", "call", "junction_version", "-args", "[1]"}, 2, "-args: not a JSON object"},
		{[]string{"tools", "list", "-url", "ftp://x"}, 2, "want an http:// or https:// URL"},
		{[]string{"tools", "list", "-url", "http://127.0.0.1:1/mcp", "--", "cat"}, 2, "either -url or -- COMMAND"},
		{[]string{"serve", "-log-level", "loud"}, 2, "-log-level"},
	} {
		_, errOut, code := run(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("junction %q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	out, _, code = run(t, nil, "serve", "-help")
	if code != 0 || !strings.Contains(out, "-insecure-no-auth") || !strings.Contains(out, "Examples:") {
		t.Errorf("serve -help: exit %d, output %q", code, out)
	}
}

func TestToolsAgainstInProcessHub(t *testing.T) {
	out, errOut, code := run(t, nil, "tools", "list")
	if code != 0 || !strings.Contains(out, "junction_version") {
		t.Fatalf("tools list: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, nil, "tools", "call", "junction_version", "-output", "json")
	if code != 0 || !strings.Contains(out, `"structuredContent"`) {
		t.Fatalf("tools call: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = run(t, nil, "tools", "call", "missing_tool")
	if code != 1 || !strings.Contains(errOut, `unknown tool "missing_tool"`) {
		t.Errorf("tools call missing_tool: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, map[string]string{EnvTools: "ghost"}, "tools", "list")
	if code != 2 || !strings.Contains(errOut, `JUNCTION_TOOLS: unknown tool "ghost"`) {
		t.Errorf("JUNCTION_TOOLS=ghost: exit %d, stderr %q", code, errOut)
	}
}

func TestLockAndSelftest(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "j.lock.json")
	if out, errOut, code := run(t, nil, "lock", "-lock", lock); code != 0 || out != "locked 1 tools in "+lock+"\n" {
		t.Fatalf("lock: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := run(t, nil, "selftest", "-lock", lock); code != 0 || !strings.HasPrefix(out, "ok: 1 tools") {
		t.Fatalf("selftest: exit %d, %q", code, out)
	}
	b, _ := os.ReadFile(lock)
	os.WriteFile(lock, bytes.Replace(b, []byte(`"name": "junction_version"`), []byte(`"name": "junction_old"`), 1), 0o644)
	out, _, code := run(t, nil, "selftest", "-lock", lock)
	if code != 1 || !strings.Contains(out, "added:     junction_version") || !strings.Contains(out, "removed:   junction_old") {
		t.Errorf("selftest after edit: exit %d\n%s", code, out)
	}
}

func TestArgValue(t *testing.T) {
	for _, tc := range []struct {
		v, typ string
		want   any
	}{
		{"8080", "integer", float64(8080)},
		{"8080", "string", "8080"},
		{"true", "", true},
		{"hello", "", "hello"},
		{`{"a":1}`, "object", map[string]any{"a": float64(1)}},
	} {
		got := argValue(tc.v, tc.typ)
		if gs, ws := strings.TrimSpace(fmtAny(got)), strings.TrimSpace(fmtAny(tc.want)); gs != ws {
			t.Errorf("argValue(%q, %q) = %v, want %v", tc.v, tc.typ, got, tc.want)
		}
	}
}

func fmtAny(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.String()
}

func TestResourcesAndPromptsCommands(t *testing.T) {
	out, errOut, code := run(t, nil, "resources", "list", "-pack", "conformance")
	if code != 0 || !strings.Contains(out, "test://static-text") || !strings.Contains(out, "test://template/{id}/data") {
		t.Fatalf("resources list: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, nil, "resources", "read", "test://template/42/data", "-pack", "conformance")
	if code != 0 || !strings.Contains(out, "42") {
		t.Errorf("resources read template: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, nil, "prompts", "list", "-pack", "conformance")
	if code != 0 || !strings.Contains(out, "test_prompt_with_arguments(arg1, arg2)") {
		t.Errorf("prompts list: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, nil, "prompts", "get", "test_prompt_with_arguments", "-arg", "arg1=testValue1", "-arg", "arg2=testValue2", "-pack", "conformance")
	if code != 0 || !strings.Contains(out, "testValue1") || !strings.Contains(out, "testValue2") {
		t.Errorf("prompts get: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = run(t, nil, "resources", "read", "test://nope", "-pack", "conformance")
	if code != 1 || !strings.Contains(errOut, "test://nope") {
		t.Errorf("reading an unknown resource: exit %d, stderr %q", code, errOut)
	}
}
