package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCLIGrammar runs the command-line grammar through the binary: the
// error first with a suggestion, help on stdout with exit 0, -o json, and
// the deprecated -json of tools call.
func TestCLIGrammar(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args           []string
		code           int
		stdout, stderr string // a prefix of each
	}{
		{[]string{"servee"}, 2, "", "junction: unknown command \"servee\"\nDid you mean \"serve\"?\nUsage: junction <command>"},
		{[]string{"tools", "lst"}, 2, "", "junction: unknown command \"tools lst\"\nDid you mean \"tools list\"?\n"},
		{[]string{"serve", "-bogus"}, 2, "", "junction: serve: flag provided but not defined: -bogus\nRun \"junction serve -help\" for its flags.\n"},
		{[]string{"tools"}, 2, "", "junction: \"tools\" needs a subcommand\nUsage: junction tools <command>"},
		{[]string{"version", "-help"}, 0, "Usage: junction version ", ""},
		{[]string{"help", "files", "push"}, 0, "Usage: junction files push ", ""},
		{[]string{"push", "--help"}, 0, "Usage: junction push ", ""},
		{[]string{"diagram", "run", "-h"}, 0, "Usage: junction diagram run ", ""},
	} {
		out, errOut, code := runJunction(t, nil, tc.args...)
		if code != tc.code || !strings.HasPrefix(out, tc.stdout) || !strings.HasPrefix(errOut, tc.stderr) || (tc.stderr == "" && errOut != "") {
			t.Errorf("junction %q: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout %q..., stderr %q...", tc.args, code, out, errOut, tc.code, tc.stdout, tc.stderr)
		}
		if tc.code == 2 && strings.Count(errOut, "\n") > 12 {
			t.Errorf("junction %q: %d lines on stderr, want a short message", tc.args, strings.Count(errOut, "\n"))
		}
	}

	out, errOut, code := runJunction(t, nil, "version", "-o", "json")
	var v struct{ Version string }
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" {
		t.Errorf("version -o json: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runJunction(t, nil, "tools", "call", "junction_version", "-json", "{}", "-o", "json")
	if code != 0 || !strings.Contains(out, `"structuredContent"`) ||
		errOut != "junction: tools call -json is deprecated: use -args (and -o json for JSON output)\n" {
		t.Errorf("tools call -json: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// TestCLICompletionFlags: the bash script completes a command's flags by
// asking the binary for its help, as it does on TAB.
func TestCLICompletionFlags(t *testing.T) {
	t.Parallel()
	out, _, code := runJunction(t, nil, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	script := filepath.Join(t.TempDir(), "junction.bash")
	if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{junctionBin(t), "serve", "-http-m"}, "-http-mode"},
		{[]string{junctionBin(t), "diode", "mcp", "-mcp-p"}, "-mcp-preset"},
		{[]string{junctionBin(t), "mcp", "-mcp-p"}, "-mcp-preset"},
		{[]string{junctionBin(t), "tools", "call", "-ar"}, "-arg -args"},
		{[]string{junctionBin(t), "diagram", "run", "-run"}, ""}, // internal flags are not offered
	} {
		quoted := make([]string, len(tc.words))
		for i, w := range tc.words {
			quoted[i] = strconv.Quote(w)
		}
		prog := `source "$1"; COMP_WORDS=(` + strings.Join(quoted, " ") + `); COMP_CWORD=` + strconv.Itoa(len(tc.words)-1) +
			`; _junction; echo "${COMPREPLY[*]}"`
		cmd := exec.CommandContext(t.Context(), "bash", "-c", prog, "bash", script)
		cmd.Env = childEnv(t.TempDir())
		got, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(got)) != tc.want {
			t.Errorf("complete %q = %q (%v), want %q", tc.words[1:], got, err, tc.want)
		}
	}
}

// TestCLIFilesAndDiodeGroups: files push and files pull against a
// listener started as "diode files", diode push and the old name push
// beside them, and "diode mcp" serving the Diode tools.
func TestCLIFilesAndDiodeGroups(t *testing.T) {
	t.Parallel()
	root, work := t.TempDir(), t.TempDir()
	addr := startListenerProc(t, "files", "diode", "files", "-fileroot", root, "-insecure-no-auth", "127.0.0.1:0")
	local := filepath.Join(work, "a.txt")
	if err := os.WriteFile(local, []byte("through the files group\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, push := range [][]string{{"files", "push"}, {"diode", "push"}, {"push"}} {
		out, errOut, code := runJunction(t, nil, append(push, local, addr+":in/"+strings.Join(push, "-")+".txt")...)
		if code != 0 || !strings.Contains(errOut, "push ok: ") {
			t.Errorf("junction %v: exit %d\n%s%s", push, code, out, errOut)
		}
	}
	back := filepath.Join(work, "back.txt")
	if out, errOut, code := runJunction(t, nil, "files", "pull", addr+":in/push.txt", back); code != 0 {
		t.Fatalf("files pull: exit %d\n%s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(back); err != nil || string(b) != "through the files group\n" {
		t.Errorf("pulled %q, %v", b, err)
	}
	var sent, got struct {
		Local, URL string
		Bytes      int64
	}
	out, errOut, code := runJunction(t, nil, "files", "push", "-o", "json", local, addr+":in/json.txt")
	if err := json.Unmarshal([]byte(out), &sent); code != 0 || err != nil || sent.Local != local || sent.URL != "http://"+addr+"/in/json.txt" || sent.Bytes != 24 {
		t.Errorf("files push -o json: exit %d, %v, %+v\n%s%s", code, err, sent, out, errOut)
	}
	out, errOut, code = runJunction(t, nil, "files", "pull", "-o", "json", addr+":in/json.txt", back)
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Local != back || got.URL != sent.URL || got.Bytes != 24 {
		t.Errorf("files pull -o json: exit %d, %v, %+v\n%s%s", code, err, got, out, errOut)
	}

	cmd := exec.Command(junctionBin(t), "diode", "mcp", "-mcp-preset", "minimal")
	cmd.Env = childEnv(t.TempDir())
	cmd.WaitDelay = stopTimeout
	ctx, cancel := context.WithTimeout(t.Context(), connectTimeout)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: stopTimeout}, nil)
	if err != nil {
		t.Fatalf("connecting to junction diode mcp: %v", err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if len(names) == 0 || !strings.HasPrefix(names[0], "diode_") {
		t.Errorf("junction diode mcp -mcp-preset minimal serves %v, want diode tools", names)
	}
}
