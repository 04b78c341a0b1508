package buildinfo

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseSnapshot checks what `goreleaser release --snapshot` left in
// JUNCTION_DIST (scripts/release --snapshot sets it to dist/ and runs this
// test right after goreleaser; scripts/test runs that): every archive, the
// checksums, the stamped version, the SBOMs, the Homebrew formula and the
// scoop manifest.
func TestReleaseSnapshot(t *testing.T) {
	dist := os.Getenv("JUNCTION_DIST")
	if dist == "" {
		t.Skip("JUNCTION_DIST not set: scripts/release --snapshot runs this test on the dist/ it builds")
	}

	var meta struct {
		ProjectName string `json:"project_name"`
		Version     string `json:"version"`
	}
	readJSON(t, filepath.Join(dist, "metadata.json"), &meta)
	if meta.ProjectName != "junction" || meta.Version == "" {
		t.Fatalf("metadata.json: project %q version %q", meta.ProjectName, meta.Version)
	}
	if !strings.Contains(meta.Version, "snapshot") {
		t.Errorf("version %q is not a snapshot version", meta.Version)
	}
	version := "v" + meta.Version // what -ldflags stamps (.goreleaser.yaml)

	// checksums.txt: one line per file, each matching the file.
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums.txt: bad line %q", sc.Text())
		}
		sums[name] = sum
	}
	f.Close()
	for name, want := range sums {
		data, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Errorf("checksums.txt names %s: %v", name, err)
			continue
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != want {
			t.Errorf("%s: sha256 %x, checksums.txt says %s", name, got, want)
		}
	}

	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			base := "junction_" + meta.Version + "_" + goos + "_" + goarch
			archive, bin := base+".tar.gz", "junction"
			if goos == "windows" {
				archive, bin = base+".zip", "junction.exe"
			}
			if _, ok := sums[archive]; !ok {
				t.Errorf("%s: not in checksums.txt", archive)
			}
			files := readArchive(t, filepath.Join(dist, archive))
			for _, want := range []string{bin, "README.md", "LICENSE"} {
				if _, ok := files[want]; !ok {
					t.Errorf("%s: no %s in it (has %v)", archive, want, keys(files))
				}
			}
			if exe := files[bin]; len(exe) > 0 && !bytes.Contains(exe, []byte(version)) {
				t.Errorf("%s: %s does not carry the version %s", archive, bin, version)
			}
			if goos == runtime.GOOS && goarch == runtime.GOARCH && len(files[bin]) > 0 {
				exe := filepath.Join(t.TempDir(), bin)
				if err := os.WriteFile(exe, files[bin], 0o755); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(exe, "version").CombinedOutput()
				if err != nil {
					t.Errorf("%s version: %v\n%s", archive, err, out)
				} else if !strings.HasPrefix(string(out), "junction "+version+" (built ") {
					t.Errorf("%s version printed %q, want junction %s (built …)", archive, out, version)
				}
			}

			// The SBOM: CycloneDX, naming the module the binary was built from.
			var bom struct {
				BOMFormat string `json:"bomFormat"`
				Metadata  struct {
					Component struct {
						Name    string `json:"name"`
						Version string `json:"version"`
					} `json:"component"`
				} `json:"metadata"`
				Components []struct {
					Name string `json:"name"`
				} `json:"components"`
			}
			readJSON(t, filepath.Join(dist, base+".cdx.json"), &bom)
			if bom.BOMFormat != "CycloneDX" || bom.Metadata.Component.Name != "github.com/junction-mcp/junction" {
				t.Errorf("%s.cdx.json: format %q, component %q", base, bom.BOMFormat, bom.Metadata.Component.Name)
			}
			if !hasComponent(bom.Components, "github.com/modelcontextprotocol/go-sdk") {
				t.Errorf("%s.cdx.json: go-sdk is not among its %d components", base, len(bom.Components))
			}
		}
	}

	// The Homebrew formula: a download and its checksum per macOS and
	// Linux archive.
	formula := readFound(t, dist, "junction.rb")
	for _, want := range []string{"class Junction < Formula", `version "` + meta.Version + `"`, `license "Apache-2.0"`} {
		if !strings.Contains(formula, want) {
			t.Errorf("junction.rb lacks %q:\n%s", want, formula)
		}
	}
	for _, p := range []string{"darwin_amd64", "darwin_arm64", "linux_amd64", "linux_arm64"} {
		archive := "junction_" + meta.Version + "_" + p + ".tar.gz"
		if !strings.Contains(formula, archive) || !strings.Contains(formula, sums[archive]) {
			t.Errorf("junction.rb: no URL or sha256 for %s", archive)
		}
	}

	// The scoop manifest: both Windows archives with their checksums.
	var scoop struct {
		Version      string `json:"version"`
		License      string `json:"license"`
		Architecture map[string]struct {
			URL  string `json:"url"`
			Hash string `json:"hash"`
		} `json:"architecture"`
	}
	if err := json.Unmarshal([]byte(readFound(t, dist, "junction.json")), &scoop); err != nil {
		t.Fatalf("scoop manifest: %v", err)
	}
	if scoop.Version != meta.Version || scoop.License != "Apache-2.0" {
		t.Errorf("scoop manifest: version %q license %q", scoop.Version, scoop.License)
	}
	for arch, goarch := range map[string]string{"64bit": "amd64", "arm64": "arm64"} {
		archive := "junction_" + meta.Version + "_windows_" + goarch + ".zip"
		a := scoop.Architecture[arch]
		if !strings.HasSuffix(a.URL, "/"+archive) || a.Hash != sums[archive] {
			t.Errorf("scoop manifest %s: url %q hash %q, want …/%s and %s", arch, a.URL, a.Hash, archive, sums[archive])
		}
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readFound returns the file named name anywhere under dir (goreleaser puts
// the formula and the manifest in folders of their own).
func readFound(t *testing.T, dir, name string) string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one %s under %s, found %v", name, dir, found)
	}
	data, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// readArchive returns the regular files of a .tar.gz or .zip by name.
func readArchive(t *testing.T, path string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Errorf("%v", err)
			return files
		}
		defer zr.Close()
		for _, f := range zr.File {
			if f.FileInfo().IsDir() {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.Name, err)
			}
			files[f.Name] = data
		}
		return files
	}
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("%v", err)
		return files
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		files[h.Name] = data
	}
	return files
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func hasComponent(cs []struct {
	Name string `json:"name"`
}, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}
