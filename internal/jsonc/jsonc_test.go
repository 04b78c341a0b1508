package jsonc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tailscale/hujson"
)

var lim = Limits{Depth: 100, Values: 1000}

// TestPackKeepsBytes: a parsed file packs to its bytes, and so does a
// copy, whatever its byte order mark, trailing commas, comments and line
// ends.
func TestPackKeepsBytes(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{}`, "{}\n", " [1, 2,]\n", "\xef\xbb\xbf{\"a\": 1}\n", "{\"a\": 1} // the end",
		"// my servers\n{\n\t\"servers\": {\n\t\t// x\n\t\t\"e\": {\"args\": [\"-y\",],},\n\t},\n\t\"inputs\": [],\n}\n",
		"{\r\n  \"a\": /* c */ 1 ,\r\n}\r\n", `"s"`, "null", "1 /* c */",
	} {
		d, err := Parse([]byte(in), lim)
		if err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if got := string(d.Pack()); got != in {
			t.Errorf("Parse(%q).Pack() = %q", in, got)
		}
		if got := string(d.Clone().Pack()); got != in {
			t.Errorf("Parse(%q).Clone().Pack() = %q", in, got)
		}
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", " \n", "// nothing", "/* */\n", "\xef\xbb\xbf"} {
		d, err := Parse([]byte(in), lim)
		if err != nil || !d.Empty {
			t.Errorf("Parse(%q) = %+v, %v; want Empty", in, d, err)
		}
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	d, err := Parse([]byte("\xef\xbb\xbf{\n  // c\n  \"a\": {\n    /* x\n y */ \"b\": [\n 1,\n ],\n  },\n}"), lim)
	if err != nil {
		t.Fatal(err)
	}
	a := d.Value.Value.(*hujson.Object).Members[0]
	b := a.Value.Value.(*hujson.Object).Members[0]
	one := b.Value.Value.(*hujson.Array).Elements[0]
	if got := []int{d.Line(a.Name.StartOffset), d.Line(b.Name.StartOffset), d.Line(one.StartOffset), d.Line(d.Value.EndOffset)}; !cmp.Equal(got, []int{3, 5, 6, 9}) {
		t.Errorf("lines %v, want [3 5 6 9]", got)
	}
}

// TestErrors pins the message and line of each way a file can be wrong.
func TestErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"{\n  \"servers\": {\n    \"a\": {\"command\": \"x\"\n  }\n", "line 5: expected ',' or '}' after an object member, found end of file"},
		{"{'servers': {}}", `line 1: expected a double-quoted key, found character '\''`},
		{"{} {}", `line 1: unexpected character '{' after the top-level value`},
		{`{"a": 1.2.3}`, `line 1: bad number "1.2.3"`},
		{`{"a": tru}`, `line 1: bad value "tru"`},
		{"{\n/* oops\n}", "line 2: unterminated /* comment"},
		{"{\n\"a\"\n}", `line 3: expected ':' after key "a", found character '}'`},
		{"{\"a\\u00e9\"", `line 1: expected ':' after key "aé", found end of file`},
		{"[1 2]", `line 1: expected ',' or ']' after a list item, found character '2'`},
		{"[1,", `line 1: unexpected end of file`},
		{"{\"a\": 1,", `line 1: expected a double-quoted key, found end of file`},
		{"{1: 2}", `line 1: expected a double-quoted key, found character '1'`},
		{"{a: 2}", `line 1: expected a double-quoted key, found character 'a'`},
		{"{\n{\"a\" 1", `line 2: expected a double-quoted key, found character '{'`},
		{"{\"a\": 1, [", `line 1: expected a double-quoted key, found character '['`},
		{"[}", `line 1: unexpected character '}'`},
		{"{\"a\": }", `line 1: unexpected character '}'`},
		{"{\"a\":\n \"x\ny\"}", `line 2: line break inside a string`},
		{"{\"a\":\n \"x", `line 2: unterminated string`},
		{"{\"a\":\n \"x\ny", `line 2: line break inside a string`},
		{`{"a": "\x"}`, `line 1: bad string "\x"`},
		{"{\"a\": 1 / 2}", `line 1: expected ',' or '}' after an object member, found character '/'`},
		{"{} // \xff\n", `line 1: invalid UTF-8 in a comment`},
		{"{} // \u2028\n", `line 1: unexpected character '\u2028' in a // comment`},
		{"\xef\xbb\xbf\n{,}", `line 2: expected a double-quoted key, found character ','`},
	} {
		_, err := Parse([]byte(tt.in), lim)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) = %v, want %s", tt.in, err, tt.want)
		}
		var e *Error
		if errors.As(err, &e) && (e.Offset < 0 || e.Offset > len(tt.in) || e.Limit) {
			t.Errorf("Parse(%q): bad Error %+v", tt.in, e)
		}
	}
}

