package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

var validCases = []string{
	``, ` `, `1`, ` 1 `, `01`, `-0`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1E-7`, `-12.5e+3`, `1x`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `"`, `""`, `"a`, `"\"`, `"\\"`, `"\u12"`, `"\u12g4"`,
	`"\uD800"`, "\"\xff\"", "\"\x1f\"", "\"\x7f\"", `"\x"`, `"\/\b\f\n\r\t"`,
	`{}`, `{ }`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{"a":1,"a":2}`, `{1:2}`, `{"a":1}}`,
	`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[1,[2,{"x":[]}]]`, `[1]]`, `[[`, `]`, `}`, `[}`, `{]`,
	`{"a":[1,{"b":null}],"c":"d"} `, "\t{\n\"a\" : \r1 }\n", `1 2`, `"a" "b"`,
}

// TestValid: Valid agrees with encoding/json.Valid on hand-picked cases,
// and at the nesting limit.
func TestValid(t *testing.T) {
	for _, s := range validCases {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
	for _, n := range []int{63, 64, 65, MaxDepth, MaxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
			if got, want := Valid(s), json.Valid(s); got != want {
				t.Errorf("Valid of %d times %q = %v, encoding/json says %v", n, open, got, want)
			}
		}
	}
}

// TestValidAllocates: a value nested 64 deep or less is checked without
// allocating.
func TestValidAllocates(t *testing.T) {
	b := []byte(strings.Repeat("[", 64) + strings.Repeat("]", 64))
	if n := testing.AllocsPerRun(100, func() { Valid(b) }); n != 0 {
		t.Errorf("Valid allocates %v times", n)
	}
}

// FuzzValid: Valid says what encoding/json.Valid says, on anything.
func FuzzValid(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

// FuzzValidValue: what ValidValue takes for a value is one that
// encoding/json finds valid, and it takes a value exactly where Valid
// takes the whole text.
func FuzzValidValue(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
		f.Add([]byte(s + `,"x":1}`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end := ValidValue(b, 0)
		if end >= 0 && !json.Valid(b[:end]) {
			t.Fatalf("ValidValue(%q) = %d, but encoding/json refuses %q", b, end, b[:end])
		}
		if whole := end >= 0 && SkipSpace(b, end) == len(b); whole != Valid(b) {
			t.Fatalf("ValidValue(%q) = %d, Valid = %v", b, end, Valid(b))
		}
		// ValidPlainValue takes the same value; plain only if it is ASCII
		// without a backslash (so CleanText), and plain whenever all of
		// b is.
		pend, plain := ValidPlainValue(b, 0)
		if pend != end {
			t.Fatalf("ValidPlainValue(%q) ends at %d, ValidValue at %d", b, pend, end)
		}
		if end < 0 {
			return
		}
		asciiNoEscape := func(b []byte) bool {
			return bytes.IndexByte(b, '\\') < 0 && bytes.IndexFunc(b, func(r rune) bool { return r >= utf8.RuneSelf }) < 0
		}
		if plain && !asciiNoEscape(b[:end]) || !plain && asciiNoEscape(b) {
			t.Fatalf("ValidPlainValue(%q): plain %v, the value %q", b, plain, b[:end])
		}
		if plain && !CleanText(b[:end]) {
			t.Fatalf("ValidPlainValue(%q): plain, but not CleanText", b)
		}
	})
}

func TestValidPlainValue(t *testing.T) {
	for _, c := range []struct {
		in    string
		plain bool
	}{
		{`{"msg":"hello","n":[1,2.5e3,true,null]}`, true},
		{`"plain"`, true},
		{`12`, true},
		{`{"msg":"caf\u00e9"}`, false}, // an escape
		{`{"msg":"a\"b"}`, false},      // an escaped quote
		{"{\"msg\":\"café\"}", false},  // UTF-8 in a long string's words
		{"{\"é\":1}", false},           // in a key, read a byte at a time near the end
		{"\"ab\"é12345", false},        // past the string, in the word read with it
		{`{"a":{"b":["c","d",{"e":"fghijklmnopqrstuvwxyz"}]}}`, true},
	} {
		end, plain := ValidPlainValue([]byte(c.in), 0)
		if end < 0 || plain != c.plain {
			t.Errorf("ValidPlainValue(%s) = %d, %v; want plain %v", c.in, end, plain, c.plain)
		}
	}
}

// A request's _meta as a 2026-07-28 host sends it with every call.
var benchMeta = []byte(`{"progressToken":17,"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"mcpload","version":"1.0.0"},` +
	`"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}},` +
	`"io.modelcontextprotocol/logLevel":"info"}`)

func BenchmarkValid(b *testing.B) {
	b.Run("rawjson", func(b *testing.B) {
		b.SetBytes(int64(len(benchMeta)))
		for b.Loop() {
			Valid(benchMeta)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchMeta)))
		for b.Loop() {
			json.Valid(benchMeta)
		}
	})
}

// BenchmarkValidValue: the arguments of a forwarded call, which the data
// plane checks as it reads them.
func BenchmarkValidValue(b *testing.B) {
	args := []byte(`{"msg":"xxxxxxxxxxxxxxxx","path":"/home/user/project/src/main.go","limit":20}`)
	for b.Loop() {
		ValidValue(args, 0)
	}
}
