package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/junction-mcp/junction/internal/buildinfo"
)

// The tests in this file check the grammar every command shares:
// help, unknown names, bad flags, -o, old names and completion.

func TestUnknownCommandSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // all of stderr
	}{
		{[]string{"servee"}, `junction: unknown command "servee"
Did you mean "serve"?
Usage: junction <command> [flags] [args]; "junction help" lists the commands.
`},
		{[]string{"tools", "lst"}, `junction: unknown command "tools lst"
Did you mean "tools list"?
Usage: junction tools list|call|search [flags] [args]; "junction help tools" says more.
`},
		{[]string{"tool"}, `junction: unknown command "tool"
Did you mean "tools" or "toolbox"?
Usage: junction <command> [flags] [args]; "junction help" lists the commands.
`},
		{[]string{"files", "psuh", "x"}, `junction: unknown command "files psuh"
Did you mean "files push"?
Usage: junction files serve|push|pull|deploy-host [flags] [args]; "junction help files" says more.
`},
		{[]string{"-http", ":0", "serve"}, `junction: -http before a command: give the command first, then its flags
Usage: junction <command> [flags] [args]; "junction help" lists the commands.
`},
		{[]string{"xyzzy"}, `junction: unknown command "xyzzy"
Usage: junction <command> [flags] [args]; "junction help" lists the commands.
`},
		{[]string{"help", "servee"}, `junction: unknown command "servee"
Did you mean "serve"?
Usage: junction <command> [flags] [args]; "junction help" lists the commands.
`},
	} {
		out, errOut, code := run(t, nil, tc.args...)
		if code != 2 || out != "" || errOut != tc.want {
			t.Errorf("junction %q: exit %d, stdout %q, stderr\n%s\nwant exit 2 and stderr\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestGroupWithoutSubcommand(t *testing.T) {
	out, errOut, code := run(t, nil, "tools")
	if code != 2 || out != "" {
		t.Fatalf("junction tools: exit %d, stdout %q", code, out)
	}
	if !strings.HasPrefix(errOut, "junction: \"tools\" needs a subcommand\nUsage: junction tools <command>") ||
		strings.Count(errOut, "needs a subcommand") != 1 || strings.Count(errOut, "tools list") != 1 {
		t.Errorf("junction tools: stderr\n%s\nwant the error first, then the group's help once", errOut)
	}
	_, errOut, code = run(t, nil, "tools", "-url", "http://127.0.0.1:1/mcp")
	if code != 2 || !strings.HasPrefix(errOut, "junction: \"tools\" needs a subcommand\n") {
		t.Errorf("junction tools -url: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run(t, nil)
	if code != 2 || !strings.HasPrefix(errOut, "junction: no command given\n") || strings.Count(errOut, "tools list") != 1 {
		t.Errorf("junction: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{{"tools", "-help"}, {"tools", "-h"}, {"tools", "--help"}, {"help", "tools"}} {
		out, errOut, code := run(t, nil, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: junction tools <command>") || strings.Count(out, "tools call") != 1 {
			t.Errorf("junction %q: exit %d, stderr %q, stdout\n%s", args, code, errOut, out)
		}
	}
}

// TestHelpEverywhere runs -help, -h, --help and "help NAME" for every
// command, old names included: exit 0, the help once on stdout, nothing
// on stderr.
func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"-help"}, {"--help"}} {
		out, errOut, code := run(t, nil, args...)
		if code != 0 || errOut != "" || strings.Count(out, "Commands:") != 1 || !strings.Contains(out, "files push") {
			t.Errorf("junction %q: exit %d, stderr %q, stdout\n%s", args, code, errOut, out)
		}
	}
	for _, c := range commands() {
		words := strings.Fields(c.name)
		for _, args := range [][]string{
			append(append([]string(nil), words...), "-help"),
			append(append([]string(nil), words...), "-h"),
			append(append([]string(nil), words...), "--help"),
			append([]string{"help"}, words...),
		} {
			out, errOut, code := run(t, nil, args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: junction "+c.name+" ") || strings.Count(out, "Usage:") != 1 ||
				strings.HasSuffix(out, "Flags:\n") {
				t.Errorf("junction %q: exit %d, stderr %q, stdout\n%s", args, code, errOut, out)
			}
		}
	}
}

// TestHelpAfterArguments: a help flag after the arguments shows the help
// too, but not after "--", where it belongs to the command being run.
func TestHelpAfterArguments(t *testing.T) {
	for _, args := range [][]string{
		{"config", "check", "junction.yaml", "-help"},
		{"files", "push", "a.txt", "127.0.0.1:1", "--help"},
		{"auth", "logout", "docs", "-h"},
		{"tools", "call", "junction_version", "-help"},
	} {
		out, errOut, code := run(t, nil, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: junction "+args[0]+" "+args[1]+" ") {
			t.Errorf("junction %q: exit %d, stderr %q, stdout\n%s", args, code, errOut, out)
		}
	}
	// After --, -help is the server's: here "cat" does not know it.
	out, errOut, code := run(t, nil, "tools", "list", "--", "cat", "-help")
	if code == 0 || strings.Contains(out, "Usage: junction") {
		t.Errorf("junction tools list -- cat -help: exit %d, stdout %q, stderr %q; want cat to run (and fail)", code, out, errOut)
	}
	if helpAfterArgs([]string{"--", "plugin", "-h"}, []string{"plugin", "-h"}) {
		t.Error("helpAfterArgs: a -h after -- counted as help")
	}
}

func TestHiddenNamesAndFlags(t *testing.T) {
	out, _, _ := run(t, nil, "help")
	for _, hidden := range []string{"\n  push ", "\n  pull ", "\n  deploy-host ", "\n  mcp "} {
		if strings.Contains(out, hidden) {
			t.Errorf("help lists the old name %q:\n%s", strings.TrimSpace(hidden), out)
		}
	}
	for _, want := range []string{"files push", "files pull", "files deploy-host", "diode mcp", "diode files", "diode push", "diode pull", "completion"} {
		if !strings.Contains(out, "  "+want+" ") {
			t.Errorf("help does not list %q", want)
		}
	}
	out, _, _ = run(t, nil, "diagram", "run", "-help")
	if strings.Contains(out, "run-id") || !strings.Contains(out, "-background") {
		t.Errorf("diagram run -help shows the internal -run-id or hides -background:\n%s", out)
	}
	out, _, _ = run(t, nil, "tools", "call", "-help")
	if strings.Contains(out, "  -json") || !strings.Contains(out, "  -args object") || !strings.Contains(out, "  -o format") {
		t.Errorf("tools call -help: want -args and -o, not the deprecated -json:\n%s", out)
	}
}

func TestBadFlagPointsAtHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-bogus"}, "junction: serve: flag provided but not defined: -bogus\nRun \"junction serve -help\" for its flags.\n"},
		{[]string{"files", "push", "-bogus"}, "junction: files push: flag provided but not defined: -bogus\nRun \"junction files push -help\" for its flags.\n"},
		{[]string{"push", "-bogus"}, "junction: push: flag provided but not defined: -bogus\nRun \"junction push -help\" for its flags.\n"},
		{[]string{"tools", "list", "-timeout", "soon"}, "junction: tools list: invalid value \"soon\" for flag -timeout: parse error\nRun \"junction tools list -help\" for its flags.\n"},
		{[]string{"version", "-o", "xml"}, "junction: version: invalid value \"xml\" for flag -o: \"xml\": use text or json\nRun \"junction version -help\" for its flags.\n"},
	} {
		out, errOut, code := run(t, nil, tc.args...)
		if code != 2 || out != "" || errOut != tc.want {
			t.Errorf("junction %q: exit %d, stdout %q, stderr\n%s\nwant\n%s", tc.args, code, out, errOut, tc.want)
		}
	}
}

