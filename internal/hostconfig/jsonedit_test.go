package hostconfig

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestSetMemberKeepsBytes pins setMember's edits where the layout around
// the member is unusual: only the member changes.
func TestSetMemberKeepsBytes(t *testing.T) {
	t.Parallel()
	val := []byte(`{"command": "x"}`)
	for _, tt := range []struct{ in, key, want string }{
		{"{\n  \"a\": 1\n}\n", "b", "{\n  \"a\": 1,\n  \"b\": {\n    \"command\": \"x\"\n  }\n}\n"},
		{"{\n  \"a\": 1,\n}\n", "b", "{\n  \"a\": 1,\n  \"b\": {\n    \"command\": \"x\"\n  },\n}\n"},
		{"{\n  \"a\": 1 // one\n}", "b", "{\n  \"a\": 1,\n  \"b\": {\n    \"command\": \"x\"\n  } // one\n}"},
		{"{\n  \"a\": 1, // one\n}", "a", "{\n  \"a\": {\n    \"command\": \"x\"\n  }, // one\n}"},
		{`{"a": 1, "a": 2}`, "a", "{\"a\": 1, \"a\": {\n  \"command\": \"x\"\n}}"}, // the last one, which readers take
		{"\xef\xbb\xbf{}", "b", "\xef\xbb\xbf{\n  \"b\": {\n    \"command\": \"x\"\n  }\n}"},
		// A comment in an empty object stays (the reader before hujson
		// dropped it).
		{"{\n\t\"s\": { /* none yet */ }\n}", "b", "{\n\t\"s\": { /* none yet */\n\t\t\"b\": {\n\t\t\t\"command\": \"x\"\n\t\t}\n\t}\n}"},
		{"{\r\n  \"s\": {\r\n    \"a\": 1\r\n  }\r\n}\r\n", "b", "{\r\n  \"s\": {\r\n    \"a\": 1,\n    \"b\": {\n      \"command\": \"x\"\n    }\r\n  }\r\n}\r\n"},
	} {
		root, err := parseJSONC([]byte(tt.in))
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		obj := root
		if s := root.get("s"); s != nil {
			obj = s
		}
		got, err := setMember(obj, tt.key, val)
		if err != nil || string(got) != tt.want {
			t.Errorf("setMember(%q, %q):\n%q, %v\nwant\n%q", tt.in, tt.key, got, err, tt.want)
		}
	}
}

func TestRemoveMemberKeepsBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		i    int
		want string
	}{
		{"{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}", 1, "{\n  \"a\": 1,\n  \"c\": 3\n}"},
		{"{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}", 2, "{\n  \"a\": 1,\n  \"b\": 2\n}"},
		{"{\n  \"a\": 1,\n  \"b\": 2,\n}", 1, "{\n  \"a\": 1\n}"},
		{`{"a": 1, "b": 2, "c": 3}`, 0, `{"b": 2, "c": 3}`},
		{"{\n  \"a\": 1\n}", 0, "{\n\n}"},
		{"{\"a\": 1 /* c */ ,}", 0, "{ /* c */ }"},
		{"{\n  // about b\n  \"a\": 1, \"b\": 2 // two\n}", 1, "{\n  // about b\n  \"a\": 1 // two\n}"},
	} {
		root, err := parseJSONC([]byte(tt.in))
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		if got := string(removeMember(root, tt.i)); got != tt.want {
			t.Errorf("removeMember(%q, %d) =\n%q\nwant\n%q", tt.in, tt.i, got, tt.want)
		}
	}
}

func TestParseJSONCErrors(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                       "line 1: the file is empty",
		"// nothing\n":           "line 1: the file is empty",
		"{\"a\": [1,\n  2\n":     "line 3: expected ',' or ']' after a list item, found end of file",
		"{\"a\": 1}\n}":          "line 2: unexpected character '}' after the top-level value",
		strings.Repeat("[", 1e6): "line 1: document nested more than 200 levels deep",
	} {
		if _, err := parseJSONC([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("parseJSONC(%.40q) = %v, want %s", in, err, want)
		}
	}
}

