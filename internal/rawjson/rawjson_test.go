package rawjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func members(t testing.TB, b []byte) ([][2]string, int) {
	var got [][2]string
	end := Object(b, func(k, v []byte) { got = append(got, [2]string{string(k), string(v)}) })
	return got, end
}

func TestObject(t *testing.T) {
	in := ` { "a" : 1 , "b\"c":"x\\"  ,"d":{"e":[1,"]}",{}]},"f":null, "g":[] }  trailing`
	got, end := members(t, []byte(in))
	want := [][2]string{{"a", "1"}, {`b\"c`, `"x\\"`}, {"d", `{"e":[1,"]}",{}]}`}, {"f", "null"}, {"g", "[]"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	if in[end:] != "  trailing" {
		t.Errorf("end %d leaves %q", end, in[end:])
	}
	for _, bad := range []string{``, `[]`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{a:1}`, `{"a":"x}`, `{"a":[1,2}`} {
		if _, end := members(t, []byte(bad)); end >= 0 {
			t.Errorf("Object(%q) = %d, want -1", bad, end)
		}
	}
	if _, end := members(t, []byte(`{}`)); end != 2 {
		t.Errorf("Object({}) = %d", end)
	}
}

func TestEachElement(t *testing.T) {
	var got []string
	if !EachElement([]byte(` [1, "a,b" ,{"c":[2]}, [] ] `), func(v []byte) { got = append(got, string(v)) }) {
		t.Fatal("EachElement failed")
	}
	if diff := cmp.Diff([]string{"1", `"a,b"`, `{"c":[2]}`, "[]"}, got); diff != "" {
		t.Errorf("elements (-want +got):\n%s", diff)
	}
	for _, bad := range []string{``, `{}`, `[1,`, `[1 2]`, `["a]`} {
		if EachElement([]byte(bad), func([]byte) {}) {
			t.Errorf("EachElement(%q) = true", bad)
		}
	}
}

// FuzzObject: on any valid JSON object, Object finds exactly the members
// encoding/json finds, with the same values, and never panics on
// anything else.
func FuzzObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"\"}","b":[{"c":"]"}]}`, `{"x":{"y":{"z":null}}, "w": -1.5e3}`, `{"a\\":true}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, end := members(t, b)
		var want map[string]json.RawMessage
		if json.Unmarshal(b, &want) != nil || bytes.TrimSpace(b)[0] != '{' {
			return // invalid JSON: any answer but a panic will do
		}
		if end < 0 {
			t.Fatalf("Object(%q) = -1 on a valid object", b)
		}
		if len(bytes.TrimSpace(b[end:])) != 0 {
			t.Fatalf("Object(%q) ended at %d, before the end", b, end)
		}
		// Compare as encoding/json would keep them (the last of duplicate
		// keys wins), with keys unescaped.
		seen := map[string]json.RawMessage{}
		for _, m := range got {
			var k string
			if err := json.Unmarshal([]byte(`"`+m[0]+`"`), &k); err != nil {
				t.Fatalf("key %q: %v", m[0], err)
			}
			seen[k] = json.RawMessage(m[1])
		}
		if len(seen) != len(want) {
			t.Fatalf("Object(%q) found %d members, encoding/json %d", b, len(seen), len(want))
		}
		for k, v := range want {
			if g, ok := seen[k]; !ok || !bytes.Equal(bytes.TrimSpace(g), bytes.TrimSpace(v)) {
				t.Fatalf("member %q: %q, want %q", k, g, v)
			}
		}
	})
}

