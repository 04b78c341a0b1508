package wire

import (
	"strings"
	"testing"
)

// BenchmarkUnknownTypes checks a 1 MiB text result for content blocks of
// unknown types: one IndexByte pass over the text.
func BenchmarkUnknownTypes(b *testing.B) {
	res := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}],"isError":false}`)
	b.SetBytes(int64(len(res)))
	for b.Loop() {
		if unknownTypes(res) {
			b.Fatal("unknownTypes = true for a text block")
		}
	}
}

func TestUnknownTypesQuick(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  string
		want bool
	}{
		{`{"content":[{"type":"text","text":"a \"quoted\" [text] {x}"}],"isError":false}`, false},
		{` { "content" : [ { "TYPE" : "image" , "data" : "" } , {"type":"resource_link","uri":"x"} ] } `, false},
		{`{"content":[],"structuredContent":{"content":[{"type":"widget"}]}}`, false},
		{`{"isError":true}`, false},
		{`{"content":[{"type":"widget"}]}`, true},
		{`{"content":[{"text":"no type"}]}`, true},
		{`{"content":[{"type":"te\u0078t"}]}`, true},
		{`{"content":[1]}`, true},
		{`{"content":{"type":"text"}}`, true},
		{`{"con\u0074ent":[]}`, true},
		{`{"content":[{"type":"text"}`, true},
		{`[]`, true},
	} {
		if got := unknownTypes([]byte(tc.res)); got != tc.want {
			t.Errorf("unknownTypes(%s) = %v, want %v", tc.res, got, tc.want)
		}
	}
}
