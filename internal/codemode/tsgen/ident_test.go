package tsgen

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

func TestIdent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"read_file", "read_file"},
		{"get-user", "get_user"},
		{"2fa.check", "_2fa_check"},
		{"Git (geropl)", "Git_geropl"},
		{"GitHub", "GitHub"},
		{"  spaced  out  ", "spaced_out"},
		{"a--b..c", "a_b_c"},
		{"a__b", "a__b"},
		{"_private", "_private"},
		{"trailing_", "trailing_"},
		{"$jq", "jq"},
		{"café-au-lait", "caf_au_lait"},
		{"读取文件", "tool"},
		{"search_文档", "search_"},
		{"", "tool"},
		{"---", "tool"},
		{"123", "_123"},
		{"delete", "delete_"},
		{"class", "class_"},
		{"await", "await_"},
		{"tools", "tools_"},
		{"console", "console_"},
		{"Object", "Object_"},
		{"Promise", "Promise_"},
		{"ToolError", "ToolError_"},
		{"string", "string_"},
		{"as", "as_"},
		{"type", "type"},
		{"get", "get"},
		{"of", "of"},
		{strings.Repeat("x", 100), strings.Repeat("x", MaxIdentLen)},
	} {
		if got := Ident(tc.in, "tool"); got != tc.want {
			t.Errorf("Ident(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

type nsFunc struct{ Name, Namespace, Func string }

func bindPairs(bs []Binding) []nsFunc {
	var out []nsFunc
	for _, b := range bs {
		out = append(out, nsFunc{b.Tool.Name, b.Namespace, b.Func})
	}
	return out
}

func TestBind(t *testing.T) {
	tools := []Tool{
		{Name: "fs__read_file", Server: "filesystem", LocalName: "read_file"},
		{Name: "fs__get-user", Server: "filesystem", LocalName: "get-user"},
		{Name: "fs__get_user", Server: "filesystem", LocalName: "get_user"},
		{Name: "fs__get user", Server: "filesystem", LocalName: "get user"},
		{Name: "fs__get_user_2", Server: "filesystem", LocalName: "get_user_2"},
		{Name: "fs__delete", Server: "filesystem", LocalName: "delete"},
		{Name: "fs__delete_", Server: "filesystem", LocalName: "delete_"},
		{Name: "git_status", Server: "Git (geropl)"},
		{Name: "git_log", Server: "Git geropl"},
		{Name: "status", Server: "Git_geropl"},
		{Name: "console.log", Server: "console"},
		{Name: "读取", Server: "文件"},
		{Name: "写入", Server: "文件"},
		{Name: "x", Server: ""},
	}
	want := []nsFunc{
		{"git_status", "Git_geropl_2", "git_status"}, // "Git (geropl)" < "Git geropl"
		{"git_log", "Git_geropl_3", "git_log"},
		{"status", "Git_geropl", "status"}, // exact name first
		{"console.log", "console_", "console_log"},
		{"fs__delete", "filesystem", "delete__2"},
		{"fs__delete_", "filesystem", "delete_"},     // the exact name wins
		{"fs__get user", "filesystem", "get_user_3"}, // "get user" < "get-user"; _2 is taken
		{"fs__get-user", "filesystem", "get_user_4"},
		{"fs__get_user", "filesystem", "get_user"},
		{"fs__get_user_2", "filesystem", "get_user_2"},
		{"fs__read_file", "filesystem", "read_file"},
		{"x", "server", "x"},
		{"写入", "server_2", "tool"}, // "" < "文件"
		{"读取", "server_2", "tool_2"},
	}
	got := bindPairs(Bind(tools))
	// Bind sorts by namespace then function.
	if !reflect.DeepEqual(got, sortedPairs(want)) {
		t.Errorf("Bind:\n got %v\nwant %v", got, sortedPairs(want))
	}
}

func sortedPairs(ps []nsFunc) []nsFunc {
	out := append([]nsFunc(nil), ps...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			a, b := out[i], out[j]
			if b.Namespace < a.Namespace || b.Namespace == a.Namespace && b.Func < a.Func {
				out[i], out[j] = b, a
			}
		}
	}
	return out
}

// TestBindUnique checks on the catalog's tools and on colliding names
// that identifiers are distinct and valid, and do not depend on order.
func TestBindUnique(t *testing.T) {
	tools := loadTools(t, "catalog.json")
	for i := range 30 {
		tools = append(tools,
			Tool{Name: fmt.Sprintf("n%d", i), Server: []string{"a-b", "a b", "a_b", "a.b"}[i%4], LocalName: []string{"x-y", "x y", "x_y", "x_y_2", "delete", "delete_", ""}[i%7]},
		)
	}
	first := Bind(tools)
	nsOf := map[string]string{}
	funcs := map[string]bool{}
	for _, b := range first {
		if !isIdentifierName(b.Namespace) || !isIdentifierName(b.Func) || reserved[b.Namespace] || reserved[b.Func] {
			t.Errorf("bad identifiers %s.%s", b.Namespace, b.Func)
		}
		if s, ok := nsOf[b.Namespace]; ok && s != b.Tool.Server {
			t.Errorf("namespace %s has servers %q and %q", b.Namespace, s, b.Tool.Server)
		}
		nsOf[b.Namespace] = b.Tool.Server
		if funcs[b.Expr()] {
			t.Errorf("%s bound twice", b.Expr())
		}
		funcs[b.Expr()] = true
	}
	rng := rand.New(rand.NewSource(1))
	for range 20 {
		shuffled := append([]Tool(nil), tools...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := Bind(shuffled); !reflect.DeepEqual(bindPairs(got), bindPairs(first)) {
			t.Fatalf("Bind depends on the order of its input")
		}
	}
}

// TestReservedParses declares a server and a tool named by each reserved
// word (mangled) and by contextual keywords that are left alone.
func TestReservedParses(t *testing.T) {
	var tools []Tool
	words := []string{"get", "set", "of", "as", "from", "async", "constructor", "accessor", "override", "out", "never_", "type"}
	for w := range reserved {
		words = append(words, w)
	}
	for _, w := range words {
		tools = append(tools, Tool{Name: w + "/" + w, Server: w, LocalName: w,
			InputSchema: []byte(`{"$defs":{"` + w + `":{"type":"string"}},"properties":{"` + w + `":{"$ref":"#/$defs/` + w + `"}}}`)})
	}
	checkTS(t, DeclarationFile(Bind(tools)))
}