// FuzzFixText: FixText's output is clean, decodes (as a JSON string) to
// what encoding/json decodes the input to, and leaves clean text alone.
func FuzzFixText(f *testing.F) {
	for _, s := range []string{`"a\ud800b"`, `"\udc00"`, `"\ud83d\ude00"`, "\"\xff\xfe\"", `"\\ud800"`, `"plain"`, `"\ud800\u0041"`, `"x\u00e9\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := FixText(b)
		if !CleanText(out) {
			t.Fatalf("FixText(%q) = %q is not clean", b, out)
		}
		if CleanText(b) && !bytes.Equal(out, b) {
			t.Fatalf("FixText changed clean text %q to %q", b, out)
		}
		var want, got string
		if json.Unmarshal(b, &want) != nil {
			return
		}
		if err := json.Unmarshal(out, &got); err != nil || got != want {
			t.Fatalf("FixText(%q) = %q decodes to %q (%v); encoding/json decodes the input to %q", b, out, got, err, want)
		}
	})
}

// FuzzTextCut: a text fixed in two pieces, cut where TextCut says a
// prefix of it may be cut, comes out as FixText fixes it whole.
func FuzzTextCut(f *testing.F) {
	for _, s := range []string{
		`plain`, `a\"b\\c`, `\ud83d\ude00`, `\ud800x`, `\udc00`, `\u00e9`, "\xff\xe2\x82€😀", `\\\\\u`, "\\\xe2\x82\xac",
	} {
		f.Add([]byte(s), uint(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, b []byte, m uint) {
		prefix := b[:int(m%uint(len(b)+1))]
		k := TextCut(prefix, false)
		if k > len(prefix) || k < 0 {
			t.Fatalf("TextCut(%q) = %d", prefix, k)
		}
		got := append(append([]byte(nil), FixText(b[:k])...), FixText(b[k:])...)
		if want := FixText(b); !bytes.Equal(got, want) {
			t.Fatalf("cut at %d of %q: %q, want %q", k, b, got, want)
		}
	})
}

func TestMember(t *testing.T) {
	for _, tc := range []struct {
		in, key, want string
		ok            bool
	}{
		{`{"id":7,"method":"x"}`, "id", `7`, true},
		{`{"a":{"id":1},"id":"s"}`, "id", `"s"`, true}, // top level only
		{`{"id":1,"id":2}`, "id", `1`, true},           // the first
		{`{"method":"x"}`, "id", ``, false},
		{`[1]`, "id", ``, false},
		{`{"id":`, "id", ``, false},
	} {
		s, e, ok := Member([]byte(tc.in), tc.key)
		got := ""
		if ok {
			got = tc.in[s:e]
		}
		if ok != tc.ok || got != tc.want {
			t.Errorf("Member(%s, %q) = %q, %v; want %q, %v", tc.in, tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDeeper(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want bool
	}{
		{`{}`, 1, false},
		{`{}`, 0, true},
		{`{"a":[{"b":1}]}`, 3, false},
		{`{"a":[{"b":1}]}`, 2, true},
		{`{"a":"[[[[{{{{"}`, 1, false}, // brackets in a string
		{`{"a":"\"[[[["}`, 1, false},   // after an escaped quote
		{`{"a":"open`, 5, true},        // a string left open
		{`[[],[],[]]`, 2, false},       // siblings do not add up
		{`1`, 0, false},
	} {
		if got := Deeper([]byte(c.in), c.n); got != c.want {
			t.Errorf("Deeper(%s, %d) = %v, want %v", c.in, c.n, got, c.want)
		}
	}
}

// FuzzString: String decodes a JSON string as encoding/json does, and
// refuses what it refuses or what is not a string; what PlainString
// takes decodes to its contents, and Plain agrees with it.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"abc"`, `""`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", `"a`, `1`, `null`, `"tab	"`, `"<&>"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		wantErr := len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &want) != nil
		got, ok := String(b)
		if ok == wantErr || ok && got != want {
			t.Fatalf("String(%q) = %q, %v; encoding/json %q, error %v", b, got, ok, want, wantErr)
		}
		if p, ok := PlainString(b); ok && (wantErr || string(p) != want || !Plain(string(p))) {
			t.Fatalf("PlainString(%q) = %q; encoding/json %q, error %v", b, p, want, wantErr)
		}
	})
}

// skipStringByByte is SkipString one byte at a time: what it must say.
func skipStringByByte(b []byte, start int) int {
	for i := start; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// FuzzSkipString: SkipString finds the closing quote a byte-by-byte scan
// finds, wherever the string starts, escapes and all.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`abc"`, `a\"b"`, `\\"`, `\\\"x"`, strings.Repeat(`x`, 70) + `\"` + `"`, strings.Repeat(`\\`, 40) + `"`, "\\", `abcdefg\`, strings.Repeat("é", 40) + `"`} {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, start int) {
		if start < 0 || start > len(b) {
			return
		}
		if got, want := SkipString(b, start), skipStringByByte(b, start); got != want {
			t.Fatalf("SkipString(%q, %d) = %d, want %d", b, start, got, want)
		}
	})
}