func TestOutputFlag(t *testing.T) {
	var v struct{ Version string }
	for _, flags := range [][]string{{"-o", "json"}, {"-output", "json"}, {"-json"}, {"--o=json"}} {
		out, errOut, code := run(t, nil, append([]string{"version"}, flags...)...)
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Version != buildinfo.Version() {
			t.Errorf("version %q: exit %d, stdout %q, stderr %q", flags, code, out, errOut)
		}
	}
	if out, _, code := run(t, nil, "version", "-o", "text"); code != 0 || !strings.HasPrefix(out, "junction "+buildinfo.Version()) {
		t.Errorf("version -o text: exit %d, %q", code, out)
	}

	var packs struct {
		Packs []struct {
			Name    string
			Default bool
		}
	}
	out, _, code := run(t, nil, "packs", "-o", "json")
	if err := json.Unmarshal([]byte(out), &packs); code != 0 || err != nil || len(packs.Packs) == 0 || packs.Packs[0].Name == "" {
		t.Errorf("packs -o json: exit %d, %v\n%s", code, err, out)
	}

	var tools struct{ Tools []struct{ Name string } }
	out, _, code = run(t, nil, "tools", "list", "-o", "json")
	if err := json.Unmarshal([]byte(out), &tools); code != 0 || err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "junction_version" {
		t.Errorf("tools list -o json: exit %d, %v\n%s", code, err, out)
	}

	cfg := filepath.Join(t.TempDir(), "j.yaml")
	os.WriteFile(cfg, []byte("packs:\n  core: {}\n"), 0o600)
	var check struct{ Valid bool }
	out, _, code = run(t, nil, "config", "check", "-o", "json", cfg)
	if err := json.Unmarshal([]byte(out), &check); code != 0 || err != nil || !check.Valid {
		t.Errorf("config check -o json: exit %d, %v\n%s", code, err, out)
	}

	lock := filepath.Join(t.TempDir(), "j.lock.json")
	var locked struct {
		Lock  string
		Tools int
	}
	out, errOut, code := run(t, nil, "lock", "-lock", lock, "-o", "json")
	if err := json.Unmarshal([]byte(out), &locked); code != 0 || err != nil || locked.Lock != lock || locked.Tools != 1 {
		t.Errorf("lock -o json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	var drift struct{ OK bool }
	out, _, code = run(t, nil, "selftest", "-lock", lock, "-o", "json")
	if err := json.Unmarshal([]byte(out), &drift); code != 0 || err != nil || !drift.OK {
		t.Errorf("selftest -o json: exit %d, %v\n%s", code, err, out)
	}
}

// TestOldFlagNames: lock's -o FILE and tools call's -json still work,
// each with one line on stderr naming the new flag.
func TestOldFlagNames(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "old.lock.json")
	out, errOut, code := run(t, nil, "lock", "-o", lock)
	if code != 0 || out != "locked 1 tools in "+lock+"\n" || errOut != "junction: lock -o FILE is deprecated: use -lock FILE\n" {
		t.Errorf("lock -o FILE: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("lock -o FILE wrote no file: %v", err)
	}

	out, errOut, code = run(t, nil, "tools", "call", "junction_version", "-args", "{}", "-o", "json")
	if code != 0 || errOut != "" || !strings.Contains(out, `"structuredContent"`) {
		t.Errorf("tools call -args: exit %d, stderr %q\n%s", code, errOut, out)
	}
	out, errOut, code = run(t, nil, "tools", "call", "junction_version", "-json", "{}")
	if code != 0 || errOut != "junction: tools call -json is deprecated: use -args (and -o json for JSON output)\n" || !strings.Contains(out, buildinfo.Version()) {
		t.Errorf("tools call -json: exit %d, stderr %q\n%s", code, errOut, out)
	}
}

// TestCompletionBash loads the bash script into a real bash and asks it
// to complete, as bash does on TAB.
func TestCompletionBash(t *testing.T) {
	out, errOut, code := run(t, nil, "completion", "bash")
	if code != 0 || errOut != "" {
		t.Fatalf("completion bash: exit %d, stderr %q", code, errOut)
	}
	script := filepath.Join(t.TempDir(), "junction.bash")
	if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, msg)
	}
	for _, tc := range []struct {
		words []string // the command line; the last word is being completed
		want  string
	}{
		{[]string{"junction", "too"}, "tools toolbox"},
		{[]string{"junction", "tools", "l"}, "list"},
		{[]string{"junction", "files", ""}, "serve push pull deploy-host"},
		{[]string{"junction", "diode", "m"}, "mcp"},
		{[]string{"junction", "diode", "p"}, "push pull"},
		{[]string{"junction", "completion", "f"}, "fish"},
		{[]string{"junction", "help", "pa"}, "packs"},
		{[]string{"junction", "pu"}, ""}, // old names are not offered
	} {
		if got := bashComplete(t, script, tc.words); got != tc.want {
			t.Errorf("complete %q = %q, want %q", tc.words, got, tc.want)
		}
	}
}

