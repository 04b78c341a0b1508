package junction_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/junction-mcp/junction"

// imports returns the imports of the non-test Go files in dir.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[p] = true
		}
	}
	return out
}

// TestDependencyDirection keeps the layering of docs/design.md: the core
// package imports only the standard library and go-sdk (with the two
// libraries go-sdk itself builds on), never the data plane, a source or
// the daemon; the host front (dataplane) imports the core and wire and
// nothing else of ours, and wire the core alone (sources use wire, never
// the host front); packs never import each other;
// and the command line reaches packs, upstreams, plugins and the data
// plane only through the daemon (its tests may import them).
func TestDependencyDirection(t *testing.T) {
	allowed := []string{
		module + "/internal/rawjson/",        // a leaf: the standard library only (checked below)
		module + "/internal/toolsearch/",     // a leaf: the standard library only (checked below)
		module + "/internal/embed/",          // a leaf: the standard library only (checked below)
		module + "/internal/codemode/tsgen/", // a leaf: the standard library only (checked below)
		"github.com/modelcontextprotocol/go-sdk/",
		"github.com/google/jsonschema-go/",
		"github.com/yosida95/uritemplate/",
	}
	for p := range imports(t, ".") {
		if p == "os" || p == "io/fs" || p == "path/filepath" {
			t.Errorf("package junction imports %s; the core never reads or writes files (the daemon and internal/config do)", p)
		}
		if !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			continue // standard library
		}
		ok := false
		for _, a := range allowed {
			ok = ok || strings.HasPrefix(p+"/", a)
		}
		if !ok {
			t.Errorf("package junction imports %s; the core may import only the standard library and go-sdk", p)
		}
	}
	for p := range imports(t, "dataplane") {
		if strings.HasPrefix(p, module+"/") && p != module && p != module+"/wire" && p != module+"/internal/rawjson" && p != module+"/internal/seal" {
			t.Errorf("package dataplane (the host front) imports %s; it may import only the core (%s), wire, internal/rawjson and internal/seal of ours", p, module)
		}
	}
	for p := range imports(t, "wire") {
		if strings.HasPrefix(p, module+"/") && p != module && p != module+"/internal/rawjson" {
			t.Errorf("package wire imports %s; it may import only the core (%s) and internal/rawjson of ours", p, module)
		}
	}
	for p := range imports(t, "upstream") {
		if p == module+"/dataplane" {
			t.Errorf("package upstream imports the host front (dataplane); what it shares with it (LineReader, Writer, Rewrite, ...) is in package wire")
		}
	}
	for p := range imports(t, "internal/seal") {
		if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			t.Errorf("internal/seal imports %s; it may import only the standard library", p)
		}
	}
	for _, leaf := range []string{"internal/rawjson", "internal/toolsearch", "internal/embed", "internal/codemode/tsgen", "internal/atomicfile", "internal/commalist"} {
		for p := range imports(t, leaf) {
			if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
				t.Errorf("%s imports %s; it may import only the standard library", leaf, p)
			}
		}
	}
	for p := range imports(t, "internal/cli") {
		for _, banned := range []string{"/internal/pack", "/upstream", "/toolbox", "/dataplane"} {
			if p == module+banned || strings.HasPrefix(p, module+banned+"/") {
				t.Errorf("internal/cli imports %s; the command line reaches packs, upstreams, plugins and the data plane through internal/daemon (add what it needs there)", p)
			}
		}
	}
	packs, err := os.ReadDir("internal/pack")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range packs {
		if !p.IsDir() {
			continue
		}
		for im := range imports(t, filepath.Join("internal/pack", p.Name())) {
			if strings.HasPrefix(im, module+"/internal/pack/") || strings.HasPrefix(im, module+"/internal/daemon") || strings.HasPrefix(im, module+"/internal/cli") {
				t.Errorf("pack %s imports %s; packs must not import other packs, the daemon or the CLI", p.Name(), im)
			}
		}
	}
}

// TestOneServerLoop keeps go-sdk's server out of what serves hosts: the
// data plane answers every host request, so neither the core, nor the
// host front, nor the daemon makes a go-sdk server or runs one of
// go-sdk's server transports (sources and tests may: an upstream's
// fake, say).
func TestOneServerLoop(t *testing.T) {
	banned := []string{"mcp.NewServer(", "mcp.NewStreamableHTTPHandler(", "mcp.NewSSEHandler(", ".Server().Connect("}
	for _, dir := range []string{".", "dataplane", "wire", "internal/daemon", "internal/cli"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range banned {
				if strings.Contains(string(b), s) {
					t.Errorf("%s calls %s: a second server loop beside the data plane's (docs/design.md, \"A view has no go-sdk server\")", f, strings.TrimSuffix(s, "("))
				}
			}
		}
	}
}

// TestWireIsALibrary keeps package wire a library of bytes that the host
// path (dataplane) and the server path (upstream) call at their edges:
// it starts no goroutine, so a connection, which needs a reader of its
// own, lives in one of the layers (docs/design.md, "The path of one
// call, package by package").
func TestWireIsALibrary(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("wire", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if g, ok := n.(*ast.GoStmt); ok {
				t.Errorf("%s: package wire starts a goroutine; a connection and its reader belong to the host path (dataplane) or the server path (upstream)", fset.Position(g.Pos()))
			}
			return true
		})
	}
}
