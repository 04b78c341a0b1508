package rawup

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+10`, `true`, `null`, ` {"a":[1,2,{"b":"\u00e9\n\"x\""}],"c":false} `,
	`{"content":[{"type":"text","text":"hello"}],"isError":false}`,
	``, ` `, `{`, `{"a"}`, `{"a":}`, `[1,]`, `[1 2]`, `01`, `-`, `1.`, `1e`, `"\x"`, `"\u12"`, "\"a\x01\"",
	`tru`, `nul`, `{"a":1}}`, `{"a":1,}`, `"abc`, `[`, strings.Repeat("[", 2000) + strings.Repeat("]", 2000),
}

func TestValidJSON(t *testing.T) {
	for _, c := range validCases {
		want := json.Valid([]byte(c))
		if len(c) > 1000 {
			want = false // deeper than maxDepth: refused on purpose
		}
		if got := validJSON([]byte(c)); got != want {
			t.Errorf("validJSON(%.40q) = %v, want %v", c, got, want)
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.Count(s, "[")+strings.Count(s, "{") > maxDepth {
			return
		}
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json.Valid = %v", s, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	doc := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}`)
	b.Run("validJSON", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			validJSON(doc)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			json.Valid(doc)
		}
	})
}
