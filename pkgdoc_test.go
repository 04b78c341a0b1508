package junction_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasDoc fails when a package in the module has no package
// doc comment: each package's doc is where its reader starts.
func TestEveryPackageHasDoc(t *testing.T) {
	dirs := map[string]bool{} // dir -> has a package doc
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dirs[dir] = dirs[dir] || (f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d packages; is the test running at the module root?", len(dirs))
	}
	for dir, ok := range dirs {
		if !ok {
			t.Errorf("package in %s has no package doc comment", dir)
		}
	}
}
