package junction

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var isErrorCases = []string{
	`{"content":[],"isError":true}`,
	`{ "isError" : true , "content":[]}`,
	`{"content":[{"type":"text","text":"\\\"isError\\\":true"}],"isError":false}`,
	`{"structuredContent":{"isError":true},"content":[]}`,
	`{"content":[{"type":"text","text":"a\\"}],"isError":true}`,
	`{"isError":"true"}`,
	`{"x":"isError","y":true}`,
	`{}`,
}

func TestResultIsError(t *testing.T) {
	for _, c := range isErrorCases {
		if got, want := resultIsError([]byte(c)), decodedIsError(t, c); got != want {
			t.Errorf("resultIsError(%s) = %v, want %v", c, got, want)
		}
	}
}

func decodedIsError(t testing.TB, s string) bool {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad case %s: %v", s, err)
	}
	return m["isError"] == true
}

func FuzzResultIsError(f *testing.F) {
	for _, c := range isErrorCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			resultIsError([]byte(s)) // must not panic on anything
			return
		}
		// Duplicate keys: encoding/json keeps the last, the scanner the
		// first. Escaped keys ("is\u0045rror") are compared as written.
		if strings.Count(s, "isError") > 1 || strings.Contains(s, `\u`) {
			return
		}
		if got, want := resultIsError([]byte(s)), m["isError"] == true; got != want {
			t.Fatalf("resultIsError(%s) = %v, decoded isError = %v", s, got, want)
		}
	})
}

// FuzzNamesTasks: NamesTasks says what bytes.Contains says.
func FuzzNamesTasks(f *testing.F) {
	for _, s := range []string{
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":"/tasks"}`,
		`io.modelcontextprotocol/task`, `/tasks`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := NamesTasks(b), bytes.Contains(b, []byte(TasksExtension)); got != want {
			t.Fatalf("NamesTasks(%q) = %v, bytes.Contains says %v", b, got, want)
		}
	})
}