// TestLimits: hostile nesting is refused before hujson, which recurses
// without a bound, reads it; a syntax error before the limit is reported
// first.
func TestLimits(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000)
	if _, err := Parse([]byte(deep), lim); err == nil || err.Error() != "line 1: document nested more than 100 levels deep" {
		t.Errorf("deep: %v", err)
	}
	deepObj := strings.Repeat("{\"a\":\n", 1_000_000)
	var e *Error
	if _, err := Parse([]byte(deepObj), lim); !errors.As(err, &e) || !e.Limit || e.Line != 102 {
		t.Errorf("deep objects: %v", err)
	}
	ok := strings.Repeat("[", 101) + strings.Repeat("]", 101)
	if _, err := Parse([]byte(ok), lim); err != nil {
		t.Errorf("101 levels (values at depth 100): %v", err)
	}
	if _, err := Parse([]byte("[\n'x', "+deep), lim); err == nil || err.Error() != `line 2: unexpected character '\''` {
		t.Errorf("a syntax error before the limit: %v", err)
	}
	// Brackets inside strings and comments do not count.
	hidden := "[\"" + strings.Repeat("[", 500) + "\" /* " + strings.Repeat("{", 500) + " */]\n// " + strings.Repeat("[", 500)
	if _, err := Parse([]byte(hidden), lim); err != nil {
		t.Errorf("brackets in strings and comments: %v", err)
	}
	many := "[" + strings.Repeat("0,\n", 1000) + "0]"
	if _, err := Parse([]byte(many), lim); err == nil || err.Error() != "line 1000: document too large (more than 1000 values)" {
		t.Errorf("many values: %v", err)
	}
	if _, err := Parse([]byte(many), Limits{Depth: 1}); err != nil {
		t.Errorf("no values limit: %v", err)
	}
	keys := "{" + strings.Repeat("\"k\": {},\n", 499) + "\"k\": 0}"
	if _, err := Parse([]byte(keys), lim); err != nil {
		t.Errorf("keys counted as values: %v", err)
	}
}

// FuzzParse: Parse never panics or overflows the stack; a document it
// reads packs to the same bytes (a copy too), and encoding/json reads it
// as it reads hujson's standard form; an error has a line and an offset
// within the input.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a": [1, 2.5, -3e2, true, false, null, "x\n\u00e9"]}`, "// c\n{\"a\": 1,}\n", "\xef\xbb\xbf[1 /* x */,]",
		"{\"a\": 1} // end", "{'a': 1}", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
		"{\"a\"", "{\"a\": \"x", "/* x", "{,}", "[1,,]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data, Limits{Depth: 20, Values: 500})
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Line < 1 || e.Offset < 0 || e.Offset > len(data) || e.Msg == "" {
				t.Fatalf("Parse(%q) = %v (%#v)", data, err, err)
			}
			return
		}
		if d.Empty {
			return
		}
		if !bytes.Equal(d.Pack(), data) {
			t.Fatalf("Parse(%q).Pack() = %q", data, d.Pack())
		}
		if !bytes.Equal(d.Clone().Pack(), data) {
			t.Fatalf("Parse(%q).Clone().Pack() = %q", data, d.Clone().Pack())
		}
		std := d.Value.Clone()
		std.Standardize()
		if !json.Valid(std.Pack()) {
			t.Fatalf("Parse(%q): the standard form %q is not JSON", data, std.Pack())
		}
		var want, got any
		if json.Unmarshal(data[d.Base:], &want) == nil {
			if err := json.Unmarshal(std.Pack(), &got); err != nil {
				t.Fatalf("Parse(%q): the standard form %q does not unmarshal: %v", data, std.Pack(), err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("Parse(%q) (-encoding/json +standard form):\n%s", data, diff)
			}
		}
	})
}