// bashComplete runs the completion function of script for words and
// returns its answers, sorted as bash's compgen gives them.
func bashComplete(t *testing.T, script string, words []string) string {
	t.Helper()
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = strconv.Quote(w)
	}
	prog := `source "$1" && COMP_WORDS=(` + strings.Join(quoted, " ") + `) && COMP_CWORD=` + strconv.Itoa(len(words)-1) +
		`; _junction; echo "${COMPREPLY[*]}"`
	out, err := exec.Command("bash", "-c", prog, "bash", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestCompletionZshFish checks that zsh and fish accept their scripts and
// that fish completes a subcommand with them.
func TestCompletionZshFish(t *testing.T) {
	dir := t.TempDir()
	for _, sh := range []string{"zsh", "fish"} {
		out, errOut, code := run(t, nil, "completion", sh)
		if code != 0 || errOut != "" || !strings.Contains(out, "deploy-host") || strings.Contains(out, "old name") {
			t.Fatalf("completion %s: exit %d, stderr %q\n%s", sh, code, errOut, out)
		}
		script := filepath.Join(dir, "junction."+sh)
		if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := exec.LookPath(sh); err != nil {
			if os.Getenv("JUNCTION_REQUIRE_TOOLS") == "1" {
				t.Fatalf("JUNCTION_REQUIRE_TOOLS=1 but %s is missing; run scripts/setup (it installs Debian's %s)", sh, sh)
			}
			t.Skipf("%s is not installed (scripts/setup installs it)", sh)
		}
		if msg, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, msg)
		}
	}
	// zsh: the completion function, with zsh's completion builtins
	// replaced by stand-ins that print what they are given.
	out, err := exec.Command("zsh", "-f", "-c", `
_describe() { local a; for a in "${(@P)2}"; do print -r -- "${a%%:*}"; done }
compadd() { while [[ $1 == -* ]]; do [[ $1 == -- ]] && { shift; break }; shift; done; print -l -- "$@" }
_files() { print FILES }
compdef() { : }
source $1
words=(junction tools ""); CURRENT=3; _junction
words=(junction completion ""); CURRENT=3; _junction
words=(junction config check ""); CURRENT=4; _junction`, "zsh", filepath.Join(dir, "junction.zsh")).CombinedOutput()
	if err != nil || string(out) != "list\ncall\nsearch\nbash\nzsh\nfish\nFILES\n" {
		t.Errorf("zsh completions: %v\n%s\nwant list, call, search (tools), bash, zsh, fish (completion), FILES (config check)", err, out)
	}
	out, err = exec.Command("fish", "--no-config", "-c", `source $argv[1]; complete -C "junction tools l"; complete -C "junction fil"`, filepath.Join(dir, "junction.fish")).CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	if got := string(out); !regexp.MustCompile(`(?m)^list\tlist the tools`).MatchString(got) || !regexp.MustCompile(`(?m)^files\t`).MatchString(got) {
		t.Errorf("fish completions:\n%s\nwant list (for tools l) and files (for fil)", got)
	}
}

