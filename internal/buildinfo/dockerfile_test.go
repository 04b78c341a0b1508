package buildinfo

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// dockerInstruction is one instruction of a Dockerfile, its continuation
// lines joined.
type dockerInstruction struct {
	stage int // 0 for the first FROM's stage
	op    string
	args  string
}

func readDockerfile(t *testing.T, path string) []dockerInstruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dockerInstruction
	stage := -1
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if more, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(more + " ")
			continue
		}
		cur.WriteString(line)
		op, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		op = strings.ToUpper(op)
		if op == "FROM" {
			stage++
		}
		out = append(out, dockerInstruction{stage: stage, op: op, args: strings.TrimSpace(args)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDockerfileBuildsTheReleaseBinary checks the Dockerfile without a
// container engine (none runs on the machines the tests run on, and the
// base images' registries are out of their reach): its build command is
// run here as written, with the build arguments substituted, and must give
// a static binary that reports the stamped version; its flags are the
// release's (.goreleaser.yaml); its final stage runs that binary as a
// non-root user on a static base. What stays unchecked is only what the
// engine itself does: pulling the images and copying files between stages.
func TestDockerfileBuildsTheReleaseBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Dockerfile builds a linux binary")
	}
	if testing.Short() {
		t.Skip("builds junction")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ins := readDockerfile(t, filepath.Join(root, "Dockerfile"))

	var build string
	final := map[string]string{}
	last := 0
	for _, in := range ins {
		last = max(last, in.stage)
	}
	for _, in := range ins {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
		if in.stage == last {
			final[in.op] = in.args
		}
	}
	if build == "" {
		t.Fatal("Dockerfile: no RUN with go build")
	}

	// The release's build settings, each present in the Dockerfile's.
	rel, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w",
		"-X github.com/junction-mcp/junction/internal/buildinfo.version=",
		"-X github.com/junction-mcp/junction/internal/buildinfo.buildTime="} {
		if !strings.Contains(string(rel), want) {
			t.Errorf(".goreleaser.yaml no longer has %q: update this test with it", want)
		}
		if !strings.Contains(build, want) {
			t.Errorf("the Dockerfile's build lacks %q, which the release build has", want)
		}
	}

	// Run the build as the Dockerfile writes it.
	out := filepath.Join(t.TempDir(), "junction")
	const version = "v9.9.9-dockerfile-test"
	cmdline := strings.NewReplacer("${VERSION}", version, "${BUILD_TIME}", "2026-01-02T03:04:05Z", "/out/junction", out).Replace(build)
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build: %v\n%s\n%s", err, cmdline, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has an ELF interpreter: it is not static, and distroless/static has no C library")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	f.Close()
	v, err := exec.Command(out, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(v), version) {
		t.Errorf("junction version: %v: %q, want %s", err, v, version)
	}

	// The final stage: a static base, the binary, a numeric non-root user.
	if !strings.Contains(final["FROM"], "distroless/static") {
		t.Errorf("final stage FROM %q: want a distroless/static image", final["FROM"])
	}
	if m := regexp.MustCompile(`^(\d+)(:\d+)?$`).FindStringSubmatch(final["USER"]); m == nil || m[1] == "0" {
		t.Errorf("final stage USER %q: want a numeric non-root user", final["USER"])
	}
	if !strings.Contains(final["COPY"], "/out/junction") || !strings.Contains(final["ENTRYPOINT"], "junction") {
		t.Errorf("final stage copies %q and runs %q: want the built junction", final["COPY"], final["ENTRYPOINT"])
	}
}