func TestContains(t *testing.T) {
	for _, tc := range []struct {
		b, s string
		want bool
	}{
		{`{"method":"tools/call"}`, `"tools/call"`, true},
		{`{"method":"tools/call"}`, `"tools/list"`, false},
		{`{"x":"mytools/call"}`, `"tools/call"`, false},
		{`{"x":"mytools/call","method":"tools/call"}`, `"tools/call"`, true},
		{`tools/call"`, `"tools/call"`, false}, // the rest at the very start: no quote before it
		{`"tools/call`, `"tools/call"`, false},
		{`""`, `""`, true},
		{`"`, `""`, false},
		{``, `"a`, false},
		{`abc`, `b`, true}, // no quote first: bytes.Contains
		{`abc`, ``, true},
	} {
		if got := Contains([]byte(tc.b), []byte(tc.s)); got != tc.want {
			t.Errorf("Contains(%q, %q) = %v, want %v", tc.b, tc.s, got, tc.want)
		}
	}
}

// FuzzContains checks Contains against bytes.Contains.
func FuzzContains(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`), []byte(`"tools/call"`))
	f.Add([]byte(`"a"a"`), []byte(`"a"`))
	f.Add([]byte(`x"jr-1`), []byte(`"jr-`))
	f.Fuzz(func(t *testing.T, b, s []byte) {
		if got, want := Contains(b, s), bytes.Contains(b, s); got != want {
			t.Fatalf("Contains(%q, %q) = %v, bytes.Contains says %v", b, s, got, want)
		}
	})
}

// BenchmarkContains compares Contains with bytes.Contains on a host's
// tools/call line, for a word it holds and one it does not.
func BenchmarkContains(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo__echo","arguments":{"msg":"hello, hub"}}}`)
	for _, tc := range []struct {
		name string
		f    func(b, s []byte) bool
	}{{"rawjson", Contains}, {"bytes", bytes.Contains}} {
		for _, word := range []string{`"tools/call"`, `"isError"`} {
			b.Run(tc.name+"/"+word[1:len(word)-1], func(b *testing.B) {
				s := []byte(word)
				for b.Loop() {
					tc.f(line, s)
				}
			})
		}
	}
}

// TestSkipValueLiteral: a literal or number ends at a delimiter, and at a
// quote or an opening bracket, which none holds, so that a walk of an
// object agrees with a match of its brackets on text that is not JSON.
func TestSkipValueLiteral(t *testing.T) {
	for _, tc := range []struct {
		b    string
		want int
	}{
		{`12,`, 2}, {`true}`, 4}, {`null ]`, 4}, {`-1.5e3`, 6},
		{`0"}`, 1}, {`true{}`, 4}, {`1[2]`, 1}, {`"`, -1}, {``, -1},
	} {
		if got := SkipValue([]byte(tc.b), 0); got != tc.want {
			t.Errorf("SkipValue(%q) = %d, want %d", tc.b, got, tc.want)
		}
	}
	// The walk and the match of brackets now end alike (they did not).
	b := []byte(`{"0000000":0"}`)
	if w, s := WalkObject(b, 0, func(_ []byte, v int) int { return SkipValue(b, v) }), SkipValue(b, 0); w != s {
		t.Errorf("WalkObject(%q) = %d, SkipValue = %d", b, w, s)
	}
}

