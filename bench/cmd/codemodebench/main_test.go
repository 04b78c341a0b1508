package main

import (
	"strings"
	"testing"
)

func TestUsesNamespace(t *testing.T) {
	for _, c := range []struct {
		script, ns string
		want       bool
	}{
		{`await files.read_text_file({})`, "files", true},
		{`await tools["everything__get-sum"]({})`, "everything", true},
		{`const echo = 1; return echo`, "echo", false},
		{`r[0].text; x.echo.y()`, "echo", false},
		{`await echo.echo({msg: "a"})`, "echo", true},
	} {
		if got := usesNamespace(c.script, c.ns); got != c.want {
			t.Errorf("usesNamespace(%q, %q) = %v", c.script, c.ns, got)
		}
	}
}

func TestToolsOf(t *testing.T) {
	s := &signer{
		byExpr: map[string]string{"files.read_text_file": "files__read_text_file", "everything.get_sum": "everything__get-sum"},
		sig:    map[string]string{"files__read_text_file": "files.read_text_file(...)", "everything__get-sum": "everything.get_sum(...)"},
	}
	got, err := s.toolsOf(`const a = await files.read_text_file({path: "x.files.y"}); const f = files.read_text_file;
return [a.content, await tools["everything__get-sum"]({a: 1, b: 2}), await everything.get_sum({a: 1, b: 2})]`)
	if err != nil || strings.Join(got, ",") != "everything__get-sum,files__read_text_file" {
		t.Errorf("toolsOf = %q, %v", got, err)
	}
	if _, err := s.toolsOf(`await files.write_file({})`); err == nil {
		t.Error("toolsOf of an unknown function: no error")
	}
	if _, err := s.toolsOf(`return 1`); err == nil {
		t.Error("toolsOf of a script calling no tool: no error")
	}
}

func TestSameJSON(t *testing.T) {
	same, err := sameJSON([]byte(`{"b":[1,2],"a":1.0}`), []byte(`{"a":1,"b":[1,2]}`))
	if err != nil || !same {
		t.Errorf("same = %v, %v", same, err)
	}
	if same, _ := sameJSON([]byte(`[1,2]`), []byte(`[2,1]`)); same {
		t.Error("order of a list ignored")
	}
}

func TestParsers(t *testing.T) {
	if n, err := sumOf("The sum of 3 and 14 is 17."); err != nil || n != 17 {
		t.Errorf("sumOf = %v, %v", n, err)
	}
	if got := listedFiles("[DIR] a\n[FILE] b.txt\n\n[FILE] c.md"); strings.Join(got, ",") != "b.txt,c.md" {
		t.Errorf("listedFiles = %q", got)
	}
}

func TestTasks(t *testing.T) {
	if len(tasks) < 15 {
		t.Errorf("%d tasks, want at least 15", len(tasks))
	}
	seen := map[string]bool{}
	for _, tk := range tasks {
		if seen[tk.name] {
			t.Errorf("task %s twice", tk.name)
		}
		seen[tk.name] = true
		used := false
		for _, ns := range namespaces {
			used = used || usesNamespace(tk.script, ns)
		}
		if !used || tk.direct == nil || tk.what == "" {
			t.Errorf("task %s: incomplete (namespace used: %v)", tk.name, used)
		}
	}
	if n := len(seedFiles()); n != 40 {
		t.Errorf("%d seeded files, want 40", n)
	}
}