// TestExitCodeTable checks docs/cli.md's table of exit statuses against
// the codes ExitCode returns.
func TestExitCodeTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `(\\d+)` \\|").FindAllStringSubmatch(string(doc), -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1])
	}
	want := []string{
		strconv.Itoa(exitOK), strconv.Itoa(exitFailure), strconv.Itoa(exitUsage),
		strconv.Itoa(exitFailed), strconv.Itoa(exitInterrupt),
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("docs/cli.md lists exit statuses %v, want %v", got, want)
	}
	// Each code as ExitCode gives it.
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"version"}, exitOK},
		{[]string{"tools", "call", "missing_tool"}, exitFailure},
		{[]string{"servee"}, exitUsage},
	} {
		if _, _, code := run(t, nil, tc.args...); code != tc.code {
			t.Errorf("junction %q: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}

// TestConnectDisconnectJSON: -o json reports the same plan as the text,
// applies it only with -apply, and keeps disconnect's refusal of a host
// file changed since connect.
func TestConnectDisconnectJSON(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	file := filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	orig := `{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}`
	os.WriteFile(file, []byte(orig), 0o600)
	jcfg := filepath.Join(home, "j.json")

	var plan connectReport
	out, errOut, code := runHostCmd(t, "linux", env, "connect", "windsurf", "-o", "json", "-keep", "b", "-config", jcfg)
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil {
		t.Fatalf("connect -o json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if plan.Host != "windsurf" || plan.File != file || plan.Config != jcfg || plan.Applied || plan.Backup != "" ||
		strings.Join(plan.Moved, ",") != "a" || strings.Join(plan.Kept, ",") != "b" || !strings.Contains(plan.Diff, `"junction"`) ||
		strings.Join(plan.Command, " ") != "/opt/junction/bin/junction serve -config "+jcfg {
		t.Errorf("connect -o json = %+v", plan)
	}
	if b, _ := os.ReadFile(file); string(b) != orig {
		t.Fatalf("connect -o json without -apply changed the host file:\n%s", b)
	}
	out, errOut, code = runHostCmd(t, "linux", env, "connect", "windsurf", "-o", "json", "-apply", "-config", jcfg)
	plan = connectReport{}
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil || !plan.Applied || !strings.HasPrefix(plan.Backup, file+".junction-backup-") {
		t.Fatalf("connect -o json -apply: exit %d, %v, %+v\n%s", code, err, plan, errOut)
	}

	var undo struct {
		Diff             string
		Changed, Applied bool
	}
	b, _ := os.ReadFile(file)
	os.WriteFile(file, bytes.Replace(b, []byte(`"junction"`), []byte(`"my-edit": {"command": "x"}, "junction"`), 1), 0o600)
	out, errOut, code = runHostCmd(t, "linux", env, "disconnect", "windsurf", "-o", "json", "-apply")
	if err := json.Unmarshal([]byte(out), &undo); code != 1 || err != nil || !undo.Changed || undo.Applied ||
		!strings.Contains(undo.Diff, "my-edit") || !strings.Contains(errOut, "-force") {
		t.Errorf("disconnect -o json of a changed file: exit %d, %v, %+v\n%s", code, err, undo, errOut)
	}
	out, errOut, code = runHostCmd(t, "linux", env, "disconnect", "windsurf", "-o", "json", "-apply", "-force")
	undo.Applied = false
	if err := json.Unmarshal([]byte(out), &undo); code != 0 || err != nil || !undo.Applied {
		t.Errorf("disconnect -o json -force: exit %d, %v, %+v\n%s", code, err, undo, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != orig {
		t.Errorf("after disconnect: %s", b)
	}
}

// TestEveryCommandTakesOutput: every command but the servers and
// completion takes -o, so a new command that prints a result must too.
func TestEveryCommandTakesOutput(t *testing.T) {
	noOutput := map[string]bool{ // they serve a protocol, or print a script
		"serve": true, "files serve": true, "files deploy-host": true, "deploy-host": true,
		"diode mcp": true, "mcp": true, "diode files": true, "toolbox mcp": true, "completion": true,
	}
	for _, c := range commands() {
		out, _, code := run(t, nil, append(strings.Fields(c.name), "-help")...)
		has := strings.Contains(out, "\n  -o format\n")
		if code != 0 || has == noOutput[c.name] {
			t.Errorf("junction %s -help: exit %d, lists -o: %v; want -o on every command but the servers and completion", c.name, code, has)
		}
	}
}
