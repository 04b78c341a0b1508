package config

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// toAny turns a node into the value encoding/json would produce.
func toAny(n *node) any {
	switch n.kind {
	case nullNode:
		return nil
	case mapNode:
		m := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			m[e.key] = toAny(e.val)
		}
		return m
	case seqNode:
		s := make([]any, len(n.items))
		for i, it := range n.items {
			s[i] = toAny(it)
		}
		return s
	}
	switch n.tag {
	case "bool":
		return n.value == "true"
	case "int", "float":
		f, _ := strconv.ParseFloat(n.value, 64)
		return f
	}
	return n.value
}

// FuzzJSONAgrees checks the hand-written JSON reader against
// encoding/json: every document encoding/json accepts (without duplicate
// keys) reads to the same value.
func FuzzJSONAgrees(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a": [1, 2.5, -3e2, true, false, null, "x\n\u00e9"]}`, `"s"`, `0`, `{"a": {"b": {}}}`} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile("testdata/claude_desktop_config.json"); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want any
		if err := json.Unmarshal(data, &want); err != nil {
			return
		}
		n, err := parseJSON(data)
		if err != nil {
			if strings.Contains(err.Error(), "appears twice") || strings.Contains(err.Error(), "nested more than") ||
				strings.Contains(err.Error(), "too large") {
				return
			}
			t.Fatalf("parseJSON(%q) = %v; encoding/json accepts it", data, err)
		}
		if diff := cmp.Diff(want, toAny(n)); diff != "" {
			t.Fatalf("parseJSON(%q) mismatch (-encoding/json +ours):\n%s", data, diff)
		}
	})
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	n, err := parseJSON([]byte("{\n  // c\n  \"a\": {\n    /* x\n y */ \"b\": [\n 1,\n ],\n  },\n}"))
	if err != nil {
		t.Fatal(err)
	}
	a := n.entries[0]
	b := a.val.entries[0]
	if a.line != 3 || b.line != 5 || b.val.items[0].line != 6 {
		t.Errorf("lines a=%d b=%d item=%d, want 3, 5, 6", a.line, b.line, b.val.items[0].line)
	}
}

// TestDocsListEveryKey fails when a key the decoder accepts is missing from
// docs/config.md.
func TestDocsListEveryKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatalf("docs/config.md: %v", err)
	}
	var keys []string
	for _, list := range [][]string{topKeys, serverKeys, pluginKeys, packKeys, profileKeys, httpKeys} {
		keys = append(keys, list...)
	}
	for k := range serverAliases {
		keys = append(keys, k)
	}
	for k := range hostServerKeys {
		keys = append(keys, k)
	}
	for k := range hostTopKeys {
		keys = append(keys, k)
	}
	for _, k := range keys {
		if !regexp.MustCompile("`" + regexp.QuoteMeta(k) + "`").Match(doc) {
			t.Errorf("docs/config.md does not mention `%s`", k)
		}
	}
}
