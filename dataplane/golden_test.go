package dataplane

import (
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/txtar"
)

// update makes goldenWant record what the plane answers instead of
// checking it: go test ./dataplane -run '^TestName$' -update.
var update = flag.Bool("update", false, "rewrite the expected answers in testdata/*.txtar from what the plane answers")

// goldenMu keeps goldenWant's reads and writes of testdata apart.
var goldenMu sync.Mutex

// goldenWant returns the expected text of section in
// testdata/TEST.txtar, TEST being the name of t's top-level test. The
// files were first written from the plane's answers while the tests
// still compared them with go-sdk's server's, which they equalled: a
// change to one is a change from what go-sdk answers
// (docs/deviations.md lists those the plane makes). With -update it
// writes got as the section's text instead (and a newline, which it
// does not return), and returns got.
func goldenWant(t *testing.T, section, got string) string {
	t.Helper()
	section = strings.TrimSpace(section) // as txtar reads it back
	test, _, _ := strings.Cut(t.Name(), "/")
	path := filepath.Join("testdata", test+".txtar")
	goldenMu.Lock()
	defer goldenMu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil && !(*update && errors.Is(err, fs.ErrNotExist)) {
		t.Fatalf("%v; write it with: go test ./dataplane -run '^%s$' -update", err, test)
	}
	ar := txtar.Parse(data)
	if *update {
		if len(ar.Comment) == 0 {
			ar.Comment = []byte("The answers " + test + " expects of the plane, first\n" +
				"recorded when the test compared them with go-sdk's server's, and\n" +
				"equal to them (docs/deviations.md says where the plane differs).\n" +
				"Rewritten from what the plane answers by:\n" +
				"go test ./dataplane -run '^" + test + "$' -update\n")
		}
		for line := range strings.Lines(got) {
			if l := strings.TrimSuffix(line, "\n"); strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") {
				t.Fatalf("section %q: the line %q would read back as a section of its own", section, l)
			}
		}
		text := []byte(got + "\n")
		i := 0
		for i < len(ar.Files) && ar.Files[i].Name != section {
			i++
		}
		if i == len(ar.Files) {
			ar.Files = append(ar.Files, txtar.File{Name: section})
		}
		ar.Files[i].Data = text
		if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, f := range ar.Files {
		if f.Name == section {
			return strings.TrimSuffix(string(f.Data), "\n")
		}
	}
	t.Fatalf("%s has no section %q; write it with: go test ./dataplane -run '^%s$' -update", path, section, test)
	return ""
}

// sortedJSON is m as JSON with its members sorted: two messages decoded
// into maps are equal when their sortedJSON are.
func sortedJSON(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
