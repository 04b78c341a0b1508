package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A shell example in the docs is a fenced block marked sh, bash, shell or
// console. Every one runs in TestDocsShellExamples unless the line before
// its fence (blank lines aside) is an HTML comment giving the reason it
// cannot run here:
//
//	<!-- not run: starts a server that runs until stopped -->
//
// so a new example is tested unless its author says why not, and the
// reason stays next to it in the page.

// shellExample is one fenced shell block of a markdown file.
type shellExample struct {
	file   string // relative to the repository root
	line   int    // of the opening fence, 1-based
	script string
	notRun string // the reason, or "" for a block that runs
}

var (
	shellFence  = regexp.MustCompile("^```(sh|bash|shell|console)\\s*$")
	notRunMark  = regexp.MustCompile(`^<!--\s*not run:\s*(.*?)\s*-->\s*$`)
	anyFence    = regexp.MustCompile("^```")
	docsSkipDir = map[string]bool{".git": true, ".tools": true, "node_modules": true, "dist": true, "bin": true}
)

// shellExamples finds the shell examples of every markdown file under root.
func shellExamples(t *testing.T, root string) []shellExample {
	t.Helper()
	var out []shellExample
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if docsSkipDir[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if !shellFence.MatchString(lines[i]) {
				if anyFence.MatchString(lines[i]) { // skip other fenced blocks whole
					for i++; i < len(lines) && !anyFence.MatchString(lines[i]); i++ {
					}
				}
				continue
			}
			ex := shellExample{file: rel, line: i + 1}
			for k := i - 1; k >= 0; k-- {
				if strings.TrimSpace(lines[k]) == "" {
					continue
				}
				if m := notRunMark.FindStringSubmatch(lines[k]); m != nil {
					ex.notRun = m[1]
					if ex.notRun == "" {
						t.Errorf("%s:%d: a not-run mark without a reason", rel, k+1)
					}
				}
				break
			}
			j := i + 1
			for j < len(lines) && !anyFence.MatchString(lines[j]) {
				j++
			}
			ex.script = strings.Join(lines[i+1:j], "\n")
			out = append(out, ex)
			i = j
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDocsShellExamples runs every shell example of the README and docs/
// that is not marked as one that cannot run here, with bash -euo pipefail,
// junction on PATH (the binary built for this run), a scratch HOME and XDG
// directories, in a scratch directory that holds links to the
// repository's files, and a timeout. An example that fails fails the test,
// with its output.
func TestDocsShellExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	examples := shellExamples(t, root)
	if len(examples) < 10 {
		t.Fatalf("found only %d shell examples under %s", len(examples), root)
	}
	bin := junctionBin(t)
	// Go's caches stay the machine's: a scratch HOME and XDG_CACHE_HOME
	// would make an example that builds download and compile everything.
	goEnv, err := exec.Command("go", "env", "GOPATH", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	var goVars []string
	for i, v := range strings.Split(strings.TrimSpace(string(goEnv)), "\n") {
		goVars = append(goVars, []string{"GOPATH", "GOMODCACHE", "GOCACHE"}[i]+"="+v)
	}
	ran := 0
	for _, ex := range examples {
		name := ex.file + ":" + strconv.Itoa(ex.line)
		if ex.notRun != "" {
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			home := filepath.Join(work, "home")
			dir := filepath.Join(work, "cwd")
			for _, d := range []string{home, filepath.Join(dir, "bin")} {
				if err := os.MkdirAll(d, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			// The repository's files, by link, so that examples find
			// examples/, docs/ and the Go module; what they write lands
			// in the scratch directory.
			entries, err := os.ReadDir(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() == ".git" || e.Name() == "bin" {
					continue
				}
				if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(bin, filepath.Join(dir, "bin", "junction")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", ex.script)
			cmd.Dir = dir
			cmd.Env = append(childEnv(work),
				"HOME="+home,
				"PATH="+filepath.Join(dir, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
				"GOPROXY=off", "GOFLAGS=-mod=readonly",
			)
			cmd.Env = append(cmd.Env, goVars...)
			cmd.Stdin = strings.NewReader("")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			cmd.WaitDelay = 5 * time.Second
			if err := cmd.Run(); err != nil {
				t.Errorf("the example at %s failed: %v\n--- script\n%s\n--- output\n%s\nFix the example, or mark it with <!-- not run: REASON --> on the line before its fence if it cannot run offline.", name, err, ex.script, out.String())
			}
		})
	}
	t.Logf("%d of %d shell examples run; the others are marked not run, each with its reason", ran, len(examples))
}