// FuzzEdit: on any file that parses, setting, adding and removing a
// member of any object gives a file that parses, where that member alone
// changed and no byte outside the object did; a value replaced by itself
// gives the file back.
func FuzzEdit(f *testing.F) {
	for _, s := range []string{
		claudeDesktop, claudeJSON, "// my servers\n{\n\t\"servers\": {\n\t\t// the everything server\n\t\t\"everything\": {\"type\": \"stdio\"},\n\t},\n\t\"inputs\": [],\n}\n",
		`{"a": 1 , "b": {} ,}`, "{\"a\": 1 /*c*/ ,\n}", "{\n  \"a\": {}, // x\n  \"b\": { /* none */ }\n}", "{}", "\xef\xbb\xbf{\"a\": {\n}}\n",
		"{\n  // first\n  \"a\": 1,\n  // second\n  \"b\": 2\n}\n", "{\"x\": {\"y\": 1, \"z\": [1,2,],},} // end",
	} {
		f.Add([]byte(s))
	}
	val := []byte(`{"command": "x", "args": ["a", "b"], "env": {}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := parseJSONC(data)
		if err != nil {
			return
		}
		if got := replaceValue(root, root); !bytes.Equal(got, data) {
			t.Fatalf("%q: replaced by itself: %q", data, got)
		}
		objs := []*jvalue{root}
		for k := 0; k < len(objs) && k < 20; k++ {
			obj := objs[k]
			if obj.kind != '{' {
				continue
			}
			for _, m := range obj.members {
				objs = append(objs, m.val)
			}
			if k := keys(obj); len(slices.Compact(slices.Sorted(slices.Values(k)))) < len(k) {
				continue // a duplicate key (TestSetMemberKeepsBytes)
			}
			for _, key := range append([]string{"new <&>"}, keys(obj)...) {
				after, err := setMember(obj, key, val)
				if err != nil {
					t.Fatalf("%q: set %q: %v", data, key, err)
				}
				want := append(keys(obj), key)
				if obj.index(key) >= 0 {
					want = keys(obj)
				}
				checkEdit(t, data, obj, after, want, key, val)
			}
			for i := range obj.members {
				after := removeMember(obj, i)
				checkEdit(t, data, obj, after, slices.Delete(keys(obj), i, i+1), "", nil)
			}
		}
	})
}

func keys(obj *jvalue) []string {
	var k []string
	for _, m := range obj.members {
		k = append(k, m.key)
	}
	return k
}

// checkEdit checks an edit of obj in data: after parses; the object's
// keys are want; set's value is val (unless nil), the other members are
// as they were; no byte outside the object changed.
func checkEdit(t *testing.T, data []byte, obj *jvalue, after []byte, want []string, set string, val []byte) {
	t.Helper()
	root, err := parseJSONC(after)
	if err != nil {
		t.Fatalf("%q: the edit gives %q, which does not parse: %v", data, after, err)
	}
	n := root
	for _, i := range obj.path {
		n = n.members[i].val
	}
	if got := keys(n); !slices.Equal(got, want) {
		t.Fatalf("%q: the edit gives %q, keys %q, want %q", data, after, got, want)
	}
	for _, m := range n.members {
		if val != nil && m.key == set {
			if !json.Valid(m.val.strict()) || !bytes.Equal(m.val.strict(), compactJSON(val)) {
				t.Fatalf("%q: the edit gives %q: %q is %s", data, after, set, m.val.strict())
			}
		} else if old := obj.get(m.key); old != nil && !bytes.Equal(m.val.strict(), old.strict()) {
			t.Fatalf("%q: the edit gives %q: %q changed", data, after, m.key)
		}
	}
	if !bytes.Equal(after[:obj.start], data[:obj.start]) || !bytes.Equal(after[n.end:], data[obj.end:]) {
		t.Fatalf("%q: the edit gives %q: bytes outside the object changed", data, after)
	}
}