// FuzzCleanText checks CleanText's one pass against its definition: valid
// UTF-8 and no lone surrogate escape, each checked over the whole text.
func FuzzCleanText(f *testing.F) {
	for _, s := range []string{`"plain ascii text, longer than eight"`, `"a\ud800b"`, "\"0123456\xff\"", `"01234567\\ud83d\\ude00"`, "\"\u00e9t\u00e9\"", `"\\ud800\ud800"`, ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := CleanText(b), utf8.Valid(b) && !hasLoneSurrogate(b); got != want {
			t.Fatalf("CleanText(%q) = %v, want %v", b, got, want)
		}
	})
}

// BenchmarkCleanText: the text of a small call's arguments and result,
// and a long plain one.
func BenchmarkCleanText(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"args", `{"msg":"hello, hub"}`},
		{"result", `{"content":[{"type":"text","text":"hello, hub"}]}`},
		{"4KiB", `{"text":"` + strings.Repeat("plain text ", 372) + `"}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			text := []byte(tc.text)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				CleanText(text)
			}
		})
	}
}

// FuzzAppendString: what AppendString writes is a JSON string that
// decodes to the text it was given (valid UTF-8; other bytes become
// U+FFFD, as encoding/json writes them).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"info", "", `q"uote`, `back\slash`, "new\nline", "ünïcode", "\x7f", "<html>", "a\xffb", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString([]byte("x"), s)
		var got string
		if err := json.Unmarshal(b[1:], &got); err != nil || b[0] != 'x' {
			t.Fatalf("AppendString(%q) = %s: %v", s, b, err)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("AppendString(%q) decodes to %q", s, got)
		}
		// Whatever s, the text written is clean: a forwarded call's
		// params count on it for the tool's name (wire.HostRequest's
		// Clean).
		if !CleanText(b) {
			t.Fatalf("AppendString(%q) = %q, not clean text", s, b)
		}
	})
}

// BenchmarkSkipString: the strings of a forwarded call's lines, keys and
// short values mostly.
func BenchmarkSkipString(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"jr-12","result":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxx"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echoserver","version":"1"}}}}`)
	var starts []int
	for i := 0; i < len(line); i++ {
		if line[i] == '"' {
			starts = append(starts, i+1)
			i = SkipString(line, i+1)
		}
	}
	for b.Loop() {
		for _, s := range starts {
			SkipString(line, s)
		}
	}
}

// BenchmarkWalkObject: a tools/call answer's envelope and its result's
// members, as the reader of an answer line walks them.
func BenchmarkWalkObject(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"jr-12","result":{"content":[{"type":"text","text":"xxxxxxxxxxxxxxxx"}],"isError":false}}`)
	var walk func(v int) int
	walk = func(v int) int {
		if line[v] == '{' {
			return WalkObject(line, v, func(_ []byte, v int) int { return walk(v) })
		}
		return SkipValue(line, v)
	}
	for b.Loop() {
		if walk(0) != len(line) {
			b.Fatal("walk did not end at the line's end")
		}
	}
}

// TestTrimSpace: JSON's white space goes, Unicode's other spaces stay.
func TestTrimSpace(t *testing.T) {
	for in, want := range map[string]string{
		"":               "",
		" \t\r\n":        "",
		" {} \r":         "{}",
		"\r\n[1, 2]\t":   "[1, 2]",
		"{}\f":           "{}\f",
		"\v{}":           "\v{}",
		"{}\u0085":       "{}\u0085",
		"\u00a0{}\u00a0": "\u00a0{}\u00a0",
		" \"a b\" ":      "\"a b\"",
	} {
		if got := string(TrimSpace([]byte(in))); got != want {
			t.Errorf("TrimSpace(%q) = %q, want %q", in, got, want)
		}
	}
}
